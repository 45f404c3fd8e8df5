"""Warm Chinese searches with and without the query's word weights (issue 28, item 5), interleaved.

    .venv/bin/python tools/bench_segmenter.py [--sets cmdd-im,drcd,xquad-zh] [--queries 60] [--rounds 3]

One process, one book per eval set (tools/eval_sets.py), the split's questions with their cached
query vectors (the encoder's time is not the segmenter's): each question is searched with jieba's
weights on (the product) and off (`segment` None: every bigram once, v0.2), alternating which
goes first, after a warm-up pass of both. p50 of each and their ratio, the load average before
and after. Also the lexical channel alone (`FtsLexicalIndex.search`, depth 50), where the
difference lies. The segmenter's dictionary is loaded before timing (the warm-up's job).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from eval_sets import WORK_DIR, load_set, query_vectors, registered_book

from book_agent_adapters.storage import fts_lexical_index
from book_agent_adapters.storage.cjk_words import segment_chinese


def _switch(on: bool) -> None:
    fts_lexical_index.segment_chinese = segment_chinese if on else None  # type: ignore[assignment]


def _timed(call: Any) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def bench(name: str, agent: Any, queries: int, rounds: int) -> dict[str, float]:
    eval_set = load_set(name)
    split = "test"
    book_id = registered_book(agent, eval_set, split, progress=False)
    vectors = query_vectors(eval_set, split, WORK_DIR, progress=False)
    asked = [(text, [float(x) for x in vector])
             for (_, text, _), vector in zip(eval_set.questions(split)[:queries], vectors, strict=False)]
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
    args = parser.parse_args()
    from book_agent import BookAgent

    segment_chinese("预热")  # the dictionary, loaded before any timing
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with BookAgent(WORK_DIR / "data") as agent:
        for name in [s.strip() for s in args.sets.split(",") if s.strip()]:
            p50 = bench(name, agent, args.queries, args.rounds)
            print(f"{name:10s} search p50 on/off {p50['search on']:.1f} / {p50['search off']:.1f} ms "
                  f"(x{p50['search on'] / p50['search off']:.3f}); lexical channel {p50['lexical on']:.2f} / "
                  f"{p50['lexical off']:.2f} ms (x{p50['lexical on'] / p50['lexical off']:.3f})", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
