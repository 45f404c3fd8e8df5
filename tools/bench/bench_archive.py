"""Archive import figures: the hostile corpus, then throughput and peak memory.

    .venv/bin/python tools/bench/bench_archive.py [--megabytes 100] [--quick] [--json]

1. Builds every archive of tests/support/hostile_archives.py (--quick skips the slow ones) and
   imports each into a fresh managed folder: the error code, whether anything appeared
   outside the managed folder, and whether anything was left inside it.
2. Builds a package-like folder of --megabytes MB (random "PDF", float32 "index", text
   "book.md"), archives it as zip, tar.gz and tar, and imports each in a child process:
   wall time, MB/s (uncompressed bytes written per second) and the child's peak RSS
   (VmHWM, or ru_maxrss off Linux) next to its peak before importing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support

CHILD = r"""
import json, resource, sys, time
from book_agent_adapters.bench import import_archive
import zipfile, tarfile, gzip  # warm imports (import_archive, above, imported the archive readers)

def peak_kib():
    # VmHWM is this process's own high-water mark; ru_maxrss on Linux carries the
    # parent's peak across fork/exec, which would report the benchmark's own memory.
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

before = peak_kib()
started = time.perf_counter()
dest = import_archive(sys.argv[1], sys.argv[2])
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "rss_before_kib": before, "rss_peak_kib": peak_kib()}))
"""


def snapshot(root: Path) -> set[tuple[str, int]]:
    out = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            out.add((str(path.relative_to(root)), path.lstat().st_size if path.is_file() else 0))
    return out


def run_corpus(quick: bool) -> dict[str, Any]:
    from book_agent.domain.errors import BookAgentError
    from book_agent_adapters.bench import ArchiveLimits, import_archive, remove_tree
    from tests.support.hostile_archives import CORPUS

    rows = []
    for item in CORPUS:
        if quick and item.slow:
            continue
        scratch = Path(tempfile.mkdtemp(prefix="bench-hostile-"))
        try:
            (scratch / "archives").mkdir()
            managed = scratch / "managed"
            managed.mkdir()
            archive = item.build(scratch / "archives", scratch)
            before = snapshot(scratch)
            started = time.perf_counter()
            try:
                import_archive(archive, managed, ArchiveLimits(**item.limits))
                code = None
            except BookAgentError as exc:
                code = exc.code
            seconds = time.perf_counter() - started
            after = snapshot(scratch)
            left_inside = len(list(managed.iterdir()))
            outside = {p for p, _ in after ^ before if not p.startswith("managed/")}
            rows.append({
                "kind": item.kind, "expected": item.code, "code": code,
                "refused_as_expected": code == item.code, "files_outside": len(outside),
                "left_behind": left_inside, "seconds": round(seconds, 4),
            })
        finally:
            remove_tree(scratch)
    return {
        "kinds": len(rows),
        "refused_as_expected": sum(r["refused_as_expected"] for r in rows),
        "distinct_codes": len({r["code"] for r in rows}),
        "files_outside_total": sum(r["files_outside"] for r in rows),
        "left_behind_total": sum(r["left_behind"] for r in rows),
        "rows": rows,
    }


def make_package(folder: Path, megabytes: int) -> int:
    import numpy as np

    rng = np.random.default_rng(3)
    total = megabytes << 20
    (folder / "original").mkdir(parents=True)
    (folder / "original" / "book.pdf").write_bytes(rng.bytes(total // 2))
    vectors = rng.standard_normal((total * 2 // 5) // 4).astype(np.float32)
    (folder / "index.sqlite").write_bytes(vectors.tobytes())
    words = " ".join(f"word{i % 5000} lorem ipsum dolor" for i in range(200_000)).encode()
    text = (words * (total // 10 // len(words) + 1))[: total - (total // 2) - vectors.nbytes]
    (folder / "book.md").write_bytes(text)
    (folder / "book-package.json").write_text("{}")
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def run_throughput(megabytes: int) -> list[dict[str, Any]]:
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-archive-") as scratch_name:
        scratch = Path(scratch_name)
        size = make_package(scratch / "pkg", megabytes)
        archives = {"zip": scratch / "book.zip", "tar.gz": scratch / "book.tgz", "tar": scratch / "book.tar"}
        with zipfile.ZipFile(archives["zip"], "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            for path in sorted((scratch / "pkg").rglob("*")):
                archive.write(path, "book/" + path.relative_to(scratch / "pkg").as_posix())
        for kind, mode in (("tar.gz", "w:gz"), ("tar", "w")):
            kwargs = {"compresslevel": 1} if kind == "tar.gz" else {}
            with tarfile.open(archives[kind], mode, **kwargs) as archive:  # type: ignore[call-overload]
                archive.add(scratch / "pkg", arcname="book")
        for kind, path in archives.items():
            managed = scratch / f"managed-{kind}"
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(path), str(managed)],
                capture_output=True, text=True, check=True, cwd=ROOT,
            )
            child = json.loads(out.stdout)
            results.append({
                "format": kind, "uncompressed_mb": round(size / 2**20, 1),
                "archive_mb": round(path.stat().st_size / 2**20, 1),
                "seconds": round(child["seconds"], 3),
                "mb_per_s": round(size / 2**20 / child["seconds"], 1),
                "rss_before_mb": round(child["rss_before_kib"] / 1024, 1),
                "rss_peak_mb": round(child["rss_peak_kib"] / 1024, 1),
            })
            from book_agent_adapters.bench import remove_tree

            remove_tree(managed)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[1])
    parser.add_argument("--megabytes", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="skip the slow corpus entries")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {
        "corpus": run_corpus(args.quick),
        "throughput": run_throughput(args.megabytes),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    corpus = result["corpus"]
    print(f"hostile corpus: {corpus['kinds']} kinds, {corpus['refused_as_expected']} refused with "
          f"the expected code ({corpus['distinct_codes']} distinct codes), "
          f"{corpus['files_outside_total']} files outside managed dir, "
          f"{corpus['left_behind_total']} left behind")
    for row in corpus["rows"]:
        mark = "ok " if row["refused_as_expected"] else "BAD"
        print(f"  {mark} {row['kind']:<40} {row['code']}  ({row['seconds']} s)")
    for row in result["throughput"]:
        print(f"import {row['format']:<7} {row['uncompressed_mb']} MB (archive {row['archive_mb']} MB): "
              f"{row['seconds']} s, {row['mb_per_s']} MB/s, peak RSS {row['rss_peak_mb']} MB "
              f"(before import {row['rss_before_mb']} MB)")
    return 0 if corpus["refused_as_expected"] == corpus["kinds"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
