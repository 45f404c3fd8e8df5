"""One writer at a time for a prefix's library, across machines: a lease record in its catalog.

The data dir's build lock serialises writers on one machine only; two `prepare @all` on two
machines against one Milvus would interleave their rows and term tables. So every build first
takes the prefix's lease, the catalog row `lease|writer` = {holder, expires}, renews it while it
builds and deletes it when done. A lease whose `expires` has passed (its holder died: kill -9, a
lost machine) is broken by the next writer; a live one is never broken.

Milvus has no compare-and-set, only upserts and reads (Strong consistency: a read sees every
write that landed before it). A claim is therefore Fischer's timed mutual exclusion: read the
record; if it is free or expired, write our holder id, wait `settle_s`, read it again, and hold
the lease only if it still names us. That is safe when every claim's write lands within the
delay of the read that found the record free: a claim whose read-to-write took more than half
of `settle_s` is abandoned (never held), so of two racing claims only the later write wins and
the earlier claimant sees it. A holder checks its lease before the steps that matter (each
batch, and by reading the record before it moves a pointer) and stops with `engine.lease_lost`
when the record names someone else or its own renewals lapsed.

Expiry is wall-clock (`expires` = the holder's time of renewal + `ttl_s`), so writers' clocks
must agree within a third of `ttl_s` (10 s at the default 30; NTP does far better): a holder
renews every third of `ttl_s` and stops by itself a third before anyone may break its lease.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.library.milvus.engine import MilvusEngine
from book_agent_adapters.library.milvus.schema import (
    CATALOG_VECTOR,
    create_catalog,
    read_catalog_record,
)

KEY = "lease|writer"
CLAIM_SHARE = 0.5  # a claim's read-to-write must take at most this share of settle_s, or it is abandoned
POLL_S = 0.5  # how often a waiting writer looks again (at most)
SLOW_CLAIMS = 5  # claims in a row too slow to trust: the settle delay is too short for this server


@dataclass(frozen=True)
class LeaseSettings:
    ttl_s: float = 30.0  # a holder that stops renewing loses the lease this long after its last renewal
    wait_s: float = 600.0  # how long a writer that waits (`wait=True`) waits for it
    settle_s: float = 1.0  # Fischer's delay: above twice the slowest trusted read-to-write of a claim


class Held:
    """A lease held: renewed by a thread until released; `check`/`confirm` raise once it is lost."""

    def __init__(self, lease: WriterLease, holder: str, written: float) -> None:
        self.lease, self.holder = lease, holder
        self.renewed = written  # when the last successful renewal (at first: the claim) started
        self.lost = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="milvus-lease", daemon=True)
        self._thread.start()

    def check(self) -> None:
        """Cheap, before each batch: lost to another writer, or renewals lapsed."""
        ttl = self.lease.settings.ttl_s
        if not self.lost and time.monotonic() - self.renewed > ttl * 2 / 3:
            self.lost = f"its renewals lapsed (none for {ttl * 2 / 3:.1f} s)"
        if self.lost:
            raise BookAgentError("engine.lease_lost", f"this build lost the library's writer lease: {self.lost}",
                                 details={"holder": self.holder, "uri": self.lease.engine.uri},
                                 remediation="run `book-agent prepare @all` again when the other writer is done")

    def confirm(self) -> None:
        """Before a commit (moving a pointer): the record itself still names us."""
        self.check()
        record = self.lease.read()
        if record is None or record.get("holder") != self.holder:
            self.lost = f"the record names {record.get('holder') if record else 'nobody'}"
            self.check()

    def _renew(self) -> None:
        interval = self.lease.settings.ttl_s / 3
        while not self._stop.wait(interval):
            started = time.monotonic()
            try:
                record = self.lease.read()
                if record is None or record.get("holder") != self.holder:
                    self.lost = f"the record names {record.get('holder') if record else 'nobody'}"
                    return
                self.lease.write(self.holder)
                self.renewed = started
            except BookAgentError:  # the server is away: try again; `check` notices when renewals lapse
                continue

    def release(self) -> None:
        self._stop.set()
        self._thread.join()
        if not self.lost:
            record = self.lease.read()
            if record is not None and record.get("holder") == self.holder:
                self.lease.engine.call("release lease", lambda c: c.delete(
                    self.lease.catalog, ids=[KEY], timeout=self.lease.engine.settings.timeout_s))


class WriterLease:
    def __init__(self, engine: MilvusEngine, prefix: str, settings: LeaseSettings | None = None) -> None:
        self.engine = engine
        self.catalog = f"{prefix}_catalog"
        self.settings = settings or LeaseSettings()

    @contextmanager
    def held(self, wait: bool = True, busy_code: str = "lexical.build_busy") -> Iterator[Held]:
        """Hold the lease for the block. Busy: `busy_code` at once when `wait` is False, else
        `engine.lease_busy` after `wait_s`."""
        held = self._acquire(wait, busy_code)
        try:
            yield held
        finally:
            held.release()

    def _acquire(self, wait: bool, busy_code: str) -> Held:
        create_catalog(self.engine, self.catalog)
        holder = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(6)}"
        deadline = time.monotonic() + (self.settings.wait_s if wait else 0.0)
        slow = 0  # claims abandoned in a row because the server's round trips outlast the settle share
        while True:
            record, started = self._read_settled()  # a claim's read-to-write is timed from the read that found it free
            if record is None or float(record.get("expires", 0.0)) < time.time():
                self.write(holder)
                took = time.monotonic() - started
                if took <= self.settings.settle_s * CLAIM_SHARE:
                    time.sleep(self.settings.settle_s)
                    record = self.read()
                    if record is not None and record.get("holder") == holder:
                        return Held(self, holder, started)
                else:
                    slow += 1
                    if slow >= SLOW_CLAIMS:  # never waits out wait_s on a claim that can never be safe
                        raise self._too_slow(took)
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._busy(record, wait, busy_code)
            time.sleep(min(POLL_S, left))

    def _too_slow(self, took: float) -> BookAgentError:
        return BookAgentError(
            "engine.timeout", f"the writer lease cannot be claimed safely: its read and write took {took:.2f} s, "
            f"more than half of lease_settle_s ({self.settings.settle_s:g} s), {SLOW_CLAIMS} times in a row",
            details={"uri": self.engine.uri, "claim_s": round(took, 3), "lease_settle_s": self.settings.settle_s},
            remediation=f"raise [library.milvus] lease_settle_s above {2 * took:.1f} s (and lease_s above three "
                        "times that), or check the server's load")

    def _busy(self, record: dict[str, Any] | None, wait: bool, busy_code: str) -> BookAgentError:
        other = record.get("holder") if record else "another writer"
        left = max(0.0, float(record.get("expires", 0.0)) - time.time()) if record else 0.0
        details = {"holder": other, "expires_in_s": round(left, 1), "uri": self.engine.uri}
        if not wait:
            return BookAgentError(busy_code, f"{other} is writing the library in Milvus", details=details,
                                  remediation="nothing to do: searches serve the generation in place until the "
                                              "writer is done")
        return BookAgentError("engine.lease_busy", f"{other} held the library's writer lease for the "
                              f"{self.settings.wait_s:g} s this build waited", details=details,
                              remediation="retry when the other `book-agent prepare @all` finishes (a dead "
                                          "writer's lease expires by itself)")

    def read(self) -> dict[str, Any] | None:
        """The lease record; None when there is none (never claimed, or released)."""
        return self._read_settled()[0]

    def _read_settled(self) -> tuple[dict[str, Any] | None, float]:
        """The record, and when the read that decided it started (a renewal racing this read
        must not make a held lease look free: schema.read_catalog_record)."""
        rows, started = read_catalog_record(self.engine, self.catalog, KEY, "read lease")
        if not rows:
            return None, started
        try:
            body = json.loads(rows[0]["body"])
        except ValueError:
            return {}, started  # unreadable: treated as expired (expires 0)
        return (body if isinstance(body, dict) else {}), started

    def write(self, holder: str) -> None:
        body = {"holder": holder, "expires": time.time() + self.settings.ttl_s, "ttl_s": self.settings.ttl_s}
        row = {"key": KEY, "channel": "lease", "kind": "lease", "body": json.dumps(body), "v": CATALOG_VECTOR}
        self.engine.call("write lease", lambda c: c.upsert(self.catalog, [row], timeout=self.engine.settings.timeout_s))
