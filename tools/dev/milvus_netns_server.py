"""A real Milvus 2.3.5 standalone server (the PyPI `milvus` wheel: the Go binary with embedded
etcd, no Docker) for the slow tier and the benchmarks, run inside a network namespace of its own.

The server binds every interface it has, so it runs only where the sole interface is a loopback:
`unshare -n` makes a namespace with just `lo` (brought up here), and nothing outside the
namespace can reach it. Clients outside reach it through a pair of byte forwarders: inside, a
Unix socket (a file in the run's folder, which both sides see) forwards to the server's
127.0.0.1 port; outside, a 127.0.0.1 port of the host's loopback forwards to that Unix socket.

    with milvus_server(tmp_dir) as server:        # server.uri: "http://127.0.0.1:PORT"
        server.freeze(); server.thaw()            # SIGSTOP / SIGCONT: a hung server, and its recovery

Every file the server writes (configuration, etcd, segments, logs) is under the folder given;
the home directory is never used. Needs root (a network namespace) and `make install-milvus-server`
(.venv-milvus-server); `available()` says whether both are there.

    .venv-milvus-server/bin/python tools/dev/milvus_netns_server.py inner FOLDER [--tls] [--auth]
    (run by `milvus_server` under `unshare -n`; prints `ready PID`, stops when stdin closes)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-milvus-server"
START_TIMEOUT_S = 240.0
SOCKET_NAME = "milvus.sock"
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def python() -> Path | None:
    """The server venv's interpreter, when the `milvus` wheel is installed in it (asked by the
    outer process only: the `inner` one, in the namespace, runs without the repo on its path)."""
    from tools.dev.milvus_test_server import venv_python

    return venv_python(VENV, "milvus")


def available() -> bool:
    """Whether a namespaced server can run here: the wheel, `unshare`, and root."""
    return python() is not None and shutil.which("unshare") is not None and os.geteuid() == 0


# -- both sides: a byte forwarder --------------------------------------------------------------
def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(65536):
            dst.sendall(data)
    for sock in (src, dst):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _forward(listener: socket.socket, connect: tuple[int, object], stop: threading.Event) -> None:
    """Accept on `listener`; each connection piped both ways to a new socket to `connect`."""
    family, address = connect
    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except (TimeoutError, OSError):
            continue
        upstream = socket.socket(family, socket.SOCK_STREAM)
        try:
            upstream.connect(address)  # type: ignore[arg-type]
        except OSError:
            client.close()
            upstream.close()
            continue
        threading.Thread(target=_pipe, args=(client, upstream), daemon=True).start()


def _pipe(client: socket.socket, upstream: socket.socket) -> None:
    """Both directions until either side closes; then both sockets closed."""
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


# -- inside the namespace ----------------------------------------------------------------------
def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def _only_loopback() -> bool:
    return [name for _, name in socket.if_nameindex()] == ["lo"]


def inner(folder: Path, tls: bool, auth: bool) -> int:
    from milvus import MilvusServer, MilvusServerConfig  # the server venv's

    if not _only_loopback():  # never run where the server would bind a real interface
        print("failed: not in a namespace with only lo", flush=True)
        return 1
    _loopback_up()
    config = MilvusServerConfig(data_dir=str(folder / "server"))
    options: dict[str, object] = {"authorization_enabled": auth}
    if tls:
        options.update(tls_mode=1, server_pem_path=str(folder / "tls" / "server.pem"),
                       server_key_path=str(folder / "tls" / "server.key"),
                       ca_pem_path=str(folder / "tls" / "ca.pem"))
    for key, value in options.items():
        config.set(key, value)
    server = MilvusServer(config, wait_for_started=True)
    server.start()
    port = server.listen_port
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / SOCKET_NAME))
    listener.listen(64)
    stop = threading.Event()
    threading.Thread(target=_forward, args=(listener, (socket.AF_INET, ("127.0.0.1", port)), stop),
                     daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    print(f"ready {server.server_proc.pid}", flush=True)
    parent = os.getppid()
    while not stop.wait(0.5):
        if os.getppid() != parent or server.server_proc is None or server.server_proc.poll() is not None:
            break
    with contextlib.suppress(OSError):  # a frozen server must be thawed to stop
        os.kill(server.server_proc.pid, signal.SIGCONT)
    server.server_proc.terminate()
    try:
        server.server_proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.server_proc.kill()
    server.server_proc = None
    return 0


# -- outside: the host side ----------------------------------------------------------------------
@dataclass
class Running:
    uri: str
    pid: int  # the milvus process (in the namespace; signals reach it: same PID namespace)
    folder: Path

    def freeze(self) -> None:
        """A hung server: it keeps its connections and answers nothing (SIGSTOP)."""
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)


def tls_files(folder: Path, server_name: str = "milvus.test") -> Path:
    """A private CA, a server certificate for `server_name` and a client certificate (openssl)."""
    tls = folder / "tls"
    tls.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=tls, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=book-agent test CA")
    (tls / "san.cnf").write_text(f"subjectAltName=DNS:{server_name}\n")
    for name, cn in (("server", server_name), ("client", "book-agent client")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}")
        extra = ["-extfile", "san.cnf"] if name == "server" else []
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2", *extra)
    return tls


@contextlib.contextmanager
def milvus_server(folder: Path, tls: bool = False, auth: bool = False) -> Iterator[Running]:
    """A running namespaced server; stopped (and its namespace gone) when the block ends."""
    exe = python()
    if exe is None or not available():
        raise RuntimeError("the real Milvus server needs root, unshare and `make install-milvus-server`")
    folder.mkdir(parents=True, exist_ok=True)
    sock_path = folder / SOCKET_NAME
    with contextlib.suppress(FileNotFoundError):
        sock_path.unlink()
    process = subprocess.Popen(
        ["unshare", "-n", "--", str(exe), str(Path(__file__).resolve()), "inner", str(folder),
         *(["--tls"] if tls else []), *(["--auth"] if auth else [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "HOME": str(folder), "PYTHONWARNINGS": "ignore"}, start_new_session=True)
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("ready "):
        _stop(process)
        raise RuntimeError(f"the real Milvus server did not start ({line or 'no output'}; logs in {folder})")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    stop = threading.Event()
    thread = threading.Thread(target=_forward, args=(listener, (socket.AF_UNIX, str(sock_path)), stop), daemon=True)
    thread.start()
    try:
        yield Running(f"http{'s' if tls else ''}://127.0.0.1:{listener.getsockname()[1]}", int(line.split()[1]),
                      folder)
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
        _stop(process)


def _stop(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(OSError):
        if process.stdin:
            process.stdin.close()
    try:
        process.wait(timeout=40)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
    if process.stdout:
        process.stdout.close()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "inner":
        sys.exit(inner(Path(sys.argv[2]), "--tls" in sys.argv, "--auth" in sys.argv))
    with milvus_server(Path(sys.argv[1] if len(sys.argv) > 1 else ".milvus-server").resolve()) as running:
        print(running.uri, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)
