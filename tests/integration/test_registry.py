"""The registry: atomic writes under a cross-process lock; eight concurrent inits lose nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent import BookAgentError
from book_agent.adapters.storage.json_registry import JsonRegistry
from tests.support.package_builder import RecordSpec, build_package


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


@pytest.mark.slow
def test_eight_processes_running_init_at_once_lose_no_entry(tmp_path):
    packages = []
    for i in range(8):
        records = [RecordSpec(f"r{i}", f"book number {i} about rivers", ["h"], 0)]
        packages.append(build_package(tmp_path / f"p{i}", book_id=f"book-{i}", kind="epub", records=records, dims=4))
    data = tmp_path / "data"
    env = {**os.environ, "BOOK_AGENT_HOME": str(data)}
    procs = [subprocess.Popen([sys.executable, "-m", "book_agent", "init", str(p), "--json"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in packages]
    outputs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outputs]
    registry = json.loads((data / "registry.json").read_text(encoding="utf-8"))
    assert sorted(registry["books"]) == [f"book-{i}" for i in range(8)]
