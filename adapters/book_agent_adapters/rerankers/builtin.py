"""The built-in rerankers, registered in the `book_agent.rerankers` entry-point group like
any plug-in (see pyproject.toml). Each factory has the plug-in signature
`factory(config: dict, runtime_dir: Path) -> Reranker`; `client` lets tests inject an
httpx.Client (e.g. with httpx.MockTransport).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from book_agent_adapters.rerankers.base import NoneReranker
from book_agent_adapters.rerankers.config import parse_config

if TYPE_CHECKING:
    import httpx

    from book_agent_adapters.rerankers.remote import LocalHttpReranker, SiliconFlowReranker

# The fallback when entry-point metadata is missing (e.g. a source tree on sys.path).
BUILTINS = {
    "none": "book_agent_adapters.rerankers.builtin:create_none",
    "siliconflow": "book_agent_adapters.rerankers.builtin:create_siliconflow",
    "local": "book_agent_adapters.rerankers.builtin:create_local",
}


def create_none(config: Any = None, runtime_dir: Path | None = None) -> NoneReranker:
    return NoneReranker()


def create_siliconflow(
    config: Any, runtime_dir: Path | None = None, client: httpx.Client | None = None
) -> SiliconFlowReranker:
    from book_agent_adapters.rerankers.remote import SiliconFlowReranker

    return SiliconFlowReranker(parse_config(config), client=client)


def create_local(
    config: Any, runtime_dir: Path | None = None, client: httpx.Client | None = None
) -> LocalHttpReranker:
    from book_agent_adapters.rerankers.remote import LocalHttpReranker

    return LocalHttpReranker(parse_config(config), client=client)
