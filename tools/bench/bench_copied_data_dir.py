"""Time to the first search on a copied data dir (issue 48), writable and read-only.

    .venv/bin/python tools/bench/bench_copied_data_dir.py DATA [--book BOOK] [--modes cp-a,cp-r,tar] [--json]

DATA: a data dir whose books were searched once (their sidecars made), e.g. the one
tools/bench/library/bench_library.py leaves under .bench/library/. For each copy mode it copies DATA beside
itself, then times a cold `book-agent search` process on the copy: the first (which verifies
what the copy changed), the second (which trusts the remembered verdicts), and, where
`unshare -m` works, the first on the copy bind-mounted read-only (verified in memory). Each
run's hits and channel statuses are compared with the original's. Verification figures are read
from the verdicts the first search left (copies.verified.json, the library head's .verified).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLI = str(ROOT / ".venv" / "bin" / "book-agent")
COPIES = {
    "cp-a": lambda src, dst: ["cp", "-a", str(src), str(dst)],
    "cp-r": lambda src, dst: ["cp", "-r", str(src), str(dst)],
    "tar": lambda src, dst: ["sh", "-c", f"mkdir -p '{dst}' && tar -C '{src}' -cf - . | tar -C '{dst}' -xpf -"],
    "rsync-a": lambda src, dst: ["rsync", "-a", f"{src}/", f"{dst}/"],
}


def search(data: Path, book: str, vector: Path, read_only: bool = False) -> dict[str, Any]:
    argv = [CLI, "--data-dir", str(data), "search", book, "water ground", "--json", "--query-vector", str(vector)]
    if read_only:  # a private mount namespace: the copy bind-mounted onto itself, read-only
        script = f"mount --bind '{data}' '{data}' && mount -o remount,bind,ro '{data}' && exec \"$@\""
        argv = ["unshare", "-m", "sh", "-c", script, "sh", *argv]
    started = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    out = json.loads(proc.stdout or b"{}")
    return {"seconds": round(elapsed, 3), "rc": proc.returncode,
            "channels": {k: v.get("status") for k, v in out.get("channels", {}).items()},
            "hits": [h.get("evidence_id") or h.get("record_id") for h in out.get("hits", [])]}


def verification(data: Path) -> dict[str, Any]:
    files = seconds = 0.0
    size = 0
    for marker in data.rglob("copies.verified.json"):
        for verdict in json.loads(marker.read_text()).values():
            files += 1
            seconds += float(verdict.get("seconds") or 0)
            size += int(verdict.get("bytes") or 0)
    postings = 0.0
    for marker in data.rglob("*.verified"):
        postings += float(json.loads(marker.read_text()).get("seconds") or 0)
    return {"files_hashed": int(files), "hashed_mb": round(size / 2**20, 1), "hash_s": round(seconds, 3),
            "postings_check_s": round(postings, 3)}


def measure(data: Path, book: str, modes: list[str], vector: Path) -> dict[str, Any]:
    original = search(data, book, vector)
    figures: dict[str, Any] = {"original_warm": original}
    for mode in modes:
        if mode == "rsync-a" and shutil.which("rsync") is None:
            figures[mode] = "rsync not installed"
            continue
        copy = data.with_name(data.name + f"-copy-{mode}")
        shutil.rmtree(copy, ignore_errors=True)
        subprocess.run(COPIES[mode](data, copy), check=True)
        read_only = search(copy, book, vector, read_only=True) if os.geteuid() == 0 else None
        first = search(copy, book, vector)
        second = search(copy, book, vector)
        figures[mode] = {"read_only_first": read_only, "first": first, "second": second,
                         "same_hits": all(r is None or r["hits"] == original["hits"] for r in (read_only, first, second)),
                         "verification": verification(copy)}
        shutil.rmtree(copy, ignore_errors=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--book", default="@all")
    parser.add_argument("--modes", default="cp-a,cp-r,tar")
    parser.add_argument("--dims", type=int, default=384)
    args = parser.parse_args()
    import numpy as np

    vector = args.data.with_name("query-vector.json")
    v = np.random.default_rng(5).standard_normal(args.dims)
    vector.write_text(json.dumps(list(map(float, v / np.linalg.norm(v)))))
    figures = measure(args.data.resolve(), args.book, args.modes.split(","), vector)
    figures["load_average"] = os.getloadavg()
    json.dump(figures, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
