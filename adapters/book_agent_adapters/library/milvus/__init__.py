"""The `milvus` library backend: the library's lexical and vector channels in a Milvus server
(Standalone or Distributed; milvus-lite in the tests), behind the same ports and ranking as
the local backend (contracts/beyond-one-node.md, "Milvus").

    [library]
    backend = "milvus"

    [library.milvus]
    uri = "http://milvus.internal:19530"   # or BOOK_AGENT_MILVUS_URI, which wins
    token_env = "MILVUS_TOKEN"             # the variable holding the token (never the token)
    prefix = "book_agent"                  # collection names start with it: one library per prefix
    index_type = "FLAT"                    # the dense index (FLAT: exact; HNSW, IVF_FLAT, IVF_SQ8, ...)

pymilvus is an optional extra (`pip install 'book-agent[milvus]'`), imported on first use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryBackendSetting
from book_agent.ports.library import LibraryBackend
from book_agent.settings import milvus_uri, secret_from

OPTIONS: dict[str, type | tuple[type, ...]] = {"uri": str, "token_env": str, "db_name": str, "prefix": str, "timeout_s": (int, float),
           "min_vectors": int, "index_type": str, "nlist": int, "nprobe": int, "m": int, "ef_construction": int,
           "ef": int, "shards": int, "replicas": int, "lease_s": (int, float), "lease_wait_s": (int, float),
           "lease_settle_s": (int, float)}
PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_PREFIX = "book_agent"


def create_milvus(data_dir: Path, setting: LibraryBackendSetting) -> LibraryBackend:
    from book_agent_adapters.library.milvus.dense import DenseIndex
    from book_agent_adapters.library.milvus.engine import EngineSettings, MilvusEngine
    from book_agent_adapters.library.milvus.lease import LeaseSettings, WriterLease
    from book_agent_adapters.library.milvus.lexical import MilvusLibraryIndex
    from book_agent_adapters.library.milvus.vectors import MilvusLibraryVectors

    options = _checked(dict(setting.options))
    uri = milvus_uri() or str(options.get("uri") or "")
    if not uri:
        raise BookAgentError(
            "engine.not_configured", "the Milvus library backend has no server to use",
            remediation="set BOOK_AGENT_MILVUS_URI=http://HOST:19530 (or [library.milvus] uri in the data dir's "
                        "config.toml)")
    token_env = str(options.get("token_env") or "")
    engine = MilvusEngine(EngineSettings(uri=uri, token=secret_from(token_env) if token_env else "",
                                         db_name=str(options.get("db_name") or ""),
                                         timeout_s=float(options.get("timeout_s", 10.0)),
                                         shards=int(options.get("shards", 1)), replicas=int(options.get("replicas", 1))))
    prefix = str(options.get("prefix") or DEFAULT_PREFIX)
    dense = DenseIndex(**{k: options[k] for k in ("index_type", "nlist", "nprobe", "m", "ef_construction", "ef")
                          if k in options})
    lease = WriterLease(engine, prefix, LeaseSettings(**{name: float(options[key]) for key, name in (
        ("lease_s", "ttl_s"), ("lease_wait_s", "wait_s"), ("lease_settle_s", "settle_s")) if key in options}))
    vectors = MilvusLibraryVectors(engine, prefix, int(options.get("min_vectors", 1)), dense,
                                   lock_dir=Path(data_dir) / "library", lease=lease)
    lexical = MilvusLibraryIndex(engine, prefix, Path(data_dir) / "library" / "terms", lease)
    return LibraryBackend(setting.name, lexical, vectors)


def _checked(options: dict[str, Any]) -> dict[str, Any]:
    problems = [f"unknown option {k!r}" for k in sorted(set(options) - set(OPTIONS))]
    for key, kind in OPTIONS.items():
        if key in options and (not isinstance(options[key], kind) or isinstance(options[key], bool)):
            problems.append(f"{key} must be a {getattr(kind, '__name__', 'number')}")
    for key in ("min_vectors", "nlist", "nprobe", "m", "ef_construction", "ef", "shards", "replicas"):
        if isinstance(options.get(key), int) and options[key] < 1:
            problems.append(f"{key} must be >= 1")
    for key in ("timeout_s", "lease_s", "lease_wait_s", "lease_settle_s"):
        if isinstance(options.get(key), (int, float)) and not 0 < options[key] <= 3600:
            problems.append(f"{key} must be in (0, 3600]")
    from book_agent_adapters.library.milvus.lease import LeaseSettings

    settle, ttl = options.get("lease_settle_s", LeaseSettings.settle_s), options.get("lease_s", LeaseSettings.ttl_s)
    if isinstance(settle, (int, float)) and isinstance(ttl, (int, float)) and not settle < ttl / 3:
        # a claim waits settle_s before its first renewal is due (ttl_s / 3 later) and lapses at 2/3 of ttl_s
        problems.append("lease_settle_s must be below a third of lease_s")
    if isinstance(options.get("prefix"), str) and not PREFIX.fullmatch(options["prefix"]):
        problems.append("prefix must be letters, digits and _ (not starting with a digit), at most 64")
    if isinstance(options.get("token_env"), str) and not ENV_NAME.fullmatch(options["token_env"]):
        problems.append("token_env names an environment variable (letters, digits, _), never the token itself")
    if isinstance(options.get("index_type"), str):
        options["index_type"] = options["index_type"].upper()
    if problems:
        raise BookAgentError("config.invalid", "[library.milvus]: " + "; ".join(problems),
                             details={"problems": problems},
                             remediation="fix the [library.milvus] table of the data dir's config.toml "
                                         "(contracts/beyond-one-node.md, \"Milvus\")")
    return options
