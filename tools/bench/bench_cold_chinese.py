"""A cold Chinese CLI search against a cold English one on the same Chinese book (issue 41, item 4).

    .venv/bin/python tools/bench/bench_cold_chinese.py [--records 3000] [--rounds 15] [--baseline CHECKOUT]

One Chinese book (the first `--records` answers of eval/sets/cmdd-im, lexical only, so no
encoder is timed), registered in a temporary data dir; then, interleaved and rotating the order,
new processes of `book-agent --json search BOOK QUERY` with a Chinese query (jieba cuts it) and an
English one (no segmenter). The first Chinese search runs before timing: it writes the data
dir's segmenter table once (adapters/book_agent_adapters/text/cjk_prefix_dict.py), as a user's first Chinese search does.
Medians (wall and CPU) and the median of per-round ratios, load average before and after.
`--baseline`: another checkout (e.g. /work/main) measured in the same rounds on its own data dir.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools.bench.bench_cold import CLI, child_env, run_child  # noqa: E402

BOOK = "zh-cold"
QUERIES = {"chinese": "高血压患者平时饮食要注意哪些问题", "english": "blood pressure diet salt"}


def build_book(work: Path, records: int, env: dict[str, str]) -> Path:
    from tests.support.package_builder import RecordSpec, build_package

    specs = []
    with gzip.open(ROOT / "eval" / "sets" / "cmdd-im" / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        for i, line in enumerate(lines):
            if i >= records:
                break
            specs.append(RecordSpec(f"r{i}", json.loads(line)["text"] + " blood pressure" * (i % 7 == 0),
                                    [f"第{i // 50 + 1}章"], i // 50))
    root = build_package(work / "pkg", book_id=BOOK, records=specs, vectors="none", language="zh")
    data = work / "data"
    run_child([*CLI, "--data-dir", str(data), "--json", "init", str(root)], env)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline", help="another checkout, measured in the same rounds")
    args = parser.parse_args()
    env = child_env()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = build_book(work, args.records, env)
        commands = {lang: ([*CLI, "--data-dir", str(data), "--json", "search", BOOK, q], env)
                    for lang, q in QUERIES.items()}
        if args.baseline:
            old = {**env, "PYTHONPATH": f"{args.baseline}:{args.baseline}/adapters"}
            (work / "old").mkdir()
            old_data = build_book(work / "old", args.records, old)
            for lang, q in QUERIES.items():
                commands[f"baseline_{lang}"] = ([*CLI, "--data-dir", str(old_data), "--json", "search", BOOK, q], old)
        for argv, child in commands.values():  # the table (or jieba's cache) written, .pyc warm
            run_child(argv, child)
        load_before = os.getloadavg()
        names = list(commands)
        wall: dict[str, list[float]] = {k: [] for k in names}
        cpu: dict[str, list[float]] = {k: [] for k in names}
        for i in range(args.rounds):
            for name in names[i % len(names):] + names[: i % len(names)]:
                ms, _, out, cpu_ms = run_child(*commands[name])
                assert json.loads(out)["hits"], name
                wall[name].append(ms)
                cpu[name].append(cpu_ms)
        load_after = os.getloadavg()

    def ratio(a: str, b: str, series: dict[str, list[float]]) -> float:
        return round(statistics.median(x / y for x, y in zip(series[a], series[b], strict=True)), 3)

    print(f"book: {args.records} records of cmdd-im, lexical only; {args.rounds} rounds; "
          f"load {load_before[0]:.2f} -> {load_after[0]:.2f}")
    for name in names:
        print(f"  {name:18} wall median {statistics.median(wall[name]):7.1f} ms   "
              f"CPU median {statistics.median(cpu[name]):7.1f} ms")
    print(f"Chinese / English = {ratio('chinese', 'english', wall)} wall, {ratio('chinese', 'english', cpu)} CPU"
          " (target <= 1.3)")
    if args.baseline:
        print(f"baseline Chinese / English = {ratio('baseline_chinese', 'baseline_english', wall)} wall, "
              f"{ratio('baseline_chinese', 'baseline_english', cpu)} CPU")


if __name__ == "__main__":
    main()
