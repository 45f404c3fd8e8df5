"""The registry: atomic writes under a cross-process lock; eight concurrent inits lose nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent import BookAgentError
from book_agent_adapters.registry.json_registry import JsonRegistry


def test_put_get_list_remove(tmp_path):
    registry = JsonRegistry(tmp_path)
    registry.put({"book_id": "a", "package_root": "/x"})
    registry.put({"book_id": "b", "package_root": "/y"})
    assert [e["book_id"] for e in registry.list()] == ["a", "b"]
    registry.remove("a")
    with pytest.raises(BookAgentError) as info:
        registry.get("a")
    assert info.value.code == "book.not_registered" and "b" in info.value.remediation


def test_corrupt_registry_is_reported_not_overwritten(tmp_path):
    registry = JsonRegistry(tmp_path)
    registry.path.write_text("{broken", encoding="utf-8")
    with pytest.raises(BookAgentError) as info:
        registry.put({"book_id": "a", "package_root": "/x"})
    assert info.value.code == "registry.corrupt"
    assert registry.path.read_text(encoding="utf-8") == "{broken"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from("abcdef"), max_size=12))
def test_registry_holds_exactly_what_was_put(tmp_path_factory, ids):
    registry = JsonRegistry(tmp_path_factory.mktemp("reg"))
    for book_id in ids:
        registry.put({"book_id": book_id, "package_root": "/same"})
    assert [e["book_id"] for e in registry.list()] == sorted(set(ids))
    assert not list(registry.path.parent.glob(".registry.json.*.tmp"))  # no temp file left behind




def test_reads_are_cached_while_the_file_is_the_same_and_see_every_change(tmp_path, monkeypatch):
    import json

    from book_agent_adapters.registry import json_registry

    reader, writer = JsonRegistry(tmp_path), JsonRegistry(tmp_path)  # a server and another process
    assert reader.list() == []
    writer.put({"book_id": "a", "package_root": "/x", "fingerprint": {"f": [1, 2, 3]}})
    parses = []
    loads = json.loads
    monkeypatch.setattr(json_registry.json, "loads", lambda text: parses.append(1) or loads(text))
    first = reader.list()
    assert [e["book_id"] for e in first] == ["a"] and len(parses) == 1
    for _ in range(5):  # the file is the same: no parse
        assert reader.get("a")["fingerprint"] is first[0]["fingerprint"]
        assert [e["book_id"] for e in reader.list()] == ["a"]
    assert len(parses) == 1
    writer.put({"book_id": "b", "package_root": "/y"})  # registered by another process: seen at once
    assert [e["book_id"] for e in reader.list()] == ["a", "b"] and reader.get("b")["package_root"] == "/y"
    writer.remove("a")  # removed: gone at once
    assert [e["book_id"] for e in reader.list()] == ["b"]
    with pytest.raises(BookAgentError) as info:
        reader.get("a")
    assert info.value.code == "book.not_registered"
    text = reader.path.read_text(encoding="utf-8")  # edited in place (same inode): seen too
    with open(reader.path, "r+", encoding="utf-8") as handle:
        handle.write(text.replace('"/y"', '"/zz"'))
    assert reader.get("b")["package_root"] == "/zz"
    reader.path.write_text("{broken", encoding="utf-8")  # a corrupt file is reported, never served stale
    with pytest.raises(BookAgentError) as info:
        reader.list()
    assert info.value.code == "registry.corrupt"
    reader.path.unlink()
    assert reader.list() == []
