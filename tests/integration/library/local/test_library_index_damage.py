"""A damaged library lexical index never answers `ok` with other hits, never hangs, never ends
in an uncoded error, and is rebuilt by what its error names (a build; `prepare @all`).

Real package databases and real index files, damaged the ways a disk, an editor or a person
does: values edited in place (NaN, shuffled, flipped bytes), files truncated, deleted, replaced
by a FIFO; impossible values written into the head.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.library.local.lexical.library_lexical_index import SqliteLibraryIndex
from tests.integration.library.local.test_library_impact_index import QUERIES, members_of, records

STAMP = {"books": "two"}
WORDS = ["river water", "battle general", "兵法", "grain tax", "the", "rain harvest season", "x86", "天"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(folder of a sound index, its members, each query's hits)."""
    tmp = tmp_path_factory.mktemp("damage")
    members = members_of(tmp, records(600, seed=21), 2)
    index = SqliteLibraryIndex(tmp / "library")
    index.build(members, STAMP, None)
    return tmp / "library", members, {q: hits(index, q) for q in WORDS + QUERIES}


def hits(index: SqliteLibraryIndex, query: str) -> list:
    lexical = index.open()
    try:
        return [(h.record_id, round(h.score, 9)) for h in lexical.search(query, 30)]
    finally:
        lexical.close()


def copy_of(built, tmp_path: Path) -> SqliteLibraryIndex:
    folder, _, _ = built
    shutil.copytree(folder, tmp_path / "library")
    return SqliteLibraryIndex(tmp_path / "library")


def postings(index: SqliteLibraryIndex, kind: str) -> Path:
    (path,) = index.dir.glob(f"postings-*.{kind}.npy")
    return path


def within(seconds: float, work):
    """work() in a thread; fails when it does not return within `seconds` (a hang)."""
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = work()
        except BaseException as exc:  # noqa: BLE001
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"hung for {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


EDITS = st.sampled_from(["nan", "shuffle", "flip", "huge", "negative", "zero"])


def edit(path: Path, how: str, at: float, rng: np.random.Generator) -> None:
    """Change the array at `path` in place (its file, not a copy: readers' maps see it)."""
    values = np.load(path, mmap_mode="r+")
    i = int(at * (len(values) - 1))
    span = values[i:i + 64]
    if how == "nan" and values.dtype.kind == "f":
        span[0] = np.nan
    elif how == "shuffle":
        span[:] = rng.permutation(np.asarray(span))
    elif how == "huge":
        span[0] = 10**6 if values.dtype.kind == "i" else 1e30
    elif how == "negative":
        span[0] = -abs(span[0]) - 1
    elif how == "zero":
        span[:] = 0
    else:
        view = span.view(np.uint8)
        view[0] ^= 0x10
    values.flush()
    del values


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["docs", "impacts"]), how=EDITS, at=st.floats(0, 1), seed=st.integers(0, 99))
def test_postings_edited_in_place_never_give_other_hits(built, tmp_path_factory, kind, how, at, seed):
    _, members, want = built
    index = copy_of(built, tmp_path_factory.mktemp("edit"))
    serving = index.open()  # a server that mapped the index before the edit
    try:
        assert [(h.record_id, round(h.score, 9)) for h in serving.search("river water", 30)] == want["river water"]
        edit(postings(index, kind), how, at, np.random.default_rng(seed))
        changed = False
        for query in WORDS:
            try:
                got = [(h.record_id, round(h.score, 9)) for h in serving.search(query, 30)]
            except BookAgentError as exc:
                assert exc.code == "lexical.index_damaged" and "prepare @all" in (exc.remediation or "")
                changed = True
                continue
            assert got == want[query]  # answered: only from blocks the edit did not touch
    finally:
        serving.close()
    state = index.state(STAMP)
    if changed:
        assert not state.fresh and not state.intact and (state.reason or "").startswith("damaged")
    if not state.fresh:
        index.build(members, STAMP, None)  # what `prepare @all` does
        assert index.state(STAMP).fresh
    for query in WORDS:
        assert hits(index, query) == want[query]


@pytest.mark.parametrize("how", ["truncate", "delete", "fifo", "empty", "grow"])
@pytest.mark.parametrize("kind", ["docs", "impacts", "head"])
def test_a_missing_truncated_or_fifo_file_is_not_fresh_and_a_build_repairs_it(built, tmp_path, kind, how):
    _, members, want = built
    index = copy_of(built, tmp_path)
    path = index.path if kind == "head" else postings(index, kind)
    if how == "truncate":
        os.truncate(path, path.stat().st_size // 2)
    elif how == "grow":
        with open(path, "ab") as handle:
            handle.write(b"\0" * 4096)
    elif how == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
        if how == "fifo":
            os.mkfifo(path)
    state = within(10, lambda: index.state(STAMP))
    if state.fresh:  # SQLite ignores pages past the count in its header: the head grown is still whole
        assert (kind, how) == ("head", "grow") and hits(index, "river water") == want["river water"]
        return
    with pytest.raises(BookAgentError) as caught:
        within(10, lambda: hits(index, "river water"))
    assert caught.value.code in ("lexical.index_damaged", "lexical.query_failed")
    assert "prepare @all" in (caught.value.remediation or "")
    within(60, lambda: index.build(members, STAMP, None))
    assert index.state(STAMP).fresh and hits(index, "river water") == want["river water"]
    assert not list(index.dir.glob(".lexical-library-*"))


META_VALUES = st.sampled_from(["-1", "nan", "inf", "abc", "", "1e99", "99999999999", "2147483647", "0", "3.5",
                               "postings-zzz", "../x", None])
META_KEYS = st.sampled_from(["record_count", "average_length", "postings", "postings_count", "block",
                             "docs_state", "format"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=META_KEYS, value=META_VALUES)
def test_impossible_values_in_the_head_are_coded_errors(built, tmp_path_factory, key, value):
    _, members, want = built
    index = copy_of(built, tmp_path_factory.mktemp("head"))
    con = sqlite3.connect(index.path)
    with con:
        if value is None:
            con.execute("DELETE FROM meta WHERE key = ?", (key,))
        else:
            con.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    con.close()
    try:
        got = hits(index, "river water")
    except BookAgentError as exc:
        assert exc.code in ("lexical.index_damaged", "lexical.query_failed")
        assert not index.state(STAMP).fresh  # so `prepare @all` rebuilds it
    else:
        assert got == want["river water"]  # an edit the index does not read (a state it re-verifies)
    index.build(members, STAMP, None)
    assert hits(index, "river water") == want["river water"]


@pytest.mark.parametrize("sql", [
    "UPDATE terms SET df = 1000000000 WHERE term = 'river'",
    "UPDATE terms SET start = -5 WHERE term = 'river'",
    "UPDATE terms SET df = 'x' WHERE term = 'river'",
    "UPDATE books SET row_count = row_count + 7",
    "UPDATE books SET first_row = 3",
    "DELETE FROM books",
    "UPDATE lengths SET data = x'00'",
    "DELETE FROM lengths",
    "DELETE FROM ids WHERE rowid = (SELECT max(rowid) FROM ids)",
    "DELETE FROM checks",
    "UPDATE checks SET crc = x'0000'",
    "DROP TABLE terms",
])
def test_impossible_tables_in_the_head_are_coded_errors(built, tmp_path, sql):
    _, members, want = built
    index = copy_of(built, tmp_path)
    con = sqlite3.connect(index.path)
    with con:
        con.execute(sql)
    con.close()
    with pytest.raises(BookAgentError) as caught:
        for query in WORDS:
            hits(index, query)
    assert caught.value.code in ("lexical.index_damaged", "lexical.query_failed")
    index.build(members, STAMP, None)
    assert hits(index, "river water") == want["river water"]


def test_postings_truncated_under_a_running_server_are_refused_before_they_are_read(built, tmp_path):
    _, _, want = built
    index = copy_of(built, tmp_path)
    serving = index.open()
    try:
        assert [(h.record_id, round(h.score, 9)) for h in serving.search("river water", 30)] == want["river water"]
        os.truncate(postings(index, "docs"), 128)  # reading the map past the end would be a SIGBUS
        with pytest.raises(BookAgentError) as caught:
            serving.search("battle general", 30)
        assert caught.value.code == "lexical.index_damaged"
    finally:
        serving.close()


def damage_counts(path: Path, how: str) -> None:
    """A book's cached term counts damaged: the next build must count the book again."""
    if how == "fifo":
        path.unlink()
        os.mkfifo(path)
        return
    if how in ("garbage", "truncated"):
        path.write_bytes(b"PK\x03\x04 not a zip" if how == "garbage" else path.read_bytes()[:300])
        return
    with np.load(path) as data:
        arrays = {k: data[k].copy() for k in data.files}
    if how == "shuffled":
        arrays["docs"] = arrays["docs"][::-1].copy()
    elif how == "out-of-range":
        arrays["term_ids"][-1] = 10**6
    elif how == "nan":
        arrays["freqs"][0] = np.nan
    elif how == "other-book":
        arrays["key"] = np.frombuffer(b'["someone else"]', dtype=np.uint8)
    elif how == "wrong-dtype":
        arrays["docs"] = arrays["docs"].astype(np.int64)
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


@pytest.mark.parametrize("how", ["fifo", "garbage", "truncated", "shuffled", "out-of-range", "nan", "other-book",
                                 "wrong-dtype"])
def test_damaged_term_counts_are_counted_again_never_indexed(built, tmp_path, how):
    _, members, want = built
    index = copy_of(built, tmp_path)
    for cached in (index.dir / "terms").glob("*.npz"):
        damage_counts(cached, how)
    within(60, lambda: index.build(members, {"books": "again"}, None))  # a new stamp: merged from the caches
    for query in WORDS:
        assert hits(index, query) == want[query]


def test_a_copied_index_is_verified_once_and_an_edit_after_that_is_still_caught(built, tmp_path, monkeypatch):
    """A copied library's postings differ in file state from their build: the first state check
    verifies every block and remembers the states it verified; later checks of the same files do
    not read every block again (~40 ms at 100k records), but a write in place since still fails."""
    from book_agent_adapters.library.local.lexical import impact_checks

    index = copy_of(built, tmp_path)
    calls = []
    real = impact_checks.Postings.verify_all
    monkeypatch.setattr(impact_checks.Postings, "verify_all", lambda self: (calls.append(1), real(self))[1])
    assert index.state(STAMP).fresh and len(calls) == 1
    assert index.state(STAMP).fresh and index.state(STAMP).fresh and len(calls) == 1
    edit(postings(index, "impacts"), "flip", 0.5, np.random.default_rng(0))
    state = index.state(STAMP)
    assert len(calls) == 2 and not state.fresh and (state.reason or "").startswith("damaged")
    assert not index.state(STAMP).fresh and len(calls) == 3  # a failed check is remembered by nobody
    index.build(built[1], STAMP, None)
    assert index.state(STAMP).fresh
    for query in WORDS:
        assert hits(index, query) == built[2][query]


def test_a_warm_up_checks_every_block_in_the_background_and_leaves_damage_to_the_query(built, tmp_path):
    """warm_up verifies every postings block off the query path (a warmed server's queries find
    theirs checked); a damaged block stops the check, and the query that reads it still fails
    with a coded error, never hits from damaged data."""
    _, _, want = built
    index = copy_of(built, tmp_path / "sound")
    sound = index.open()
    try:
        sound.warm_up()
        assert sound.checking is not None
        sound.checking.join(30)
        checked = [segment.postings for segment in sound._scorer.segments]
        assert all(p.verified.all() for p in checked) and len(checked[0].verified) >= 1
        assert [(h.record_id, round(h.score, 9)) for h in sound.search("river water", 30)] == want["river water"]
    finally:
        sound.close()
    damaged = copy_of(built, tmp_path / "damaged")
    edit(postings(damaged, "impacts"), "nan", 0.0, np.random.default_rng(1))
    serving = damaged.open()
    try:
        serving.warm_up()
        serving.checking.join(30)
        assert not serving._scorer.segments[0].postings.verified[0]  # the check stopped at the damaged block
        failed = []
        for query in WORDS:
            try:
                serving.search(query, 30)
            except BookAgentError as exc:
                failed.append(exc.code)
        assert failed and set(failed) == {"lexical.index_damaged"}
    finally:
        serving.close()
