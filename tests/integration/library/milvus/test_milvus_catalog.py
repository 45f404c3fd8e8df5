"""The Milvus backend's catalog past one query's answer: a library of more books than one query
returns (16,384 on a server) is read whole, with a query iterator (no offset, so no ceiling)."""

from __future__ import annotations

from pathlib import Path

from book_agent_adapters.library.milvus.records import Pointer
from book_agent_adapters.library.milvus.schema import create_catalog
from tests.support import milvus


def test_the_catalog_is_read_whole_past_one_answer(milvus_uri: str, tmp_path: Path) -> None:
    vectors = milvus.backend(milvus_uri, tmp_path / "data").vectors
    ledger = vectors._ledger("m", 4)  # type: ignore[attr-defined]
    ledger.answer_rows, ledger.page_rows = 7, 3  # one answer holds 7 rows here: 25 need the iterator
    create_catalog(ledger.engine, ledger.catalog)
    members = {f"h{i:03d}": {"book_id": f"b{i}", "stamp": "s", "added": 1, "removed_at": None, "rows": i}
               for i in range(25)}
    rows = [ledger._member_row("rows_a", key, body) for key, body in members.items()]
    rows += [ledger._member_row("rows_b", "other", members["h000"])]  # another collection's: filtered out
    ledger.engine.call("write", lambda c: c.upsert(ledger.catalog, rows))
    found = ledger.catalog_members(Pointer("rows_a", 1, "", 0))
    assert sorted(str(r["key"]).rsplit("|", 1)[1] for r in found) == sorted(members)  # each once, none lost
    assert len(ledger.catalog_members(Pointer("rows_b", 1, "", 0))) == 1
    ledger.answer_rows = 100  # the common case: one query answers it
    assert len(ledger.catalog_members(Pointer("rows_a", 1, "", 0))) == 25
