"""Source locators: where a record's passage is in the original, and how that was checked.

A locator is what `locate` returns and what every search hit carries as `source_locator`
(contracts/sources.md, contracts/search.md). Verifying a record means reading the original
(PDFium pages, EPUB chapters), so a book's records are verified once, when it is registered
or prepared, and the locators are kept in its runtime dir, stamped with what they were
computed from: the package (its manifest's hash covers every file's), the database and the
verifier's version (a change of normalisation or search order makes them stale).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from book_agent.domain.errors import ErrorInfo
from book_agent.domain.records import Record
from book_agent.domain.source_results import Locator

# Bump when verification gives other answers for the same package (normalisation, search order),
# or the locators gain fields (3: EPUB locators carry their EPUB CFI).
VERIFIER_VERSION = "3"
METHODS = ("exact", "normalized", "fuzzy", "unverified", "record-metadata")
VERIFIED_METHODS = frozenset({"exact", "normalized", "fuzzy"})
FAILED_LISTED = 50  # record ids listed by status among those not verified


def locator_stamp(manifest_sha: str, database_sha: str | None) -> dict[str, str]:
    return {"package_manifest_sha256": manifest_sha, "database_sha256": database_sha or "",
            "verifier_version": VERIFIER_VERSION}


def older_verifier(found: object, expected: dict[str, str]) -> bool:
    """Is `found` (a sidecar's stamp) this package's and database's, from an older verifier?
    Only then may a search rebuild it on its own: the package is the one registered, and a
    newer verifier's sidecar (a newer book-agent beside this one) is never replaced by an older."""
    if not isinstance(found, dict) or any(found.get(k) != expected.get(k)
                                          for k in ("package_manifest_sha256", "database_sha256")):
        return False
    try:
        return int(str(found.get("verifier_version"))) < int(expected["verifier_version"])
    except (KeyError, ValueError):
        return False


def claimed_locator(book_id: str, record: Record) -> Locator:
    """The record's own claim, unchecked: what a hit carries only when the original cannot be read."""
    claim: dict[str, Any] = {"book_id": book_id, **record.source, "record_id": record.record_id,
                             "verification": {"method": "record-metadata", "score": None, "stage": "none"}}
    claim["warnings"] = ["the original could not be read: this is the record's claim, unchecked"]
    return claim  # type: ignore[return-value]  # a claim holds whatever keys the package gave


@dataclass
class LocatorSummary:
    """How a book's records were verified: counts by method and the ids that were not."""

    records: int = 0
    by_method: dict[str, int] = field(default_factory=dict)
    by_stage: dict[str, int] = field(default_factory=dict)
    corrected: int = 0  # records whose claimed page/chapter or offsets were wrong
    by_cfi: dict[str, int] = field(default_factory=dict)  # EPUB: verified | unverified | unavailable
    failed: list[str] = field(default_factory=list)  # first FAILED_LISTED ids not verified
    failed_count: int = 0
    seconds: float = 0.0

    def add(self, locator: Locator) -> None:
        check: dict[str, Any] = dict(locator.get("verification") or {})
        method = str(check.get("method") or "unverified")
        self.records += 1
        self.by_method[method] = self.by_method.get(method, 0) + 1
        stage = str(check.get("stage") or "none")
        self.by_stage[stage] = self.by_stage.get(stage, 0) + 1
        self.corrected += bool(check.get("corrected"))
        if check.get("cfi"):
            self.by_cfi[str(check["cfi"])] = self.by_cfi.get(str(check["cfi"]), 0) + 1
        if method not in VERIFIED_METHODS:
            self.failed_count += 1
            if len(self.failed) < FAILED_LISTED:
                self.failed.append(str(locator.get("record_id")))

    def to_dict(self) -> dict[str, Any]:
        per_1000 = round(self.seconds * 1000 / self.records, 3) if self.records else 0.0
        return {"records": self.records, "by_method": {m: self.by_method.get(m, 0) for m in METHODS},
                "by_stage": dict(self.by_stage), "corrected": self.corrected, "by_cfi": dict(self.by_cfi),
                "failed": list(self.failed),
                "failed_count": self.failed_count, "seconds": round(self.seconds, 3),
                "seconds_per_1000_records": per_1000}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LocatorSummary:
        return cls(records=int(data.get("records") or 0), by_method=dict(data.get("by_method") or {}),
                   by_stage=dict(data.get("by_stage") or {}), corrected=int(data.get("corrected") or 0),
                   by_cfi=dict(data.get("by_cfi") or {}),
                   failed=list(data.get("failed") or []), failed_count=int(data.get("failed_count") or 0),
                   seconds=float(data.get("seconds") or 0.0))


class LocatorBuild(TypedDict, total=False):
    """`prepare`'s (and init's) verification of a book's records: built or not, and why."""

    built: bool
    state: LocatorState  # the sidecar's state after (without its summary)
    summary: dict[str, Any] | None  # LocatorSummary.to_dict()
    error: ErrorInfo  # the coded error that stopped it


class LocatorStatus(TypedDict, total=False):
    """What `status` says about a book's verified locators (contracts/core.md)."""

    present: bool
    fresh: bool
    reason: str
    path: str
    verification: dict[str, Any]  # LocatorSummary.to_dict()
    remediation: str


class LocatorState(TypedDict, total=False):
    """A runtime dir's verified locators: present, fresh against the expected stamp, and why not."""

    present: bool
    fresh: bool
    reason: str
    path: str
    summary: dict[str, Any]
    stamp: dict[str, str]  # what the sidecar was computed from (when it could be read)
