"""Libraries whose data dir chooses the `milvus` backend (config.toml), for the fault and
end-to-end tests: the same books as tests/support/library_support.py's."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.support import milvus


def use_milvus(data: Path, uri: str, prefix: str | None = None, timeout_s: float = 20.0,
               lease_settle_s: float = 0.4, **extra: object) -> str:
    """Point the data dir's config at `uri` under a fresh prefix (returned). The short lease
    settle suits milvus-lite's loopback round trips; a real server's Strong reads need more."""
    prefix = prefix or milvus.new_prefix()
    options = "".join(f"{k} = {v!r}\n".replace("'", '"') for k, v in extra.items())
    (data / "config.toml").write_text(f'[library]\nbackend = "milvus"\n\n[library.milvus]\nuri = "{uri}"\n'
                                      f'prefix = "{prefix}"\ntimeout_s = {timeout_s}\n'
                                      f'lease_settle_s = {lease_settle_s}\n{options}')
    return prefix


@contextlib.contextmanager
def black_hole() -> Iterator[str]:
    """A loopback port that accepts connections and never answers (a server too slow to use)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(listener.accept()[0])
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for sock in held:
            sock.close()
        listener.close()


def closed_port_uri() -> str:
    """A loopback URI nothing listens on (the engine down at start)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"
