"""Where a warm hybrid search's time goes, stage by stage, over queries each asked once.

    .venv-bench/bin/python tools/bench/search/bench_stages.py book            # fairytaleqa's test book
    .venv-bench/bin/python tools/bench/search/bench_stages.py 100000 --runs 300

The corpora are tools/bench/peers/bench_peers.py's. The agent is built and warmed up as its book-agent stack
is. Each service call a search makes is timed by a wrapper, in one process, with no peer beside it.
Per stage: the p50 of one call and the mean per search (a stage may run more than once a search, or
not at all). Every query is new, as a user's are: a query asked again finds warm caches
(tools/bench/peers/bench_peers.py's docstring).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")

WARM = 5  # queries asked before the timed ones


def timed_stages() -> dict[str, list[float]]:
    """Wrap the search's stages with timers; returns where their seconds go."""
    from book_agent.domain.search import visual_fallback
    from book_agent.services import locators
    from book_agent.services.library import channels as library_channels
    from book_agent.services.library import search as library
    from book_agent.services.search import hybrid as search
    from book_agent_adapters.bench import faiss_group_index, impact_checks, impact_index

    spent: dict[str, list[float]] = defaultdict(list)

    def wrap(owner: Any, name: str, label: str) -> None:
        real: Callable[..., Any] = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                spent[label].append(time.perf_counter() - started)

        setattr(owner, name, timed)

    for owner, name, label in (
        (search.HybridSearch, "search", "hybrid search"),
        (search.HybridSearch, "_lexical", "lexical channel"),
        (search.HybridSearch, "_vector", "vector channel"),
        (search.HybridSearch, "_fuse", "fusion"),
        (search, "read_passages", "passage reading"),
        (search.HybridSearch, "_hits", "hits (with locators)"),
        (visual_fallback.VisualFallbackPolicy, "evaluate", "visual-fallback advice"),
        (library.Library, "searcher", "library: searcher"),
        (library_channels.LibraryRecords, "fetch", "library: records"),
        (locators.LibraryLocators, "fetch", "library: locators"),
        (impact_index.ImpactScorer, "top", "library lexical: top k"),
        (impact_index.ImpactScorer, "ids_of", "library lexical: ids"),
        (impact_checks.Postings, "verify", "library lexical: block checks"),
        (faiss_group_index.FaissGroupIndex, "_rescore", "library vectors: rescoring"),
    ):
        wrap(owner, name, label)
    return spent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("size", help="book, or a library size tools/bench/library/bench_library_vectors.py built")
    parser.add_argument("--runs", type=int, default=300, help="queries, each asked once")
    args = parser.parse_args()
    import tools.bench.peers.bench_peers as bench_peers
    corpus = bench_peers.book_corpus(args.runs) if args.size == "book" else \
        bench_peers.library_corpus(int(args.size), args.runs)
    spent = timed_stages()
    search = bench_peers.book_agent_stack(corpus)  # built and warmed up as bench_peers' stack is
    pairs = list(zip(corpus.queries, corpus.vectors, strict=True))
    for query, vector in pairs[:WARM]:
        search(query, vector)
    spent.clear()
    whole: list[float] = []
    for query, vector in pairs[WARM:]:
        started = time.perf_counter()
        search(query, vector)
        whole.append(time.perf_counter() - started)
    print(f"{corpus.name}: {len(whole)} new queries, load average {os.getloadavg()[0]:.1f}")
    print(f"  {'whole search (the API call)':32s} p50 {statistics.median(whole) * 1e3:7.3f} ms")
    for label, seconds in spent.items():
        print(f"  {label:32s} p50 {statistics.median(seconds) * 1e3:7.3f} ms, "
              f"{sum(seconds) / len(whole) * 1e3:7.3f} ms a search ({len(seconds) / len(whole):.1f} calls)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
