"""`make demo`: register the example book and show what hybrid search finds.

Registers examples/art-of-war-package in the project's `.demo-data/` (replacing any earlier
registration), then runs three searches: an English question in the book's words, a Chinese
one that only the notes' Chinese text answers, and a paraphrase that shares no words with
its passage (the vector channel's job). Local only: no network, no API key.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "examples" / "art-of-war-package"
DATA_DIR = ROOT / ".demo-data"
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
    except BookAgentError as exc:
        print(f"demo failed: {exc.code}: {exc.message}", file=sys.stderr)
        if exc.remediation:
            print(f"  fix: {exc.remediation}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(results, ensure_ascii=False, indent=2))
        return 0
    for (label, _), result in zip(SEARCHES, results, strict=True):
        show(label, result, args.hits)
    print("\nTry it yourself:  .venv/bin/book-agent --data-dir .demo-data search art-of-war \"your question\"")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
