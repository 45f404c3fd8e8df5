"""Chinese word segmentation beside the character bigrams (issue 28, item 5): a study.

    .venv/bin/python tools/study/segment_study.py --sets drcd,cmdd-im --split dev [--json]

Each set's book is indexed in in-memory FTS5 tables the way the product indexes it (body and
headings, `porter unicode61 remove_diacritics 2`, headings weighted 0.4, OpenCC t2s), once over
the product's CJK bigrams (`lexical_text.index_text`) and once over jieba's words, and every
question of the split is asked as each variant below; nDCG@10 of the lexical ranking (the
Chinese sets are decided by the lexical channel: MiniLM reads no Chinese, the gate is shut).

Index-side variants need a second field (a words column beside the bigrams); query-side variants
keep today's bigram index and only change which bigram fragments the query sends, using the
segmenter's word boundaries (a bigram inside a word, or one that straddles two words). Only
query-side variants that send *terms* (no phrases) rank the same in the library's impact index
and in Milvus, which ignore adjacency. A development tool: jieba must be installed.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
from book_agent.domain.search.lexical_text import (
    CJK_RUN,
    _quote,
    index_text,
    normalize,
    query_terms,
)
from book_agent.domain.search.metrics import ndcg_at_k
from book_agent_adapters.bench import HEADINGS_WEIGHT, fold_chinese, segment_chinese, use_cache_dir
from tools.eval.eval_sets import WORK_DIR, load_set

DEPTH = 100
use_cache_dir(WORK_DIR / "cache")  # jieba's dictionary cache, as the product keeps it (not the temp dir)


def words(text: str) -> list[str]:
    return [w for w in segment_chinese(text) if w.strip()]


def word_text(text: str) -> str:
    """A text as space-separated jieba words (CJK runs only; the rest as it is)."""
    text = fold_chinese(normalize(text))
    return CJK_RUN.sub(lambda m: " " + " ".join(words(m.group())) + " ", text)


def build(docs: list[dict[str, str]], form: Callable[[str], str]) -> tuple[sqlite3.Connection, list[str]]:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE fts USING fts5(body, headings, content='', "
                "tokenize='porter unicode61 remove_diacritics 2')")
    con.executemany("INSERT INTO fts(rowid, body, headings) VALUES (?, ?, ?)",
                    [(i + 1, form(d["text"]), form(d["title"])) for i, d in enumerate(docs)])
    con.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    return con, [d["_id"] for d in docs]


def ask(index: tuple[sqlite3.Connection, list[str]], fragments: list[str]) -> list[tuple[str, float]]:
    con, ids = index
    if not fragments:
        return []
    rows = con.execute(f"SELECT rowid, -bm25(fts, 1.0, {HEADINGS_WEIGHT}) AS s FROM fts WHERE fts MATCH ? "
                       "ORDER BY s DESC LIMIT ?", (" OR ".join(fragments), DEPTH)).fetchall()
    return [(ids[r - 1], s) for r, s in rows]


def word_fragments(query: str) -> list[str]:
    """The query's jieba words (CJK) and its other words, each once, quoted."""
    text = fold_chinese(normalize(query))
    out: list[str] = []
    for match in CJK_RUN.finditer(text):
        out += [_quote(w) for w in words(match.group())]
    rest = CJK_RUN.sub(" ", text)
    out += [f for f in query_terms(rest) if f not in out]
    return list(dict.fromkeys(out))


def bigram_roles(query: str) -> tuple[list[str], list[str], list[str]]:
    """Today's fragments split by the segmenter: (bigrams inside a word, bigrams across a
    word boundary, everything else: Latin words, digits, prefixes, phrases)."""
    text = fold_chinese(normalize(query))
    inside: set[str] = set()
    across: set[str] = set()
    for match in CJK_RUN.finditer(text):
        run = match.group()
        cuts, at = set(), 0
        for w in words(run):
            at += len(w)
            cuts.add(at)
        for i in range(len(run) - 1):
            (across if (i + 1) in cuts else inside).add(_quote(run[i : i + 2]))
    today = query_terms(query, fold_chinese)
    return ([f for f in today if f in inside], [f for f in today if f in across and f not in inside],
            [f for f in today if f not in inside and f not in across])


def fused(a: list[tuple[str, float]], b: list[tuple[str, float]], share_b: float) -> list[str]:
    """Two fields, each BM25 over its best, summed by shares (a missing record: the field's last)."""
    def norm(hits: list[tuple[str, float]]) -> tuple[dict[str, float], float]:
        if not hits:
            return {}, 0.0
        top = hits[0][1] or 1.0
        scores = {r: s / top for r, s in hits}
        return scores, min(scores.values())

    na, ma = norm(a)
    nb, mb = norm(b)
    scores = {r: (1 - share_b) * na.get(r, ma) + share_b * nb.get(r, mb) for r in set(na) | set(nb)}
    return sorted(scores, key=lambda r: (-scores[r], r))


def variants(bigrams: Any, wordy: Any, both: Any, query: str) -> dict[str, list[str]]:
    today = query_terms(query, fold_chinese)
    by_bigrams = ask(bigrams, today)
    by_words = ask(wordy, word_fragments(query))
    inside, across, other = bigram_roles(query)
    both_fragments = [f"{{body headings}} : {f}" for f in today] + [f"words : {f}" for f in word_fragments(query)]
    out = {
        "bigrams (today)": [r for r, _ in by_bigrams],
        "words alone": [r for r, _ in by_words],
        "one table, bigrams + words columns": [r for r, _ in ask(both, both_fragments)],
        "drop cross-word bigrams (query)": [r for r, _ in ask(bigrams, inside + other or today)],
        "in-word bigrams x2 (query)": [r for r, _ in ask(bigrams, inside * 2 + across + other)],
        "product: query_terms with the segmenter": [
            r for r, _ in ask(bigrams, query_terms(query, fold_chinese, segment_chinese))],
        "in-word bigrams x3 (query)": [r for r, _ in ask(bigrams, inside * 3 + across + other)],
    }
    for share in (0.2, 0.3, 0.4, 0.5):
        out[f"two fields, words share {share}"] = fused(by_bigrams, by_words, share)
    return out


def build_both(docs: list[dict[str, str]]) -> tuple[sqlite3.Connection, list[str]]:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE fts USING fts5(body, headings, words, content='', "
                "tokenize='porter unicode61 remove_diacritics 2')")
    con.executemany("INSERT INTO fts(rowid, body, headings, words) VALUES (?, ?, ?, ?)",
                    [(i + 1, index_text(d["text"], fold_chinese), index_text(d["title"], fold_chinese),
                      word_text(d["title"] + " " + d["text"])) for i, d in enumerate(docs)])
    con.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    return con, [d["_id"] for d in docs]


def study(name: str, split: str) -> dict[str, float]:
    eval_set = load_set(name)
    docs = eval_set.book_docs(split)
    bigrams = build(docs, lambda t: index_text(t, fold_chinese))
    wordy = build(docs, word_text)
    both = build_both(docs)
    table: dict[str, list[float]] = {}
    for _, text, relevant in eval_set.questions(split):
        for label, ranking in variants(bigrams, wordy, both, text).items():
            table.setdefault(label, []).append(ndcg_at_k(ranking, relevant, 10))
    return {label: round(statistics.fmean(v), 4) for label, v in table.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="drcd,cmdd-im")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    table = {name: study(name, args.split) for name in names}
    if args.json:
        print(json.dumps(table, indent=1))
        return
    labels = list(next(iter(table.values())))
    print(f"{'variant (' + args.split + ')':40s} " + " ".join(f"{n:>10s}" for n in names))
    for label in labels:
        print(f"{label:40s} " + " ".join(f"{table[n][label]:10.4f}" for n in names))


if __name__ == "__main__":
    main()
