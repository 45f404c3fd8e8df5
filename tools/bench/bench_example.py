"""Figures for the example book: cold CLI search wall time and the eval harness on three sets.

    python tools/bench/bench_example.py [--runs 10] [--json]

Cold search: `book-agent --data-dir TMP search art-of-war QUERY --json`, a new process each
run (imports, registry, model load and query encoding included). Eval: BookAgent.evaluate
(recall@10, MRR@10, nDCG@10 per channel) on the example book and the two test books
(tests/support/data/eval_books), with the rows where hybrid scores below the best single channel.
Local encoder figures come from tools/bench/search/bench_local_encoder.py (run it too).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "examples" / "art-of-war-package"
QUESTIONS = ROOT / "examples" / "art-of-war.questions.jsonl"
CLI = Path(sys.executable).parent / "book-agent"
QUERY = "know the enemy and know yourself"


def cold_search(data_dir: Path, runs: int) -> dict[str, Any]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        out = subprocess.run([str(CLI), "--data-dir", str(data_dir), "search", "art-of-war", QUERY, "--json"],
                             capture_output=True, text=True, check=True)
        times.append(time.perf_counter() - started)
        json.loads(out.stdout)
    return {"query": QUERY, "runs": runs, "median_s": round(statistics.median(times), 3),
            "min_s": round(min(times), 3), "max_s": round(max(times), 3)}


def losses(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Questions where hybrid nDCG@10 is below the better single channel's."""
    out = []
    for row in result["per_question"]:
        best = max(row["lexical"]["ndcg@10"], row["vector"]["ndcg@10"])
        if row["hybrid"]["ndcg@10"] < best - 1e-9:
            out.append({"query": row["query"], **{c: row[c]["ndcg@10"] for c in ("lexical", "vector", "hybrid")}})
    return out


def evaluate_all(data_dir: Path, work: Path) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))  # the test helpers: tests.support
    from book_agent.agent import BookAgent
    from tests.support.eval_books import BOOKS, build_eval_book, questions_path

    sets = [("art-of-war", PACKAGE, QUESTIONS)]
    sets += [(f"eval-{name}", build_eval_book(name, work / name), questions_path(name)) for name in BOOKS]
    out: dict[str, Any] = {}
    with BookAgent(data_dir) as agent:
        for label, package, questions in sets:
            book_id = agent.init(package, replace=True)["book_id"]
            result = agent.evaluate(book_id, questions, k=10)
            out[label] = {"questions": result["questions"], "summary": result["summary"],
                          "hybrid_at_least_best_single_ndcg": result["hybrid_at_least_best_single_ndcg"],
                          "hybrid_losses": losses(result)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        subprocess.run([str(CLI), "--data-dir", str(data_dir), "init", str(PACKAGE), "--json"],
                       capture_output=True, check=True)
        report = {"cold_search": cold_search(data_dir, args.runs), "eval": evaluate_all(data_dir, Path(tmp))}
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    cold = report["cold_search"]
    print(f"cold `book-agent search art-of-war {QUERY!r} --json`: median {cold['median_s']} s "
          f"(min {cold['min_s']}, max {cold['max_s']}, {cold['runs']} runs)")
    for label, data in report["eval"].items():
        print(f"\n{label} ({data['questions']} questions)   channel  nDCG@10  MRR@10  recall@10")
        for channel, m in data["summary"].items():
            print(f"  {channel:8s} {m['ndcg@10']:7.3f} {m['mrr@10']:7.3f} {m['recall@k']:9.3f}")
        for row in data["hybrid_losses"]:
            print(f"  hybrid below best single: {row['query'][:60]!r} L {row['lexical']:.2f} "
                  f"V {row['vector']:.2f} H {row['hybrid']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
