"""Time PackageInspector.inspect(verify_hashes=True) on a 20,000 x 1,024 package.

    .venv/bin/python tools/bench/bench_inspection.py [--records N] [--dims D] [--repeat R]
                                               [--package DIR] [--json]

Builds the package with tests/support/package_builder.py (an EPUB book, random unit vectors) in a
temporary folder, or reuses --package DIR when it already holds one (building is slow).
Prints the build time, the package size and the inspect times (best and median).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--dims", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--package", type=Path, help="build here (or reuse a package built here)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)

    from book_agent_adapters.bench import PackageInspector
    from tests.support.package_builder import build_package, synthetic_records

    with tempfile.TemporaryDirectory(prefix="bench-inspection-") as scratch:
        target = args.package or Path(scratch) / "pkg"
        build_seconds = None
        if not (target / "book-package.json").exists():
            started = time.perf_counter()
            build_package(target, kind="epub", dims=args.dims, records=synthetic_records(args.records))
            build_seconds = time.perf_counter() - started
        size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
        inspector = PackageInspector()
        times = []
        info = None
        for _ in range(args.repeat):
            started = time.perf_counter()
            info = inspector.diagnose(target, verify_hashes=True)
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        inspector.inspect(target, verify_hashes=False)
        no_hash = time.perf_counter() - started
    assert info is not None
    result = {
        "records": args.records,
        "dims": args.dims,
        "package_bytes": size,
        "build_seconds": None if build_seconds is None else round(build_seconds, 2),
        "inspect_seconds_best": round(min(times), 4),
        "inspect_seconds_median": round(statistics.median(times), 4),
        "inspect_seconds_no_hash": round(no_hash, 4),
        "repeat": args.repeat,
        "diagnostics": [d.code for d in info.diagnostics],
    }
    if args.json:
        print(json.dumps(result))
    else:
        for key, value in result.items():
            print(f"{key:>24}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
