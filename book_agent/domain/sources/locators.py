"""Source locators: where a record's passage is in the original, and how that was checked.

A locator is what `locate` returns and what every search hit carries as `source_locator`
(contracts/sources.md, contracts/search.md). Verifying a record means reading the original
(PDFium pages, EPUB chapters), so a book's records are verified once, when it is registered
or prepared, and the locators are kept in its runtime dir, stamped with what they were
computed from: the package (its manifest's hash covers every file's), the database and the
verifier's version (a change of normalisation or search order makes them stale).
"""

from __future__ import annotations

from typing import Any, TypedDict

from book_agent.domain.errors import ErrorInfo
from book_agent.domain.records import Record
from book_agent.domain.sources.source_results import Locator

# Bump when verification gives other answers for the same package (normalisation, search order),
# or the locators gain fields (3: EPUB locators carry their EPUB CFI).
VERIFIER_VERSION = "3"
METHODS = ("exact", "normalized", "fuzzy", "unverified", "record-metadata")
VERIFIED_METHODS = frozenset({"exact", "normalized", "fuzzy"})
FAILED_LISTED = 50  # record ids listed by status among those not verified
# LocatorSummary (how a build verified them) is in locator_summary.py: only a build makes one


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
