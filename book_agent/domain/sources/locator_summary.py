"""How a book's records were verified (`prepare`'s summary, kept in the locators sidecar).

Apart from book_agent/domain/sources/locators.py because only a build makes one: a search reads locators and
never defines this dataclass (~0.9 ms of a cold search, issue 29).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from book_agent.domain.sources.locators import FAILED_LISTED, METHODS, VERIFIED_METHODS
from book_agent.domain.sources.source_results import Locator


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
