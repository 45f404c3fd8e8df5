"""A milvus-lite server for the tests, the benchmark and the eval suite: started as a
subprocess on a free loopback port, from the milvus-lite venv `make install-milvus` makes
(.venv-milvus), stopped when the block ends.

    with milvus_lite(tmp_dir) as uri:      # "http://127.0.0.1:PORT"
        ...
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-milvus"
LAUNCHER = REPO / "tools" / "dev/milvus_lite_server.py"
START_TIMEOUT_S = 90.0
ATTEMPTS = 3  # a port taken between choosing it and the server binding it: try another


def python() -> Path | None:
    """The milvus-lite venv's interpreter, when milvus-lite is installed in it."""
    return venv_python(VENV, "milvus_lite")


def venv_python(venv: Path, module: str) -> Path | None:
    """`venv`'s interpreter, when `module` is installed in it (the Makefile makes these venvs)."""
    exe = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    if not exe.exists():
        return None
    found = subprocess.run([str(exe), "-c", f"import importlib.util as u; print(bool(u.find_spec({module!r})))"],
                           capture_output=True, text=True, check=False)
    return exe if found.stdout.strip() == "True" else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def milvus_lite(folder: Path, name: str = "milvus.db") -> Iterator[str]:
    """A running server's URI; the server (and its data in `folder`) is stopped at the end."""
    exe = python()
    if exe is None:
        raise RuntimeError(f"milvus-lite is not installed in {VENV} (run `make install-milvus`)")
    folder.mkdir(parents=True, exist_ok=True)
    last = ""
    for _ in range(ATTEMPTS):
        port = free_port()
        process = subprocess.Popen(
            [str(exe), str(LAUNCHER), str(folder / name), f"127.0.0.1:{port}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "PYTHONWARNINGS": "ignore"}, start_new_session=True)
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if line == "ready":
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                stop(process)
            return
        last = line
        stop(process)
    raise RuntimeError(f"milvus-lite did not start ({last or 'no output'})")


def stop(process: subprocess.Popen[str]) -> None:
    """Closing stdin asks the launcher to stop its server; SIGKILL if it does not within 10 s."""
    with contextlib.suppress(OSError):
        if process.stdin:
            process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, 9)
        process.wait(timeout=5)
    if process.stdout:
        process.stdout.close()


if __name__ == "__main__":  # a manual server: `python tools/dev/milvus_test_server.py DIR` until Ctrl-C
    with milvus_lite(Path(sys.argv[1] if len(sys.argv) > 1 else ".milvus")) as uri:
        print(uri, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
