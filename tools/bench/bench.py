"""`make bench`: runs every bench_*.py under tools/bench/ (and its library/, peers/ and search/
folders) and prints their figures, one section each.

bench_peers.py runs under BENCH_PEERS_PYTHON (the Makefile's .venv-bench, which holds the peers
it compares book-agent with); without it, it is skipped and said so.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent


def main() -> int:
    only = sys.argv[1:]
    failures = 0
    for script in sorted(TOOLS.rglob("bench_*.py"), key=lambda path: path.stem):
        name = script.stem.removeprefix("bench_")
        if only and name not in only:
            continue
        print(f"\n== {name} ==", flush=True)
        python = sys.executable
        if name == "peers":
            python = os.environ.get("BENCH_PEERS_PYTHON", "")
            if not python:
                print("skipped: BENCH_PEERS_PYTHON is not set (`make bench` sets it)", flush=True)
                continue
        result = subprocess.run([python, str(script)])
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
