"""Through the CLI and the composition root: a damaged library index is repaired by what its
error names (`prepare @all`) or transparently by the next search, which then answers `ok` with
the hits of the sound index; a faiss pointer holding impossible values is rebuilt, never an
uncoded error; a stale index still serves, saying so, when it cannot be rebuilt."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from book_agent.services.library.lexical import GENERATION_RECHECK_S
from tests.support.cli_support import run_cli
from tests.support.library_support import three_book_library


def search(data: Path, query: str = "river water") -> dict:
    out = run_cli("--data-dir", str(data), "search", "@all", query, "--json")
    assert out.code == 0, out.stdout
    return out.json


def hit_ids(result: dict) -> list[tuple[str, float]]:
    return [(h["evidence_id"], round(h["scores"]["lexical"] or 0, 9)) for h in result["hits"]]


@pytest.fixture
def library(tmp_path: Path) -> tuple[Path, dict]:
    data = three_book_library(tmp_path)
    return data, search(data)


@pytest.mark.parametrize("how", ["zeros", "nan", "shuffle"])
def test_a_search_after_an_edit_in_place_rebuilds_and_answers_the_sound_hits(library, how):
    data, before = library
    (docs,) = (data / "library").glob("postings-*.docs.npy")
    (impacts,) = (data / "library").glob("postings-*.impacts.npy")
    target = np.load(impacts if how == "nan" else docs, mmap_mode="r+")
    if how == "nan":
        target[:] = np.nan
    elif how == "zeros":
        target[:] = 0
    else:
        target[:] = target[::-1].copy()
    target.flush()
    del target
    after = search(data)
    assert after["channels"]["lexical"]["status"] == "ok"
    assert hit_ids(after) == hit_ids(before)
    assert after["library"]["lexical_index"]["rebuilt"] is True or after["channels"]["lexical"]["candidates"]


@pytest.mark.parametrize("how", ["delete", "truncate", "fifo"])
def test_prepare_all_rebuilds_a_broken_postings_file_it_does_not_call_fresh(library, how):
    data, before = library
    (docs,) = (data / "library").glob("postings-*.docs.npy")
    if how == "truncate":
        os.truncate(docs, 200)
    else:
        docs.unlink()
        if how == "fifo":
            os.mkfifo(docs)
    prepared = run_cli("--data-dir", str(data), "prepare", "@all", "--json")
    assert prepared.code == 0, prepared.stdout
    assert prepared.json["lexical_index"]["rebuilt"] is True
    again = run_cli("--data-dir", str(data), "prepare", "@all", "--json")
    assert again.json["lexical_index"]["rebuilt"] is False  # now fresh, and truly so
    assert hit_ids(search(data)) == hit_ids(before)


def test_a_head_with_impossible_values_gives_a_coded_error_and_prepare_repairs_it(library):
    import sqlite3

    data, before = library
    con = sqlite3.connect(data / "library" / "lexical.sqlite")
    with con:
        con.execute("UPDATE meta SET value = '99999999999' WHERE key = 'record_count'")
    con.close()
    prepared = run_cli("--data-dir", str(data), "prepare", "@all", "--json")
    assert prepared.code == 0 and prepared.json["lexical_index"]["rebuilt"] is True
    assert hit_ids(search(data)) == hit_ids(before)


def test_a_stale_index_serves_with_a_warning_when_the_data_dir_cannot_take_a_rebuild(library, tmp_path):
    from book_agent.agent import build_agent
    from tests.support.library_support import corpus, make_book

    data, before = library
    (data / "library" / ".build.lock").unlink()
    (data / "library" / ".build.lock").mkdir()  # the lock cannot be taken: no rebuild is possible
    with build_agent(data) as agent:  # registered; its own library update fails, the registration stands
        agent.init(make_book(tmp_path / "late", "late", corpus(40)[30:]))
    stale = search(data)
    assert stale["channels"]["lexical"]["status"] == "ok"
    assert stale["library"]["lexical_index"]["stale"]["code"] == "lexical.index_pending"
    assert stale["library"]["lexical_index"]["pending_books"] == ["late"]
    assert any("not up to date" in w for w in stale["warnings"])
    assert hit_ids(stale) == hit_ids(before)
    prepared = run_cli("--data-dir", str(data), "prepare", "@all", "--json")
    assert prepared.code == 1 and prepared.error_code == "lexical.build_failed"


@pytest.mark.parametrize("field,value", [("nprobe", -1), ("nprobe", 10**12), ("nlist", 0), ("vectors", -3),
                                         ("books", [{"book_id": 1, "rows": "x"}]), ("dimensions", "32")])
def test_a_faiss_pointer_with_impossible_values_is_rebuilt(tmp_path, field, value):
    import importlib.util

    from book_agent.agent import build_agent
    from book_agent_adapters.library.local.vectors.faiss_vector_index import FaissLibraryVectors
    from tests.integration.library.local.test_library_vectors import group_key, make_book
    from tests.support.parts import require_real_part

    require_real_part(importlib.util.find_spec("faiss") is not None, "faiss-cpu")
    data = tmp_path / "data"
    with build_agent(data, library_vectors=FaissLibraryVectors(data / "library", min_vectors=100)) as agent:
        agent.init(make_book(tmp_path / "p", "b0", 300, 3))
        agent.init(make_book(tmp_path / "p", "b1", 200, 4))
        agent.prepare("@all")
    pointer_file = data / "library" / "vectors" / f"{group_key('test/random-vectors', 32)}.json"
    pointer = json.loads(pointer_file.read_text())
    pointer[field] = value
    pointer_file.write_text(json.dumps(pointer))
    vector = [float(x) for x in np.random.default_rng(5).standard_normal(32)]
    with build_agent(data, library_vectors=FaissLibraryVectors(data / "library", min_vectors=100)) as agent:
        result = agent.search("@all", "", query_vector=vector)
    group = result["library"]["model_groups"][0]
    assert group["search"] == "approximate" and group["vector_index"]["rebuilt"] is True
    assert json.loads(pointer_file.read_text())[field] != value


@pytest.mark.parametrize("how", ["flip", "touch-back", "fifo", "replaced", "truncate"])
def test_a_books_sidecar_changed_since_built_is_not_fresh_and_prepare_rebuilds_it(tmp_path, how):
    from tests.support.package_builder import build_package

    data = tmp_path / "data"
    package = build_package(tmp_path / "pk", book_id="one", kind="epub")
    assert run_cli("--data-dir", str(data), "init", str(package), "--json").code == 0
    before = run_cli("--data-dir", str(data), "search", "one", "water ground", "--json").json["hits"]
    sidecar = data / "books" / "one" / "lexical.sqlite"
    st = sidecar.stat()
    raw = bytearray(sidecar.read_bytes())
    if how in ("flip", "touch-back"):
        raw[len(raw) // 2] ^= 0xFF
        with open(sidecar, "r+b") as handle:
            handle.write(raw)
        if how == "touch-back":
            os.utime(sidecar, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # a different mtime: hashed
    elif how == "replaced":
        sidecar.unlink()
        sidecar.write_bytes(bytes(raw))  # the same bytes under another inode: not the file built
    elif how == "truncate":
        os.truncate(sidecar, len(raw) // 2)
    else:
        sidecar.unlink()
        os.mkfifo(sidecar)
    status = run_cli("--data-dir", str(data), "status", "one", "--json")
    assert status.code in (0, 1) and status.error_code != "cli.internal_error"
    searched = run_cli("--data-dir", str(data), "search", "one", "water ground", "--json")
    assert searched.code in (0, 1) and searched.error_code != "cli.internal_error"
    if searched.code == 0:
        assert searched.json["channels"]["lexical"]["status"] != "ok" or searched.json["hits"] == before
    prepared = run_cli("--data-dir", str(data), "prepare", "one", "--json")
    assert prepared.code == 0, prepared.stdout
    assert prepared.json["lexical"]["built"] is (how != "replaced")  # the same bytes, hashed, are sound
    after = run_cli("--data-dir", str(data), "search", "one", "water ground", "--json").json
    assert after["channels"]["lexical"]["status"] == "ok" and after["hits"] == before


def test_a_process_serving_a_stale_index_picks_up_a_rebuild_by_another_at_its_next_search(library, tmp_path):
    from book_agent.agent import build_agent
    from tests.support.library_support import corpus, make_book

    data, _ = library
    lock = data / "library" / ".build.lock"
    with build_agent(data) as server:
        lock.unlink()
        lock.mkdir()  # no writer can bring the index up to date: the registration's own update fails
        server.init(make_book(tmp_path / "late", "late", corpus(40)[30:]))
        assert server.search("@all", "river water")["library"]["lexical_index"].get("stale")
        lock.rmdir()
        with build_agent(data) as admin:
            admin.prepare("@all")  # the writable side rebuilds
        time.sleep(GENERATION_RECHECK_S)  # the server's next look at the generation in place
        picked = server.search("@all", "river water")
        assert "stale" not in picked["library"]["lexical_index"]
        assert any(h["book_id"] == "late" for h in server.search("@all", "river water", top_k=40)["hits"])
