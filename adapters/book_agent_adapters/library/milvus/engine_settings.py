"""Where the Milvus server is, how long a call may take, how the client authenticates and
reads (engine.py uses them; `create_milvus` makes them from `[library.milvus]` and the environment)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EngineSettings:
    """Where the server is and how long a call may take. The token is the value of an
    environment variable named in config, read when the backend is made, never stored."""

    uri: str
    token: str = field(default="", repr=False)
    db_name: str = ""
    timeout_s: float = 10.0
    shards: int = 1  # a rows collection's shards (write parallelism on a Distributed cluster)
    replicas: int = 1  # in-memory replicas each collection is loaded with (query nodes serving it)
    user: str = ""
    password: str = field(default="", repr=False)
    ca_pem_path: str = ""  # the CA that signed the server's certificate (a private CA)
    client_pem_path: str = ""  # mutual TLS: this client's certificate and key
    client_key_path: str = ""
    server_name: str = ""  # the name in the server's certificate, when the URI's host is not it
    breaker_s: float = 30.0  # how long the breaker stays open before its first probe
    read_consistency: str = "auto"  # "auto": Bounded for a generation older than bounded_after_s; "strong"
    bounded_after_s: float = 15.0  # above the server's Bounded window (gracefulTime, 5 s) plus clock skew
    partition_key: bool = True  # rows partitioned by book (milvus-lite's filters refuse it: off there)

    def read_level(self, committed: float) -> str:
        """The consistency a reader of a generation committed at `committed` (the writer's wall
        clock; 0: unknown) searches and looks terms up with. Strong waits for the server's next
        time tick (~200 ms a read on a real server); Bounded sees every write older than the
        server's gracefulTime at once, so once the generation is older than that (with a margin for
        clocks) Bounded sees all of it. The lease and the pointer are always read Strong."""
        if self.read_consistency == "strong" or not committed or time.time() - committed < self.bounded_after_s:
            return "Strong"
        return "Bounded"

    @property
    def secure(self) -> bool:
        return self.uri.lower().startswith("https://") or bool(self.ca_pem_path or self.client_pem_path)

    @property
    def auth(self) -> str:
        """How the client authenticates (never the secret): token, user, or none."""
        return "token" if self.token else "user" if self.user else "none"

    def client_options(self) -> dict[str, Any]:
        """pymilvus's connection arguments for the credentials and TLS (secrets included: never logged)."""
        options: dict[str, Any] = {}
        if self.token:
            options["token"] = self.token
        elif self.user:
            options.update(user=self.user, password=self.password)
        if self.secure:
            options["secure"] = True
            if self.client_pem_path:  # mutual TLS: pymilvus reads the CA from ca_pem_path
                options.update(client_pem_path=self.client_pem_path, client_key_path=self.client_key_path,
                               ca_pem_path=self.ca_pem_path)
            elif self.ca_pem_path:  # one-way TLS: pymilvus takes the roots from server_pem_path
                options["server_pem_path"] = self.ca_pem_path
            if self.server_name:
                options["server_name"] = self.server_name
        return options
