"""Run milvus-lite's server on a loopback TCP port until told to stop (the tests' and the
benchmark's Milvus). Runs in the milvus-lite venv (.venv-milvus: milvus-lite 2.5 imports
pkg_resources, so it needs setuptools < 81, which book-agent's own venv is not pinned to).

    .venv-milvus/bin/python tools/dev/milvus_lite_server.py DB_FILE 127.0.0.1:PORT

Prints `ready` once the server listens; stops it on SIGTERM or SIGINT, when stdin closes, and
when the process that started it dies, so a killed test run leaves no server behind.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

from milvus_lite.server import Server

READY_TIMEOUT_S = 60.0


def _listening(address: str) -> bool:
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def main() -> int:
    db_file, address = sys.argv[1], sys.argv[2]
    parent = os.getppid()
    server = Server(db_file, address=address)
    if not server.init() or not server.start():
        print("failed", flush=True)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _listening(address):
        if time.monotonic() > deadline or server._p is None or server._p.poll() is not None:
            print("failed", flush=True)
            server.stop()
            return 1
        time.sleep(0.1)
    print("ready", flush=True)
    while not stop.wait(0.5):
        if os.getppid() != parent or server._p is None or server._p.poll() is not None:
            break
    if server._p is not None and server._p.poll() is None:
        server._p.terminate()  # the TCP server does not watch the lock file Server.stop() releases
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
