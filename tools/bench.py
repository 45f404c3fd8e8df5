"""`make bench`: runs every tools/bench_*.py and prints their figures, one section each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent


def main() -> int:
    only = sys.argv[1:]
    failures = 0
    for script in sorted(TOOLS.glob("bench_*.py")):
        name = script.stem.removeprefix("bench_")
        if only and name not in only:
            continue
        print(f"\n== {name} ==", flush=True)
        result = subprocess.run([sys.executable, str(script)])
        failures += result.returncode != 0
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
