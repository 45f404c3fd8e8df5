"""Benchmark of the sources role: render, cached render, read_source, locate, verification share.

Builds (in a temp dir) a 500-page PDF package with tests/support/package_builder.py, plus the small
sample PDF and EPUB packages, and prints p50/p95 timings in milliseconds.
Usage: .venv/bin/python tools/bench/bench_sources.py [--json] [--pages 500]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support

from book_agent_adapters.bench import SourceResolver  # noqa: E402
from tests.support.package_builder import RecordSpec, build_package, synthetic_records  # noqa: E402
from tests.support.sources_support import package_info  # noqa: E402


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50": round(statistics.median(ordered), 3), "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
            "n": len(ordered)}


def big_records(pages: int, per_page: int = 4) -> list[RecordSpec]:
    records = synthetic_records(pages * per_page, seed=5, words=40)
    return [RecordSpec(r.record_id, r.text, r.headings, i // per_page) for i, r in enumerate(records)]


def verified_share(resolver: SourceResolver, record_ids: list[str]) -> dict[str, Any]:
    methods: dict[str, int] = {}
    for rid in record_ids:
        method = resolver.locate({"record_id": rid})["verification"]["method"]
        methods[method] = methods.get(method, 0) + 1
    good = methods.get("exact", 0) + methods.get("normalized", 0)
    return {"records": len(record_ids), "exact_or_normalized": good, "share": round(good / len(record_ids), 4),
            "methods": methods}


def run(pages: int) -> dict[str, Any]:
    rng = random.Random(7)
    results: dict[str, Any] = {"pages": pages}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        t = time.perf_counter()
        records = big_records(pages)
        big = build_package(tmp_path / "big", kind="pdf", records=records, vectors="none", blank_page=False)
        results["build_package_s"] = round(time.perf_counter() - t, 2)
        ids = [r.record_id for r in records]
        with SourceResolver(package_info(big), tmp_path / "rt") as resolver:
            t = time.perf_counter()
            resolver.render_page(0)
            results["render_first_ms"] = round((time.perf_counter() - t) * 1000, 2)
            page_iter = iter(rng.sample(range(1, pages), 30))
            results["render_150dpi_ms"] = stats(timed(lambda: resolver.render_page(next(page_iter), dpi=150), 30))
            results["render_cached_ms"] = stats(timed(lambda: resolver.render_page(5, dpi=150), 50))
            cold_ids = iter(rng.sample(ids, 200))
            results["locate_record_cold_page_ms"] = stats(timed(lambda: resolver.locate({"record_id": next(cold_ids)}), 200))
            warm = rng.sample(ids, 200)
            for rid in warm:
                resolver.locate({"record_id": rid})
            warm_iter = iter(warm)
            results["locate_record_warm_ms"] = stats(timed(lambda: resolver.locate({"record_id": next(warm_iter)}), 200))
            locators = [resolver.locate({"record_id": rid}) for rid in rng.sample(ids, 200)]
            loc_iter = iter(locators)
            results["read_source_ms"] = stats(timed(lambda: resolver.read_source(next(loc_iter)), 200))
            t = time.perf_counter()
            resolver.locate(records[-1].text[5:80])  # first whole-book quote: normalises every page
            results["locate_quote_first_whole_book_ms"] = round((time.perf_counter() - t) * 1000, 2)
            quotes = iter([r.text[3:70] for r in rng.sample(records, 50)])
            results["locate_quote_whole_book_ms"] = stats(timed(lambda: resolver.locate(next(quotes)), 50))
            results["verified_big_pdf"] = verified_share(resolver, ids)
        for kind in ("pdf", "epub"):
            root = build_package(tmp_path / f"sample-{kind}", kind=kind)
            with SourceResolver(package_info(root), tmp_path / f"rt-{kind}") as resolver:
                from tests.support.package_builder import SAMPLE_RECORDS

                results[f"verified_sample_{kind}"] = verified_share(resolver, [r.record_id for r in SAMPLE_RECORDS])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--pages", type=int, default=500)
    args = parser.parse_args()
    results = run(args.pages)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for key, value in results.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        print(f"{key:36s} {value}")


if __name__ == "__main__":
    main()
