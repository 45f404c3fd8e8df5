"""The Milvus server the library backend's tests use, and fresh backends on it.

`session_server` yields $BOOK_AGENT_TEST_MILVUS_URI when it is set (any Milvus 2.5+), else
starts milvus-lite (tools/dev/milvus_test_server.py) for the session. Every backend a test makes
has its own collection prefix, so tests share one server without seeing each other's data;
the prefixes' collections are dropped when the session ends (an external server is left as
it was found).
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from book_agent.domain.library import LibraryBackendSetting
from book_agent.ports.library import LibraryBackend
from tests.support.parts import require_real_part

TOOLS = Path(__file__).resolve().parents[2] / "tools"
ENV_TEST_URI = "BOOK_AGENT_TEST_MILVUS_URI"
RUN = f"t{uuid.uuid4().hex[:8]}"  # this session's prefixes start with it
_prefixes = itertools.count()


def _server_module():
    import tools.dev.milvus_test_server as milvus_test_server
    return milvus_test_server


def session_server(factory: pytest.TempPathFactory) -> Iterator[str]:
    external = os.environ.get(ENV_TEST_URI, "").strip()
    if external:
        yield external
        _drop_run(external)
        return
    server = _server_module()
    require_real_part(server.python() is not None, "milvus-lite (.venv-milvus, `make install-milvus`)")
    with server.milvus_lite(factory.mktemp("milvus")) as uri:
        yield uri


def new_prefix() -> str:
    return f"{RUN}_{next(_prefixes)}"


def backend(uri: str, data_dir: Path, prefix: str | None = None, **options: object) -> LibraryBackend:
    """A milvus backend on `uri` with a prefix of its own (or `prefix`), as the factory makes it."""
    from book_agent_adapters.library.milvus import create_milvus

    # a short settle: a loopback server answers a claim's read and write in milliseconds
    setting = LibraryBackendSetting("milvus", "argument", {"uri": uri, "prefix": prefix or new_prefix(),
                                                            "timeout_s": 20.0, "lease_settle_s": 0.4, **options})
    return create_milvus(data_dir, setting)


def _drop_run(uri: str) -> None:
    """Drop what this session made on an external server."""
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri, timeout=10)
    try:
        for name in client.list_collections():
            if name.startswith(RUN + "_"):
                client.drop_collection(name)
    finally:
        client.close()
