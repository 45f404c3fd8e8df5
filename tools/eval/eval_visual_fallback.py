"""Precision and recall of the visual-fallback hint on a labelled set of real pages.

The set is eval/visual_fallback/labels.jsonl (what each label means, where the books come
from and their licences: eval/visual_fallback/README.md): pages of three PDFs (a Chinese LaTeX
manual typeset with XeLaTeX; a short programming text typeset with pdfTeX; 43 pages of an English
maths-and-Octave text) labelled figure,
table, formula (a page image helps: `visual: true`), prose, code or blank (it does not), and the
chapters of two EPUBs (prose; an EPUB has no page image to recommend).

Each unit's text is given to VisualFallbackPolicy as the first (cited) hit of a search with a
neutral query, alone (top_k 1) and beside nine other units (top_k 10), and with queries asking
for figures and tables (图片, which must not send prose or code to its page); the unit counts as
recommended by its own per-hit advice (which the result's summary repeats). Texts are given as the product's records hold it (`lines`: the extractor's line breaks) and as an
upstream pipeline's records often do (`joined`: whitespace collapsed), each with the PDF page's
profile (`+page`: what the product reads from the page's objects when the text says nothing,
PdfSource.page_profile) and without it (text only). A unit counts as
recommended when `visual_fallback.recommended` is true (a page render is advised). The units
are split in two halves by a hash of their name: rules are tuned on `tune` and reported on
`report`, which the tuning never looked at.

    .venv/bin/python tools/eval/eval_visual_fallback.py [--json] [--split tune|report|all]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "adapters")]

from book_agent.domain.search.page_profile import PageProfile  # noqa: E402
from book_agent.domain.search.visual_fallback import VisualFallbackPolicy  # noqa: E402

LABELS = ROOT / "eval" / "visual_fallback" / "labels.jsonl"
BOOKS = {
    "lshort-zh-cn": ROOT / "tests" / "support" / "data" / "real_books" / "lshort-zh-cn.pdf",
    "programming-notes": ROOT / "eval" / "visual_fallback" / "programming-notes.pdf",
    "physical-modeling-octave": ROOT / "eval" / "visual_fallback" / "physical-modeling-octave.pdf",
    "devils-dictionary": ROOT / "tests" / "support" / "data" / "real_books" / "devils-dictionary.epub",
    "the-art-of-war": ROOT / "examples" / "the-art-of-war" / "the-art-of-war.epub",
}
EPUB_CHARS = 4_000  # an EPUB unit: its chapter's first characters (a long record)
QUERY = "what does this passage say"  # neutral: the hint is judged on the hits' text alone


def split_of(row: dict[str, Any]) -> str:
    return "tune" if zlib.crc32(f"{row['book']}:{row['unit']}".encode()) % 2 == 0 else "report"


def unit_texts(rows: list[dict[str, Any]], profiles: dict[tuple[str, int], PageProfile] | None = None
               ) -> dict[tuple[str, int], str]:
    """Each unit's text; `profiles` is filled with each PDF page's profile, read by the
    product's own adapter (PdfSource.page_profile)."""
    from book_agent_adapters.bench import EpubSource, PdfSource

    out: dict[tuple[str, int], str] = {}
    for book in sorted({r["book"] for r in rows}):
        path = BOOKS[book]
        if path.suffix == ".pdf":
            pdf = PdfSource(path)
            try:
                for index in range(pdf.page_count):
                    out[(book, index)] = pdf.page_text(index).replace("\r\n", "\n")
                    if profiles is not None:
                        profiles[(book, index)] = pdf.page_profile(index)
            finally:
                pdf.close()
        else:
            source = EpubSource(path)
            for item in source.spine:
                out[(book, item.index)] = source.chapter(item).text[:EPUB_CHARS]
            source.close()
    return out


def _hit(row: dict[str, Any], text: str) -> dict[str, Any]:
    locator: dict[str, Any] = {"kind": row["kind"], "book": row["book"]}
    locator.update({"page_index": row["unit"]} if row["kind"] == "pdf" else {"spine_index": row["unit"], "href": row["note"]})
    return {"text": text, "source_locator": locator}


VISUAL_QUERIES = ("what do the figures and tables show", "图片和表格里是什么")  # words that must not fire on prose


def evaluate(rows: list[dict[str, Any]], texts: dict[tuple[str, int], str], form: str, top_k: int = 1,
             query: str = QUERY, profiles: dict[tuple[str, int], PageProfile] | None = None) -> list[dict[str, Any]]:
    """Each unit as the first (cited) hit of a search of `top_k` hits: the others are other
    units of the set (a fixed rotation), so a unit's advice is judged beside other hits.
    `profiles`: the PDF pages' profiles (the product reads them from the book's PDF); None:
    the hits' text alone."""
    policy = VisualFallbackPolicy()

    def pages(hit: dict[str, Any]) -> PageProfile | None:
        locator = hit["source_locator"]
        return None if profiles is None else profiles.get((locator["book"], locator.get("page_index", -1)))

    out = []
    for n, row in enumerate(rows):
        hits = [_hit(other, _form(texts[(other["book"], other["unit"])], form))
                for other in (rows[(n + k * 37) % len(rows)] for k in range(top_k))]
        advice = policy.evaluate_hits(query, hits, pages=pages)
        summary = policy.evaluate(query, hits, per_hit=advice)
        assert summary["recommended"] == advice[0]["recommended"]  # the summary is the cited hit's
        out.append({**row, "split": split_of(row), "form": form + ("+page" if profiles is not None else ""),
                    "top_k": top_k, "query": query,
                    "recommended": advice[0]["recommended"], "reasons": [r["code"] for r in advice[0]["reasons"]]})
    return out


def _form(text: str, form: str) -> str:
    return re.sub(r"\s+", " ", text).strip() if form == "joined" else text


def scores(results: list[dict[str, Any]]) -> dict[str, Any]:
    tp = sum(r["visual"] and r["recommended"] for r in results)
    fp = sum(not r["visual"] and r["recommended"] for r in results)
    fn = sum(r["visual"] and not r["recommended"] for r in results)
    tn = len(results) - tp - fp - fn
    fired = Counter(r["label"] for r in results if r["recommended"])
    total = Counter(r["label"] for r in results)
    return {"units": len(results), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": round(tp / (tp + fp), 3) if tp + fp else None,
            "recall": round(tp / (tp + fn), 3) if tp + fn else None,
            "fired_by_label": {label: f"{fired[label]}/{n}" for label, n in sorted(total.items())},
            "epub_recommended": sum(r["recommended"] for r in results if r["kind"] == "epub")}


def _kind_scores(results: list[dict[str, Any]], key: str) -> dict[str, str]:
    """Per book or per label: recommended/units (and precision/recall for a book)."""
    out: dict[str, str] = {}
    for value in sorted({r[key] for r in results}):
        subset = [r for r in results if r[key] == value]
        s = scores(subset)
        fired = sum(r["recommended"] for r in subset)
        out[value] = (f"P {s['precision']} R {s['recall']} ({fired}/{len(subset)} recommended)" if key == "book"
                      else f"{fired}/{len(subset)} recommended")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--split", choices=("tune", "report", "all"), default="all")
    parser.add_argument("--misses", action="store_true", help="list the units the rule gets wrong")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]
    profiles: dict[tuple[str, int], PageProfile] = {}
    texts = unit_texts(rows, profiles)
    report: dict[str, Any] = {}
    breakdown: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    for form, pages in (("lines", profiles), ("joined", profiles), ("lines", None), ("joined", None)):
        name = form + ("+page" if pages is not None else " (text only)")
        for top_k, query, suffix in ((1, QUERY, ""), (10, QUERY, " top_k=10"),
                                     *((1, q, f" query={q!r}") for q in VISUAL_QUERIES),
                                     *((10, q, f" top_k=10 query={q!r}") for q in VISUAL_QUERIES)):
            if pages is None and suffix:
                continue  # the text-only baseline once, at top_k 1
            evaluated = evaluate(rows, texts, form, top_k, query, pages)
            if not suffix and pages is not None:
                results += evaluated
            for split in ("tune", "report"):
                if args.split in (split, "all"):
                    chosen = [r for r in evaluated if r["split"] == split]
                    report[f"{name}/{split}{suffix}"] = scores(chosen)
                    if pages is not None and suffix in ("", " top_k=10"):
                        breakdown[f"{name}/{split}{suffix}"] = {
                            "by book": _kind_scores(chosen, "book"), "by label": _kind_scores(chosen, "label")}
    if args.json:
        print(json.dumps({"scores": report, "breakdown": breakdown}, indent=2, ensure_ascii=False))
    else:
        print("| text form / half | units | TP | FP | FN | TN | precision | recall | EPUB units recommended |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for key, s in report.items():
            print(f"| {key} | {s['units']} | {s['tp']} | {s['fp']} | {s['fn']} | {s['tn']} | {s['precision']} "
                  f"| {s['recall']} | {s['epub_recommended']} |")
        for key, parts in breakdown.items():
            for part, values in parts.items():
                print(f"{key} {part}: " + "; ".join(f"{k} {v}" for k, v in values.items()))
    if args.misses:
        for r in results:
            if r["visual"] != r["recommended"] and (args.split == "all" or r["split"] == args.split):
                print(f"{r['form']:11} {r['split']:6} top_k={r['top_k']:<2} {r['book']}:{r['unit']} {r['label']:8} "
                      f"recommended={r['recommended']} {r['reasons']} {r['note']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
