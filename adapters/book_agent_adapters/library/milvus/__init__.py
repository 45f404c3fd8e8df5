"""The `milvus` library backend: the library's lexical and vector channels in a Milvus server
(Standalone or Distributed; milvus-lite in the tests), behind the same ports and ranking as
the local backend (contracts/beyond-one-node.md, "Milvus").

    [library]
    backend = "milvus"

    [library.milvus]
    uri = "https://milvus.internal:19530"  # or BOOK_AGENT_MILVUS_URI, which wins
    token_env = "MILVUS_TOKEN"             # the variable holding the token (never the token);
                                           # else BOOK_AGENT_MILVUS_TOKEN
    user = "book_agent"                    # or BOOK_AGENT_MILVUS_USER; with password_env (else
    password_env = "MILVUS_PASSWORD"       # BOOK_AGENT_MILVUS_PASSWORD): user and password, no token
    ca_pem_path = "/etc/milvus/ca.pem"     # TLS: the CA that signed the server's certificate
    client_pem_path = "client.pem"         # mutual TLS: this client's certificate and key
    client_key_path = "client.key"
    server_name = "milvus.internal"        # the name the server's certificate bears
    prefix = "book_agent"                  # collection names start with it: one library per prefix
    index_type = "FLAT"                    # the dense index (FLAT: exact; HNSW, IVF_FLAT, IVF_SQ8, ...)
    read_consistency = "auto"              # or "strong" (every read; ~200 ms each on a real server)
    breaker_s = 30                         # a sick server is not asked for this long, then probed

pymilvus is an optional extra (`pip install 'book-agent[milvus]'`), imported on first use.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.library import LibraryBackendSetting
from book_agent.ports.library import LibraryBackend
from book_agent.settings import (
    ENV_MILVUS_PASSWORD,
    ENV_MILVUS_TOKEN,
    ENV_MILVUS_USER,
    milvus_uri,
    secret_from,
)

NUMBER = (int, float)
OPTIONS: dict[str, type | tuple[type, ...]] = {
    "uri": str, "token_env": str, "db_name": str, "prefix": str, "timeout_s": NUMBER, "min_vectors": int,
    "index_type": str, "nlist": int, "nprobe": int, "m": int, "ef_construction": int, "ef": int, "shards": int,
    "replicas": int, "lease_s": NUMBER, "lease_wait_s": NUMBER, "lease_settle_s": NUMBER, "user": str,
    "password_env": str, "ca_pem_path": str, "client_pem_path": str, "client_key_path": str, "server_name": str,
    "breaker_s": NUMBER, "read_consistency": str, "bounded_after_s": NUMBER, "partition_key": bool,
    "rebuild_backoff_s": NUMBER}
SECONDS = ("timeout_s", "lease_s", "lease_wait_s", "lease_settle_s", "breaker_s", "bounded_after_s", "rebuild_backoff_s")
ENV_TOKEN, ENV_USER, ENV_PASSWORD = ENV_MILVUS_TOKEN, ENV_MILVUS_USER, ENV_MILVUS_PASSWORD
PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_PREFIX = "book_agent"


def create_milvus(data_dir: Path, setting: LibraryBackendSetting) -> LibraryBackend:
    from book_agent_adapters.library.milvus.dense import DenseIndex
    from book_agent_adapters.library.milvus.engine import MilvusEngine
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
    engine = MilvusEngine(_engine_settings(uri, options))
    prefix = str(options.get("prefix") or DEFAULT_PREFIX)
    dense = DenseIndex(**{k: options[k] for k in ("index_type", "nlist", "nprobe", "m", "ef_construction", "ef")
                          if k in options})
    lease = WriterLease(engine, prefix, LeaseSettings(**{name: float(options[key]) for key, name in (
        ("lease_s", "ttl_s"), ("lease_wait_s", "wait_s"), ("lease_settle_s", "settle_s")) if key in options}))
    vectors = MilvusLibraryVectors(engine, prefix, int(options.get("min_vectors", 1)), dense,
                                   lock_dir=Path(data_dir) / "library", lease=lease)
    lexical = MilvusLibraryIndex(engine, prefix, Path(data_dir) / "library" / "terms", lease)
    backoff = float(options.get("rebuild_backoff_s", 60.0))
    lexical.refusals.backoff_s = vectors.refusals.backoff_s = backoff
    return LibraryBackend(setting.name, lexical, vectors, describe=lambda: _describe(engine, prefix, dense))


def _engine_settings(uri: str, options: dict[str, Any]) -> Any:
    """The engine's settings: where, how long, and the credentials, their values read from the
    environment now (never from config, never stored past the client's making)."""
    from book_agent_adapters.library.milvus.engine import EngineSettings

    token_env, password_env = str(options.get("token_env") or ""), str(options.get("password_env") or "")
    token = secret_from(token_env) if token_env else secret_from(ENV_TOKEN)
    user = str(options.get("user") or "") or secret_from(ENV_USER)
    password = secret_from(password_env) if password_env else secret_from(ENV_PASSWORD)
    return EngineSettings(
        uri=uri, token=token, db_name=str(options.get("db_name") or ""), timeout_s=float(options.get("timeout_s", 10.0)),
        shards=int(options.get("shards", 1)), replicas=int(options.get("replicas", 1)), user="" if token else user,
        password="" if token else password, breaker_s=float(options.get("breaker_s", 30.0)),
        read_consistency=str(options.get("read_consistency") or "auto"),
        bounded_after_s=float(options.get("bounded_after_s", 15.0)),
        partition_key=bool(options.get("partition_key", True)),
        **{k: str(options.get(k) or "") for k in ("ca_pem_path", "client_pem_path", "client_key_path", "server_name")})


def _describe(engine: Any, prefix: str, dense: Any) -> dict[str, Any]:
    """doctor's and status's view of the backend: the server (version, health), how it is read, the index."""
    settings = engine.settings
    server = engine.describe()
    partitioned = settings.partition_key and server.get("health") == "ok" and engine.partitioned()
    return {"backend": "milvus", "prefix": prefix, **server,
            "consistency": {"lease_and_pointer": "Strong",
                            "searches_and_terms": "Strong" if settings.read_consistency == "strong" else
                            f"Bounded once a generation is {settings.bounded_after_s:g} s old, Strong before"},
            "index": {"dense": dense.index_type, "build": dense.build_params(), "search": dense.search_params(0),
                      "exact_rescoring": not dense.exact_scores, "scalar": ["book_id", "member", "added"],
                      "partition_key": "book_id" if partitioned else None}}


def _checked(options: dict[str, Any]) -> dict[str, Any]:
    problems = [f"unknown option {k!r}" for k in sorted(set(options) - set(OPTIONS))]
    for key, kind in OPTIONS.items():
        if key in options and (not isinstance(options[key], kind) or (kind is not bool and isinstance(options[key], bool))):
            problems.append(f"{key} must be a {getattr(kind, '__name__', 'number')}")
    for key in ("min_vectors", "nlist", "nprobe", "m", "ef_construction", "ef", "shards", "replicas"):
        if isinstance(options.get(key), int) and options[key] < 1:
            problems.append(f"{key} must be >= 1")
    for key in SECONDS:
        if isinstance(options.get(key), (int, float)) and not 0 < options[key] <= 3600:
            problems.append(f"{key} must be in (0, 3600]")
    problems += _security_problems(options)
    if options.get("read_consistency", "auto") not in ("auto", "strong"):
        problems.append("read_consistency must be \"auto\" or \"strong\"")
    from book_agent_adapters.library.milvus.lease import LeaseSettings

    settle, ttl = options.get("lease_settle_s", LeaseSettings.settle_s), options.get("lease_s", LeaseSettings.ttl_s)
    if isinstance(settle, (int, float)) and isinstance(ttl, (int, float)) and not settle < ttl / 3:
        # a claim waits settle_s before its first renewal is due (ttl_s / 3 later) and lapses at 2/3 of ttl_s
        problems.append("lease_settle_s must be below a third of lease_s")
    if isinstance(options.get("prefix"), str) and not PREFIX.fullmatch(options["prefix"]):
        problems.append("prefix must be letters, digits and _ (not starting with a digit), at most 64")
    for key in ("token_env", "password_env"):
        if isinstance(options.get(key), str) and not ENV_NAME.fullmatch(options[key]):
            problems.append(f"{key} names an environment variable (letters, digits, _), never the secret itself")
    if isinstance(options.get("index_type"), str):
        options["index_type"] = options["index_type"].upper()
    if problems:
        raise BookAgentError("config.invalid", "[library.milvus]: " + "; ".join(problems),
                             details={"problems": problems},
                             remediation="fix the [library.milvus] table of the data dir's config.toml "
                                         "(contracts/beyond-one-node.md, \"Milvus\")")
    return options


def _security_problems(options: dict[str, Any]) -> list[str]:
    """TLS files that cannot be read, a client certificate without its key (or CA)."""
    problems = []
    for key in ("ca_pem_path", "client_pem_path", "client_key_path"):
        path = options.get(key)
        if isinstance(path, str) and path and not Path(path).expanduser().is_file():
            problems.append(f"{key} {path!r} is not a readable file")
        elif isinstance(path, str) and path:
            options[key] = str(Path(path).expanduser())
    if bool(options.get("client_pem_path")) != bool(options.get("client_key_path")):
        problems.append("client_pem_path and client_key_path go together (mutual TLS)")
    elif options.get("client_pem_path") and not options.get("ca_pem_path"):
        problems.append("mutual TLS (client_pem_path) needs ca_pem_path too")
    return problems
