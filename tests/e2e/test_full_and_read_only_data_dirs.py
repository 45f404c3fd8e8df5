"""The CLI on a data dir that fills up, and on one mounted read-only: every command answers or
prints its coded error (never a signal, never `cli.internal_error`), nothing half-written is
left, and the last good library index keeps serving.

Real file systems: tmpfs mounts of a few sizes and a read-only bind mount, made in a private
mount namespace (`unshare -rm`: no privilege needed where user namespaces are allowed). A test
without namespaces here is skipped locally and fails under CI=true (tests/support/parts.py).
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.services.library.search import Library
from tests.support import REPO_ROOT
from tests.support.library_support import WORDS, make_book
from tests.support.package_builder import SAMPLE_RECORDS, RecordSpec, build_package
from tests.support.parts import require_real_part

UNSHARE = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]


def namespaces_work(tmp_path: Path) -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    (tmp_path / "probe").mkdir()
    probe = subprocess.run([*UNSHARE, "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {tmp_path / 'probe'} && "
                            f"mount --bind {tmp_path} {tmp_path} && mount -o remount,bind,ro {tmp_path}"],
                           capture_output=True, timeout=30, check=False)
    return probe.returncode == 0


def coded_or_ok(step: dict) -> dict | None:
    """The step's JSON output; fails on a signal, a non-JSON stdout or an uncoded error."""
    assert step["rc"] in (0, 1), f"{step['args']} ended with {step['rc']} (a signal?): {step['stderr']}"
    out = json.loads(step["stdout"])
    error = out.get("error") if isinstance(out, dict) else None
    if step["rc"] == 1:
        assert error and error["code"] != "cli.internal_error", f"{step['args']}: {step['stdout']}"
        assert error.get("remediation")
    return out


def two_books(root: Path, n: int) -> Path:
    rng = random.Random(3)
    for b in range(2):
        records = [RecordSpec(f"r{i}", " ".join(rng.choices(WORDS, k=12)) + f" w{b}x{i}", ["H"], 0)
                   for i in range(n)]
        make_book(root, f"book-{b}", records)
    return root


@pytest.mark.slow
def test_a_full_disk_gives_coded_errors_leaves_nothing_half_written_and_keeps_the_last_index(tmp_path):
    require_real_part(namespaces_work(tmp_path), "unshare -rm with tmpfs mounts")
    packages = two_books(tmp_path / "packages", 3000)
    report = tmp_path / "report.json"
    # KiB: no room for the first library index / book-1 cannot register / the index cannot grow / room
    sizes = ["1800", "2600", "3000", "8000"]
    subprocess.run([*UNSHARE, sys.executable, "-m", "tests.support.full_disk", str(packages), str(tmp_path / "w"),
                    str(report), *sizes], cwd=REPO_ROOT, check=True, timeout=900)
    no_space = 0
    for run in json.loads(report.read_text()):
        outputs = [coded_or_ok(step) for step in run["steps"]]
        codes = [(o.get("error") or {}).get("code") for o in outputs]
        no_space += codes.count("storage.no_space")
        debris = [f for f in run["library_files"] if f.startswith(".") and f != ".build.lock"]
        postings = [f for f in run["library_files"] if f.startswith("postings-")]
        deltas = [f for f in run["library_files"] if f.startswith("lexical-delta-")]  # books added to the base
        assert debris == [] and len(postings) == (2 + 2 * len(deltas) if postings else 0)
        assert not [f for f in run["terms_files"] if f.startswith(".")]
        if "error" in outputs[1]:  # not even the first index fits: nothing to serve, each search says why
            assert all(o["error"]["code"] == "storage.no_space" for o in outputs[1::2])
            assert all(found.get("error") == "storage.no_space" for found in run["in_process"])
            continue
        for output in outputs[1::2]:  # the searches: the last good index answers
            assert output["hits"] and output["channels"]["lexical"]["status"] == "ok"
        stale = outputs[3]["library"]["lexical_index"].get("stale")
        # no_space: a search found the index could not grow; index_pending: the registration could
        # not add book-1 (a full disk), so the generation in place serves without it, and says so
        assert stale is None or stale["code"] in ("storage.no_space", "lexical.index_pending")
        assert all(found.get("hits") for found in run["in_process"]), run["in_process"]
    assert no_space >= 2  # the sizes reach the full disk (else this test would prove nothing)


@pytest.mark.slow
@pytest.mark.parametrize("limit_kb", [0, 8, 64, 160, 320, 640])
def test_a_file_size_limit_at_every_write_gives_coded_errors(tmp_path, limit_kb):
    """RLIMIT_FSIZE makes every write past the limit fail (EFBIG), whatever file it is: the
    registry, config, sidecars, term counts, the postings' allocation, the head."""
    packages = two_books(tmp_path / "packages", 1500)
    data = tmp_path / "data"

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_kb * 1024, limit_kb * 1024))

    def cli(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), *args, "--json"],
                              capture_output=True, timeout=300, check=False, cwd=REPO_ROOT, preexec_fn=limited)
        return {"args": args, "rc": proc.returncode, "stdout": proc.stdout.decode(), "stderr": proc.stderr.decode()}

    first = coded_or_ok(cli("init", str(packages / "book-0")))
    searched = coded_or_ok(cli("search", "@all", "river"))
    coded_or_ok(cli("init", str(packages / "book-1")))
    again = coded_or_ok(cli("search", "@all", "river"))
    coded_or_ok(cli("prepare", "@all"))
    if "error" not in first and "error" not in searched:
        assert again["hits"]  # the last good index serves
    leftovers = [p.name for p in (data / "library").glob(".*") if p.name != ".build.lock"] \
        if (data / "library").is_dir() else []
    assert leftovers == []


@pytest.mark.slow
def test_every_command_on_a_read_only_data_dir_answers_or_gives_a_coded_error(tmp_path):
    require_real_part(namespaces_work(tmp_path), "unshare -m with a read-only bind mount")
    from book_agent import BookAgent

    packages = tmp_path / "pk"
    pdf = build_package(packages / "pdf-book", book_id="pdf-book", kind="pdf")
    build_package(packages / "new-book", book_id="new-book", kind="epub")
    with BookAgent(tmp_path / "data") as agent:
        agent.init(pdf)
        agent.init(build_package(packages / "epub-book", book_id="epub-book", kind="epub"))
        agent.search("@all", "water")
        # `late` is registered but not in the library's index (its update failed, as on a full
        # disk), so the read-only replica below serves a stale library
        no_room = BookAgentError("storage.no_space", "no space left on the device")
        with mock.patch.object(Library, "update", side_effect=no_room):
            agent.init(build_package(packages / "late", book_id="late", kind="epub", records=SAMPLE_RECORDS[:4]))
    report = tmp_path / "ro" / "report.json"
    report.parent.mkdir()
    subprocess.run([*UNSHARE, sys.executable, "-m", "tests.support.read_only_dir", str(tmp_path / "data"),
                    str(packages), str(report)], cwd=REPO_ROOT, check=True, timeout=900)
    steps = {" ".join(s["args"][:2]): s for s in json.loads(report.read_text())}
    outputs = {name: coded_or_ok(step) for name, step in steps.items()}
    assert outputs["search @all"]["hits"] and outputs["search @all"]["library"]["lexical_index"]["stale"]
    assert (outputs["prepare @all"]["error"]["code"]) == "storage.read_only"
    for fresh in ("prepare pdf-book", "prepare late"):  # nothing to build: answered, not refused
        assert "error" not in outputs[fresh], outputs[fresh]
        assert outputs[fresh]["lexical"]["built"] is False and outputs[fresh]["locators"]["built"] is False
    assert all("error" not in outputs[name] for name in ("list", "search pdf-book", "read pdf-book", "skill pdf-book"))
