"""`make demo`: register the example book and show what hybrid search finds, then a real PDF.

Registers examples/art-of-war-package in the project's `.demo-data/` (replacing any earlier
registration), then runs three searches: an English question in the book's words, a Chinese
one that only the notes' Chinese text answers, and a paraphrase that shares no words with
its passage (the vector channel's job). Then it builds a package from four real PDF pages
(book-agent-build), registers it and renders a hit's page with the hit highlighted. Local only: no network, no API key.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "examples" / "art-of-war-package"
DATA_DIR = ROOT / ".demo-data"
# a real PDF: four pages of lshort-zh-cn (XeLaTeX, A4), the GFDL's own text (licence: its README)
REAL_PDF = ROOT / "tests" / "support" / "data" / "books" / "lshort-zh-cn-gfdl-pages.pdf"
PDF_QUERY = "what are Invariant Sections"
SEARCHES = [
    ("an English question, in the book's words", "know the enemy and know yourself"),
    ("a Chinese query: the notes quote the Chinese text", "知己知彼"),
    ("a paraphrase with none of the passage's words: the vector channel's job",
     "the best victory comes with no bloodshed at all"),
]


def snippet(text: str, width: int = 220) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rsplit(" ", 1)[0] + " …"


def locator_line(loc: dict[str, Any]) -> str:
    where = f"{loc.get('href')}#{loc.get('fragment')}" if loc.get("href") else f"page {loc.get('page_index')}"
    return f"{where} chars {loc.get('char_start')}-{loc.get('char_end')}"


def show(label: str, result: dict[str, Any], hits: int) -> None:
    ran = [name for name, info in result["channels"].items() if info.get("ran")]
    print(f"\n=== {label}\n    query: {result['query']}   (channels run: {', '.join(ran)}; "
          f"{result.get('elapsed_ms', 0):.0f} ms)")
    for hit in result["hits"][:hits]:
        ranks = ", ".join(f"{c} #{r}" for c, r in sorted((hit.get("channel_ranks") or {}).items()) if r)
        print(f"\n  {hit['rank']}. {hit['evidence_id']}   [{' > '.join(hit['headings'])}]")
        print(textwrap.indent(textwrap.fill(snippet(hit["text"]), 96), "     "))
        print(f"     found by: {ranks or ', '.join(hit.get('channels') or [])}")
        print(f"     locator:  {locator_line(hit['source_locator'])}")
    leaders = []
    for channel in ("lexical", "vector"):
        top = [h for h in result["hits"] if (h.get("channel_ranks") or {}).get(channel) == 1]
        if top:
            leaders.append(f"{channel} #1 = {top[0]['record_id']} (hybrid rank {top[0]['rank']})")
    if leaders:
        print(f"\n  each channel's own first choice: {'; '.join(leaders)}")
    for warning in result.get("warnings") or []:
        print(f"  warning: {warning}")


def real_pdf(agent: Any, data_dir: Path) -> None:
    """Build a package from a real PDF (book-agent-build), register it, search it and
    render the top hit's page with the hit highlighted."""
    from book_agent_adapters.bench import BuildOptions as Options
    from book_agent_adapters.bench import BuildProgress as Progress
    from book_agent_adapters.bench import build_package as build

    package = data_dir / "packages" / "gfdl-pages"
    build(REAL_PDF, package, Options(book_id="gfdl-pages", vectors=False), Progress(quiet=True))
    book = agent.init(package, replace=True)["book_id"]
    hit = agent.search(book, PDF_QUERY, top_k=1)["hits"][0]
    started = time.perf_counter()
    shown = agent.render_page(book, record_ids=[hit["record_id"]])
    took = (time.perf_counter() - started) * 1000
    loc = hit["source_locator"]
    print(f"\n=== a real PDF ({REAL_PDF.name}), built with book-agent-build and registered as {book}")
    print(f"    query: {PDF_QUERY}\n  1. {hit['evidence_id']}  page_index {loc.get('page_index')} "
          f"(verified {loc.get('verification', {}).get('method')})")
    print(textwrap.indent(textwrap.fill(snippet(hit["text"]), 96), "     "))
    boxes = shown["highlights"][0]["boxes"] if shown["highlights"] else []
    print(f"  highlighted render: {shown['path']}\n    {shown['width_px']}x{shown['height_px']} px, "
          f"{shown['bytes']:,} bytes, {len(boxes)} line boxes (PDF points, first {boxes[:1]}), {took:.0f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    parser.add_argument("--hits", type=int, default=3, help="hits shown per search")
    parser.add_argument("--json", action="store_true", help="print the raw search results as JSON")
    args = parser.parse_args(argv)

    from book_agent.agent import BookAgent
    from book_agent.domain.errors import BookAgentError

    try:
        with BookAgent(args.data_dir) as agent:
            started = time.perf_counter()
            entry = agent.init(PACKAGE, replace=True)
            print(f"registered {entry['book_id']} from {PACKAGE.relative_to(ROOT)} in {args.data_dir.name}/ "
                  f"({time.perf_counter() - started:.1f} s)")
            # ten hits, three shown: enough to say where each channel's first choice landed
            results = [agent.search(entry["book_id"], query, top_k=max(10, args.hits)) for _, query in SEARCHES]
            if not args.json:
                for (label, _), result in zip(SEARCHES, results, strict=True):
                    show(label, result, args.hits)
                real_pdf(agent, args.data_dir)
    except BookAgentError as exc:
        print(f"demo failed: {exc.code}: {exc.message}", file=sys.stderr)
        if exc.remediation:
            print(f"  fix: {exc.remediation}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
        return 0
    print("\nTry it yourself:  .venv/bin/book-agent --data-dir .demo-data search art-of-war \"your question\"")
    print("                  .venv/bin/book-agent --data-dir .demo-data render gfdl-pages --quote \"Invariant Sections\"")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
