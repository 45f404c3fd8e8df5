"""Rerankers: the `none`, `siliconflow` and `local` built-ins and custom plug-ins.

    create_reranker(config, runtime_dir) -> Reranker

`config` is the flat reranker dict or the book's full runtime-config dict (see config.py).
Providers are looked up by name in the `book_agent.rerankers` entry-point group (the
built-ins register there too); provider `custom` takes `factory`, a plug-in name or a
`module:callable` path. Plug-ins are checked when they load and guarded when they run.
`runtime_dir` is passed to factories for caches only: nothing here writes a book package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from book_agent.domain.errors import BookAgentError
from book_agent.ports import Reranker
from book_agent_adapters.rerankers import errors
from book_agent_adapters.rerankers.base import NoneReranker, ScoringReranker
from book_agent_adapters.rerankers.config import RerankConfig, parse_config

__all__ = ["RerankConfig", "ScoringReranker", "create_reranker", "list_rerankers", "parse_config"]


def create_reranker(config: Any, runtime_dir: Path | str | None = None) -> Reranker:
    from book_agent_adapters.rerankers import plugins
    from book_agent_adapters.rerankers.guard import CheckedReranker

    cfg = parse_config(config)
    if cfg.provider == "none":
        return NoneReranker()  # the hot default skips entry-point discovery
    target = cfg.provider
    if target == "custom":
        if not cfg.factory:
            raise errors.rerank_error(
                errors.CONFIG_INVALID, "provider `custom` needs `factory` ('module:callable' or a plug-in name)",
                errors.REMEDIATION_CONFIG,
            )
        target = cfg.factory
    factory, entry = plugins.load_factory(target, cfg.module_path)
    directory = Path(runtime_dir) if runtime_dir is not None else None
    try:
        product = factory(cfg.to_dict(), directory)
    except BookAgentError:
        raise
    except Exception as exc:
        raise errors.rerank_error(
            errors.PLUGIN_FAILED, f"reranker factory {target!r} raised {type(exc).__name__}: {exc}",
            errors.REMEDIATION_PLUGINS, provider=target,
        ) from exc
    plugins.check_product(product, target)
    if entry is not None and entry.builtin:
        return cast(Reranker, product)  # check_product held it to the port
    source = entry.source if entry is not None else f"factory {target}"
    return CheckedReranker(product, entry.name if entry else target, source, strict=cfg.strict,
                           module_path=plugins.module_folder(target) if entry is None else None)


def list_rerankers(load: bool = True) -> list[dict[str, Any]]:
    """Installed rerankers: name, source, dist, value, and whether the factory loads."""
    from book_agent_adapters.rerankers import plugins

    rows = []
    for _name, entry in sorted(plugins.discover().items()):
        row: dict[str, Any] = {
            "name": entry.name, "source": entry.source, "dist": entry.dist,
            "version": entry.version, "value": entry.value, "builtin": entry.builtin,
            "loadable": None, "error": None,
        }
        if entry.shadowed_by:
            row.update(loadable=False, error={"code": errors.PLUGIN_INVALID,
                       "message": f"{entry.dist} reuses the built-in name {entry.name!r}; ignored"})
        elif load:
            try:
                plugins.load_factory(entry.value)
                row["loadable"] = True
            except BookAgentError as exc:
                row.update(loadable=False, error=exc.to_dict())
        rows.append(row)
    return rows
