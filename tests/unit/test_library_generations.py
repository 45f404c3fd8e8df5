"""The local library's one generation mechanism (adapters/.../library/local/generations.py), used
by its lexical index and its faiss indexes: a pointer read safely and replaced in one rename,
readers pinning what they opened, files no pointer names swept, a replaced generation read again."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from book_agent_adapters.library.local.generations import (
    OPEN_ATTEMPTS,
    commit_pointer,
    pinned,
    read_pointer,
    sweep,
    unnamed,
)


def test_a_pointer_is_read_only_when_it_is_a_regular_file_of_its_format(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    assert read_pointer(path, 3) == (None, "absent")
    for text, why in (("not json", "unreadable"), ("[1, 2]", "of another format"), ('{"format": 2}', "of another format"),
                      ('{"format": "3"}', "of another format"), ("\udcff", "unreadable")):
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        assert read_pointer(path, 3) == (None, why), text
    path.write_text(json.dumps({"format": 3, "files": ["a"]}), encoding="utf-8")
    assert read_pointer(path, 3) == ({"format": 3, "files": ["a"]}, "present")
    assert read_pointer(path, 3, limit=10) == (None, "unreadable")  # cut short: never half a pointer
    path.unlink()
    path.mkdir()
    assert read_pointer(path, 3) == (None, "unreadable")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_in_the_pointers_place_is_unreadable_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "index.json")  # opening it to read would block forever
    assert read_pointer(tmp_path / "index.json", 3) == (None, "unreadable")


def test_a_commit_replaces_the_pointer_in_one_rename_and_a_reader_keeps_what_it_opened(tmp_path: Path) -> None:
    path = tmp_path / "index.json"
    commit_pointer(path, {"format": 1, "generation": "a", "title": "水"}, prefix=".build-")
    assert read_pointer(path, 1)[0] == {"format": 1, "generation": "a", "title": "水"}
    pinned_old = path.open("rb")  # a reader opened generation a
    commit_pointer(path, {"format": 1, "generation": "b"}, prefix=".build-")
    assert read_pointer(path, 1)[0] == {"format": 1, "generation": "b"}
    assert json.loads(pinned_old.read())["generation"] == "a"
    pinned_old.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index.json"]  # no temp file left


def test_files_no_pointer_names_are_swept_and_a_reader_keeps_reading_its_own(tmp_path: Path) -> None:
    own = re.compile(r"group-[0-9a-f]{4}\.(faiss|ids)")
    names = ["group-aaaa.faiss", "group-aaaa.ids", "group-bbbb.faiss", "group-bbbb.ids", "other-cccc.faiss",
             "group-bbbb.faiss.tmp"]
    for name in names:
        (tmp_path / name).write_bytes(name.encode())
    reader = (tmp_path / "group-bbbb.ids").open("rb")  # a reader of the generation being replaced
    doomed = unnamed(tmp_path, own, {"group-aaaa.faiss", "group-aaaa.ids"})
    assert sorted(p.name for p in doomed) == ["group-bbbb.faiss", "group-bbbb.ids"]
    assert sorted(sweep(doomed)) == sorted(str(p) for p in doomed)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["group-aaaa.faiss", "group-aaaa.ids", "group-bbbb.faiss.tmp",
                                                         "other-cccc.faiss"]
    if sys.platform != "win32":  # POSIX keeps an unlinked file's bytes for whoever holds it open
        assert reader.read() == b"group-bbbb.ids"
    reader.close()
    by_generation = unnamed(tmp_path, re.compile(r".*\.faiss"), {"group-aaaa"}, key=lambda p: p.name.split(".")[0])
    assert [p.name for p in by_generation] == ["other-cccc.faiss"]
    assert unnamed(tmp_path / "missing", own, set()) == [] and sweep([tmp_path / "gone"]) == []


def test_a_generation_replaced_while_being_opened_is_read_again() -> None:
    seen: list[bool] = []

    def flaky(last: bool) -> str:
        seen.append(last)
        if len(seen) < 3:
            raise FileNotFoundError("a writer dropped it")
        return "opened"

    assert pinned(flaky) == "opened" and seen == [False, False, False]
    seen.clear()

    def gone(last: bool) -> str:
        seen.append(last)
        raise FileNotFoundError("always")

    with pytest.raises(FileNotFoundError):
        pinned(gone)
    assert seen == [False] * (OPEN_ATTEMPTS - 1) + [True]
    seen.clear()

    def broken(last: bool) -> str:
        seen.append(last)
        raise ValueError("damaged")

    with pytest.raises(ValueError):
        pinned(broken, attempts=2)
    assert seen == [False]  # not a replacement: no second read
