"""Builds the server refused, remembered so that they are not tried again at every search.

A server that refuses a build (`engine.failed`: an index type or field type it lacks, a quota,
a schema it rejects) refuses it again a moment later, and a library search with nothing sound
to serve would ask for that build each time, paying its seconds and leaving nothing but load.
So a refusal is remembered per channel, in memory and in a small file beside the data dir's
build lock (other processes on this machine, a CLI run after a CLI run, see it too): for
`backoff_s` after the first refusal, twice that after the second, ... at most MAX_BACKOFF_S. Until
then a build of that channel fails at once with the same code, saying when it is tried again;
a build that succeeds forgets the refusals. A sick server (timeouts, unreachable) is the
engine's breaker's business (engine.py), not this.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from book_agent.domain.errors import BookAgentError

MAX_BACKOFF_S = 3600.0
REFUSED = "engine.failed"  # the server answered, and said no


class Refusals:
    def __init__(self, folder: Path | None, channel: str, backoff_s: float = 60.0) -> None:
        self.folder = folder
        self.channel = channel
        self.backoff_s = backoff_s
        self._memory: dict[str, dict[str, Any]] = {}

    def _path(self, key: str) -> Path | None:
        if self.folder is None:
            return None
        digest = hashlib.sha256(f"{self.channel}|{key}".encode()).hexdigest()[:16]
        return self.folder / f"milvus-refused-{digest}.json"

    def _read(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        if path is not None:
            with contextlib.suppress(OSError, ValueError):
                record = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(record, dict):
                    return record
            return None
        return self._memory.get(key)

    def left_s(self, key: str) -> float:
        """Seconds until a refused build is tried again (0: it may be tried now)."""
        record = self._read(key)
        return max(0.0, float(record.get("until", 0.0)) - time.time()) if record else 0.0

    def check(self, key: str, code: str, what: str) -> None:
        """Raise `code` at once while a refusal of this build is fresh."""
        record = self._read(key)
        if record is None:
            return
        left = float(record.get("until", 0.0)) - time.time()
        if left <= 0:
            return
        raise BookAgentError(
            code, f"{what} was not built: the Milvus server refused it {int(record.get('attempts', 1))} time(s), "
            f"last: {record.get('message', '')}; it is tried again in {left:.0f} s",
            details={"engine_code": record.get("engine_code", REFUSED), "rate_limited": True,
                     "retry_in_s": round(left, 1), "attempts": int(record.get("attempts", 1))},
            remediation=str(record.get("remediation") or "check the server's version and log (the lexical "
                                                          "channel needs Milvus 2.5 or later)"))

    def refused(self, key: str, error: BookAgentError) -> None:
        """Remember a refusal (the engine's code in `error.details`, or its own code)."""
        previous = self._read(key) or {}
        attempts = int(previous.get("attempts", 0)) + 1
        wait = min(MAX_BACKOFF_S, self.backoff_s * 2 ** (attempts - 1))
        record = {"until": time.time() + wait, "attempts": attempts, "message": error.message[:500],
                  "engine_code": error.details.get("engine_code", error.code), "remediation": error.remediation}
        path = self._path(key)
        if path is None:
            self._memory[key] = record
            return
        with contextlib.suppress(OSError):  # a read-only data dir: searches just try again
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            partial.write_text(json.dumps(record), encoding="utf-8")
            os.replace(partial, path)

    def succeeded(self, key: str) -> None:
        self._memory.pop(key, None)
        path = self._path(key)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)


def is_refusal(error: BookAgentError) -> bool:
    return REFUSED in (error.code, error.details.get("engine_code"))
