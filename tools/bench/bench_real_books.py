"""Figures on the real books (issue 24): records verified by method at init and the time it
adds per 1,000 records, search hits by verification method, quotes a reader copies located
exactly / normalised / fuzzily, and search time with the locator sidecar and without it; for
the EPUBs, records by EPUB CFI check, search hits whose CFI the tests' own resolver turns back
into the passage, and the verification time the CFIs add per 1,000 records.

    .venv/bin/python tools/bench/bench_real_books.py [--json]

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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from book_agent.agent import BookAgent  # noqa: E402
from tests.support.cfi_resolver import epub_resolver  # noqa: E402
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


def _cfi_hits(agent: BookAgent) -> Counter[str]:
    """EPUB search hits whose epub_cfi resolves (independently) to the passage's characters."""
    counts: Counter[str] = Counter()
    for book, queries in QUERIES.items():
        original = REAL_BOOKS[book][0]
        if original.suffix != ".epub":
            continue
        for query in queries:
            for hit in agent.search(book, query, top_k=10)["hits"]:
                loc = hit["source_locator"]
                read = agent.read_source(book, loc, max_chars=200_000)
                located = read["text"][read["span_in_text"]["start"] : read["span_in_text"]["end"]]
                resolved = epub_resolver(str(original), str(loc["href"])).text(str(loc["epub_cfi"])) if loc.get("epub_cfi") else ""
                same = re.sub(r"\s+", "", resolved) == re.sub(r"\s+", "", located)
                counts["resolves" if same else "does_not_resolve"] += 1
    return counts


def _cfi_cost(tmp: Path) -> dict[str, float]:
    """Verification seconds per 1,000 records of the EPUBs without the CFIs (to compare)."""
    from book_agent_adapters.bench import EpubSource

    original = EpubSource.cfi
    EpubSource.cfi = lambda self, item, start, end: {"epub_cfi": None, "epub_cfi_start": None, "cfi": "unavailable"}  # type: ignore[method-assign]
    try:
        agent, out = BookAgent(tmp / "data-no-cfi"), {}
        for name in REAL_BOOKS:
            if REAL_BOOKS[name][0].suffix == ".epub":
                agent.init(real_package(tmp / "packages-no-cfi", name))
                out[name] = agent.status(name)["sidecars"]["locators"]["verification"]["seconds_per_1000_records"]
        agent.close()
    finally:
        EpubSource.cfi = original  # type: ignore[method-assign]
    return out


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
        cfi_hits = _cfi_hits(agent)
        quotes = {"pdf_line_end_hyphens": _pdf_hyphen_quotes(agent)}
        for name in REAL_BOOKS:
            quotes[name] = _record_quotes(agent, name, books[name]["records"])
        for name in REAL_BOOKS:
            (agent.runtime_dir(name) / "locators.sqlite").unlink()
        agent.close()
        _, live = _hit_methods(agent)  # no sidecar: every hit verified at search time
        agent.close()
        without_cfi = _cfi_cost(Path(tmp))
    return {"books": books, "hit_methods": dict(hits), "quotes": {k: dict(v) for k, v in quotes.items()},
            "epub_cfi_hits": dict(cfi_hits), "verification_s_per_1000_without_cfi": without_cfi,
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
              f"corrected {book['corrected']}, failed {book['failed_count']}, EPUB CFIs {book.get('by_cfi') or '-'}")
    print(f"EPUB search hits, CFI resolved by the tests' own resolver: {result['epub_cfi_hits']}")
    print(f"EPUB verification without CFIs (s per 1,000 records): {result['verification_s_per_1000_without_cfi']}")
    print(f"search hits by method: {result['hit_methods']}")
    for name, methods in result["quotes"].items():
        print(f"quotes {name}: {methods}")
    print(f"search p50: {result['search_p50_ms']} ms")


if __name__ == "__main__":
    main()
