"""The living library index's generations: a base (the last full build) plus books added since,
minus books removed since, named by one pointer file replaced atomically.

    lexical.sqlite                the base head (impact_index.py), its postings `postings-<id>.*.npy`
    lexical-delta-<hex>.sqlite    a book added since the base, its own head and postings, its
                                  document weights computed with the base's frozen average length
    lexical-living.json           the pointer: the base it extends (its postings name), the added
                                  books' heads, the base's books removed since (a filter), the
                                  stamp it holds, its sequence number and how many records changed

A generation is the pointer when it names the base in place, else the base alone (a compaction
replaced the base and had not yet dropped the pointer: the base alone is then the newer
generation). Writing one is: new files under names no reader knows, then one rename (the pointer,
or the base head for a compaction), so a reader (or a process killed at any point) sees the old
generation or the new one; files no generation names are swept by the next writer (the
pointer's reading, commit and sweeping are the local backend's one mechanism: generations.py).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from book_agent.domain.library import LibraryMember
from book_agent_adapters.library.local.generations import (
    commit_pointer,
    read_pointer,
    sweep,
    unlink_quietly,
)
from book_agent_adapters.library.local.lexical.impact_checks import VERIFIED_SUFFIX
from book_agent_adapters.library.local.lexical.impact_index import postings_files, write_index
from book_agent_adapters.library.local.lexical.term_counts import BookTerms

POINTER_NAME = "lexical-living.json"
DELTA_PREFIX = "lexical-delta-"
POINTER_FORMAT = "living-1"
TEMP_PREFIX = ".lexical-library-"  # a temp head: written only under the build lock
DELTA_NAME = re.compile(r"lexical-delta-[0-9a-f]{12}\.sqlite")


@dataclass(frozen=True)
class Delta:
    """A book added to the base: its id, member stamp, head file name and record count."""

    book_id: str
    stamp: str
    head: str
    records: int
    length: float = 0.0  # its records' total length (the live average length is computed from it)


@dataclass(frozen=True)
class Living:
    base: str  # the base's postings name (`postings-<id>`): the base this generation extends
    sequence: int  # 1, 2, ... changes since the base
    stamp: dict[str, str]  # what the generation holds (the port's expected stamp)
    removed: list[str] = field(default_factory=list)  # base books no longer served
    deltas: list[Delta] = field(default_factory=list)
    changed: int = 0  # records added or removed since the base was built

    @property
    def generation(self) -> str:
        return f"{self.base.removeprefix('postings-')}.{self.sequence}"


def read_living(folder: Path) -> Living | None:
    """The pointer, or None when there is none or it is malformed (then the base alone serves)."""
    raw, _ = read_pointer(folder / POINTER_NAME, POINTER_FORMAT, limit=1 << 24)
    if raw is None:
        return None
    try:
        deltas = [Delta(str(d["book_id"]), str(d["stamp"]), str(d["head"]), int(d["records"]), float(d.get("length", 0)))
                  for d in raw["deltas"]]
        living = Living(str(raw["base"]), int(raw["sequence"]), {str(k): str(v) for k, v in raw["stamp"].items()},
                        [str(b) for b in raw["removed"]], deltas, int(raw["changed"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if any(not DELTA_NAME.fullmatch(d.head) or d.records < 0 for d in deltas) or living.sequence < 1:
        return None
    return living


def write_living(folder: Path, living: Living) -> None:
    """Replace the pointer in one rename: the commit point of an add or a removal."""
    commit_pointer(folder / POINTER_NAME, {"format": POINTER_FORMAT, **asdict(living)})


def drop_living(folder: Path) -> None:
    unlink_quietly(folder / POINTER_NAME)


@dataclass(frozen=True)
class Held:
    """What the generation in place holds."""

    stamp: dict[str, str]
    records: int
    generation: str | None
    changed: int
    average: float  # the frozen average length its weights use
    base_members: dict[str, str]  # the base's books and their member stamps
    base_rows: dict[str, int]
    base_records: int
    base_lengths: dict[str, float]  # each base book's records' total length
    length: float  # the live records' total length
    base_length: float = 0.0  # the base's records' total length

    @property
    def drift(self) -> float:
        """How far the frozen average length is from the live one (relative): BM25's one statistic
        a change does not refresh (N and df are live at query time)."""
        return drift_of(self.average, self.length, self.records)


def drift_of(frozen: float, length: float, records: int) -> float:
    if not records or not frozen:
        return 0.0
    return abs(length / records - frozen) / frozen


def held_generation(folder: Path, meta: dict[str, str]) -> tuple[Held, Living | None]:
    """The generation in place: the pointer when it extends this base (its head's `meta`), else
    the base alone."""
    try:
        base_members = {str(k): str(v) for k, v in json.loads(meta.get("members", "{}")).items()}
        base_rows = {str(k): int(v) for k, v in json.loads(meta.get("rows", "{}")).items()}
        base_lengths = {str(k): float(v) for k, v in json.loads(meta.get("lengths", "{}")).items()}
        base_records, average = int(meta.get("record_count", 0)), float(meta.get("norm_average", 0.0))
        base_length = float(meta.get("average_length", 0.0)) * base_records
    except (ValueError, TypeError, AttributeError):
        base_members, base_rows, base_lengths, base_records, average, base_length = {}, {}, {}, 0, 0.0, 0.0
    base_rows = {b: base_rows.get(b, 0) for b in base_members}
    base_lengths = {b: base_lengths.get(b, 0.0) for b in base_members}
    generation = meta.get("postings", "").removeprefix("postings-") or None
    living = read_living(folder)
    if living is None or living.base != meta.get("postings"):
        return Held(meta, base_records, generation, 0, average, base_members, base_rows, base_records, base_lengths,
                    base_length, base_length), None
    records = base_records - sum(base_rows.get(b, 0) for b in living.removed) + sum(d.records for d in living.deltas)
    length = base_length - sum(base_lengths.get(b, 0.0) for b in living.removed) + sum(d.length for d in living.deltas)
    return Held(living.stamp, records, living.generation, living.changed, average, base_members, base_rows,
                base_records, base_lengths, length, base_length), living


def write_delta(folder: Path, member: LibraryMember, counts: BookTerms, average: float) -> Delta:
    """One added book's own head and postings, its weights under the generation's average length."""
    suffix = uuid.uuid4().hex[:12]
    head, postings = folder / f"{DELTA_PREFIX}{suffix}.sqlite", folder / f"postings-{suffix}"
    fd, name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".sqlite", dir=folder)
    os.close(fd)
    tmp = Path(name)
    try:
        out = sqlite3.connect(tmp)
        try:
            write_index(out, [(member.book_id, counts)], {"book": member.book_id, "member_stamp": member.stamp},
                        postings, norm_average=average)
        finally:
            out.close()
        os.replace(tmp, head)
    except BaseException:
        for path in postings_files(postings):
            path.unlink(missing_ok=True)
        raise
    finally:
        tmp.unlink(missing_ok=True)
    return Delta(member.book_id, member.stamp, head.name, len(counts.record_ids), float(counts.lengths.sum()))


def drop_delta(folder: Path, head_name: str) -> None:
    """An added book's head and postings (its head names them: `lexical-delta-X` -> `postings-X`)."""
    suffix = head_name.removeprefix(DELTA_PREFIX).removesuffix(".sqlite")
    sweep([folder / head_name, folder / (head_name + VERIFIED_SUFFIX), *postings_files(folder / f"postings-{suffix}")])
