"""Figures on the real books (issue 24): records verified by method at init and the time it
adds per 1,000 records, search hits by verification method, quotes a reader copies located
exactly / normalised / fuzzily, and search time with the locator sidecar and without it.

    .venv/bin/python tools/bench_real_books.py [--json]

Packages are built the way an upstream pipeline would (tests/support/real_books.py) from the
books in tests/support/data/real_books/ (licences beside them) and examples/the-art-of-war/.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from book_agent.agent import BookAgent  # noqa: E402
from tests.support.real_books import LSHORT_PDF, REAL_BOOKS, pdf_page_texts, real_package  # noqa: E402

QUERIES = {"lshort-zh-cn": ["数学公式", "表格 tabular", "Comprehensive TeX Archive Network", "宏包 hyperref", "页眉页脚",
                            "参考文献 BibTeX", "字体 fontspec", "插图 graphicx"],
           "devils-dictionary": ["lawyer", "marriage", "politics", "a person who talks when you wish him to listen",
                                 "religion", "love", "war", "money"],
           "art-of-war-real": ["spies", "知己知彼", "the art of war is of vital importance", "terrain", "fire attack",
                               "deception", "generals", "supplies"]}


def _hit_methods(agent: BookAgent) -> tuple[Counter[str], float]:
    methods: Counter[str] = Counter()
    elapsed: list[float] = []
    for book, queries in QUERIES.items():
        for query in queries:
            result = agent.search(book, query, top_k=10)
            elapsed.append(result["elapsed_ms"])
            methods.update(h["source_locator"]["verification"]["method"] for h in result["hits"])
    return methods, sorted(elapsed)[len(elapsed) // 2]


def _pdf_hyphen_quotes(agent: BookAgent) -> Counter[str]:
    """Quotes across each U+FFFE of the PDF, as four kinds of reader copy them."""
    methods: Counter[str] = Counter()
    for _, _, text in pdf_page_texts(LSHORT_PDF):
        for found in re.finditer("\ufffe", text):
            window = text[max(0, found.start() - 40) : found.end() + 40]
            flat = re.sub(r"\s+", " ", window).strip()
            for quote in (window, flat.replace("\ufffe", ""), flat.replace("\ufffe", "-"),
                          flat.replace("\ufffe", "-\n")):
                methods[_method(agent, "lshort-zh-cn", quote)] += 1
    return methods


def _method(agent: BookAgent, book: str, quote: str) -> str:
    from book_agent.domain.errors import BookAgentError

    try:
        return str(agent.locate_source(book, quote)["verification"]["method"])
    except BookAgentError as exc:
        return exc.code


def _record_quotes(agent: BookAgent, book: str, count: int) -> Counter[str]:
    """The middle half of 100 records' texts (as the pipeline extracted them)."""
    methods: Counter[str] = Counter()
    for index in range(0, count, max(1, count // 100)):
        words = agent.read_entry(book, f"{book}-{index:05d}")["text"].split(" ")
        if len(words) >= 8:
            methods[_method(agent, book, " ".join(words[len(words) // 4 : 3 * len(words) // 4]))] += 1
    return methods


def measure() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        agent = BookAgent(Path(tmp) / "data")
        books: dict[str, Any] = {}
        for name in REAL_BOOKS:
            root = real_package(Path(tmp) / "packages", name)
            started = time.perf_counter()
            agent.init(root)
            check = agent.status(name)["sidecars"]["locators"]["verification"]
            books[name] = {"init_s": round(time.perf_counter() - started, 2), **check}
        hits, with_sidecar = _hit_methods(agent)
        quotes = {"pdf_line_end_hyphens": _pdf_hyphen_quotes(agent)}
        for name in REAL_BOOKS:
            quotes[name] = _record_quotes(agent, name, books[name]["records"])
        for name in REAL_BOOKS:
            (agent.runtime_dir(name) / "locators.sqlite").unlink()
        agent.close()
        _, live = _hit_methods(agent)  # no sidecar: every hit verified at search time
        agent.close()
    return {"books": books, "hit_methods": dict(hits), "quotes": {k: dict(v) for k, v in quotes.items()},
            "search_p50_ms": {"with_sidecar": with_sidecar, "verified_live": live}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure()
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    for name, book in result["books"].items():
        print(f"{name}: {book['records']} records, init {book['init_s']} s, verification {book['seconds']} s "
              f"({book['seconds_per_1000_records']} s per 1,000), by method {book['by_method']}, "
              f"corrected {book['corrected']}, failed {book['failed_count']}")
    print(f"search hits by method: {result['hit_methods']}")
    for name, methods in result["quotes"].items():
        print(f"quotes {name}: {methods}")
    print(f"search p50: {result['search_p50_ms']} ms")


if __name__ == "__main__":
    main()
