"""Warm Chinese searches with and without the query's word weights (issue 28, item 5), interleaved.

    .venv/bin/python tools/bench/search/bench_segmenter.py [--sets cmdd-im,drcd,xquad-zh] [--queries 60] [--rounds 3]
    .venv/bin/python tools/bench/search/bench_segmenter.py --example [--rounds 20]

One process, one book per eval set (tools/eval/eval_sets.py), the split's questions with their cached
query vectors (the encoder's time is not the segmenter's): each question is searched with jieba's
weights on (the product) and off (`segment` None: every bigram once, v0.2), alternating which
goes first, after a warm-up pass of both. p50 of each and their ratio, the load average before
and after. Also the lexical channel alone (`FtsLexicalIndex.search`, depth 50), where the
difference lies. The segmenter's dictionary is loaded before timing (the warm-up's job).
`--example`: the example book (examples/art-of-war-package, registered in a temporary data dir)
and those of its questions that hold a CJK run, each encoded once before timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from book_agent_adapters.bench import fts_lexical_index, segment_chinese
from tools.eval.eval_sets import WORK_DIR, load_set, query_vectors, registered_book


def _switch(on: bool) -> None:
    fts_lexical_index.segment_chinese = segment_chinese if on else None  # type: ignore[assignment]


def _timed(call: Any) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def eval_set_questions(name: str, agent: Any, queries: int) -> tuple[str, list[tuple[str, list[float] | None]]]:
    eval_set = load_set(name)
    split = "test"
    book_id = registered_book(agent, eval_set, split, progress=False)
    vectors = query_vectors(eval_set, split, WORK_DIR, progress=False)
    return book_id, [(text, [float(x) for x in vector])
                     for (_, text, _), vector in zip(eval_set.questions(split)[:queries], vectors, strict=False)]


def example_questions(agent: Any) -> tuple[str, list[tuple[str, list[float] | None]]]:
    import json

    from book_agent.domain.search.lexical_text import CJK_RUN

    root = Path(__file__).resolve().parents[3] / "examples"
    book_id = agent.init(root / "art-of-war-package")["book_id"]
    texts = [json.loads(line)["query"] for line in (root / "art-of-war.questions.jsonl").read_text("utf-8").splitlines()
             if line.strip()]
    runtime = agent.books.open(book_id).searcher().channels.query_runtime
    asked = [text for text in texts if any(len(run) > 1 for run in CJK_RUN.findall(text))]
    vectors = [runtime.encode_query(text).vector if runtime is not None else None for text in asked]
    return book_id, [(text, [float(x) for x in vector] if vector is not None else None)
                     for text, vector in zip(asked, vectors, strict=True)]


def bench(book_id: str, asked: list[tuple[str, list[float] | None]], agent: Any, rounds: int) -> dict[str, float]:
    searcher = agent.books.open(book_id).searcher()
    lexical = searcher.channels.lexical
    times: dict[str, list[float]] = {"search on": [], "search off": [], "lexical on": [], "lexical off": []}
    for i, (text, vector) in enumerate(asked * (rounds + 1)):
        order = (True, False) if i % 2 == 0 else (False, True)
        for on in order:
            _switch(on)
            search = _timed(lambda: searcher.search(text, top_k=6, query_vector=vector))  # noqa: B023
            channel = _timed(lambda: lexical.search(text, 50))  # noqa: B023
            if i >= len(asked):  # the first pass warms both variants
                label = "on" if on else "off"
                times[f"search {label}"].append(search)
                times[f"lexical {label}"].append(channel)
    _switch(True)
    return {label: statistics.median(values) for label, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="cmdd-im,drcd,xquad-zh")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--example", action="store_true", help="the example book's Chinese questions")
    args = parser.parse_args()
    import tempfile

    from book_agent import BookAgent

    segment_chinese("预热")  # the dictionary, loaded before any timing
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as scratch, BookAgent(Path(scratch) if args.example else WORK_DIR / "data") as agent:
        names = ["example"] if args.example else [s.strip() for s in args.sets.split(",") if s.strip()]
        for name in names:
            book_id, asked = example_questions(agent) if args.example else eval_set_questions(name, agent, args.queries)
            p50 = bench(book_id, asked, agent, args.rounds)
            print(f"{name:10s} {len(asked)} questions: search p50 on/off {p50['search on']:.1f} / {p50['search off']:.1f} ms "
                  f"(x{p50['search on'] / p50['search off']:.3f}); lexical channel {p50['lexical on']:.2f} / "
                  f"{p50['lexical off']:.2f} ms (x{p50['lexical on'] / p50['lexical off']:.3f})", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
