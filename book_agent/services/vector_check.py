"""Does the embedding model read this book's scripts? Evidence, measured once per model.

A model's language list is often missing or optimistic, and an English-only model asked
in Chinese ranks close to noise. Two measurements, the first that can be made wins:

1. The local tokenizer's vocabulary. A model trained on Chinese, Japanese or Korean text has
   thousands of CJK word pieces (bert-base-chinese, XLM-R, bge-m3); an English model has a
   few hundred stray ones (all-MiniLM-L6-v2: 676 of 30,522), too few to spell ordinary CJK
   text: about 2,500 characters cover 98% of modern Chinese.
2. Without a local tokenizer (a remote model), a self-check: a sample of the book's own
   records per script, a short window of each as a pseudo-query, encoded by the book's
   query runtime (a remote endpoint only when the network policy allows it), and the
   reciprocal rank of the source record in the vector channel's top 10. Weaker evidence:
   a window shares characters with its passage, so even a blind model finds some.

Runs at prepare time; the result is cached in the runtime dir and shown by `status`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from book_agent.domain.book.runtime_states import LanguageCheck
from book_agent.domain.records import Record
from book_agent.domain.search.lexical_text import CJK_RUN, cjk_share
from book_agent.domain.search.query_encoding import QueryEncoding
from book_agent.domain.search.vector_trust import query_script
from book_agent.ports import QueryVectorizer, VectorStore

if TYPE_CHECKING:
    import random

# Fewer distinct CJK pieces than this: the model cannot spell ordinary CJK text.
CJK_VOCABULARY_MIN = 2000
SAMPLE_PER_SCRIPT = 24
TOP_K = 10
WINDOW_WORDS = 12  # a Latin pseudo-query: this many consecutive words
WINDOW_CJK_CHARS = 16  # a CJK pseudo-query: this many consecutive characters
MIN_RECORDS = 5  # fewer records of a script than this: no verdict for it
# MRR@10 of the source record: all-MiniLM-L6-v2 gave 0.83-0.98 on English books and
# 0.10-0.74 on Chinese ones (it reads no Chinese), so the bar sits above the latter.
SELF_CHECK_MIN_MRR = 0.8
PROBE = "self-check"  # one encoding first: no full pass over the records when none can run


def pseudo_queries(records: Iterable[Record], seed: str) -> dict[str, list[tuple[str, str]]]:
    """script -> [(record_id, window of its text)], a deterministic sample per script."""
    import random  # prepare time only: a search imports this module, never samples

    rng = random.Random(seed)
    pools: dict[str, list[Record]] = {"latin": [], "cjk": []}
    seen = {"latin": 0, "cjk": 0}
    for record in records:  # reservoir sampling: one pass, bounded memory at any book size
        script = query_script(cjk_share(record.text))
        window = _window(record.text, script, rng)
        if window is None:
            continue
        seen[script] += 1
        pool = pools[script]
        if len(pool) < SAMPLE_PER_SCRIPT:
            pool.append(record)
        else:
            slot = rng.randrange(seen[script])
            if slot < SAMPLE_PER_SCRIPT:
                pool[slot] = record
    out: dict[str, list[tuple[str, str]]] = {}
    for script, pool in pools.items():
        if len(pool) >= MIN_RECORDS:
            out[script] = [(r.record_id, _window(r.text, script, rng) or "") for r in pool]
    return out


def _window(text: str, script: str, rng: random.Random) -> str | None:
    if script == "latin":
        words = text.split()
        if len(words) < WINDOW_WORDS:
            return None
        start = rng.randrange(len(words) - WINDOW_WORDS + 1)
        return " ".join(words[start : start + WINDOW_WORDS])
    compact = "".join(text.split())
    if len(compact) < WINDOW_CJK_CHARS:
        return None
    start = rng.randrange(len(compact) - WINDOW_CJK_CHARS + 1)
    return compact[start : start + WINDOW_CJK_CHARS]


def tokenizer_evidence(vocabulary: list[str]) -> LanguageCheck:
    cjk = sum(1 for piece in vocabulary if CJK_RUN.search(piece))
    return {"status": "ok", "basis": "tokenizer", "vocabulary_size": len(vocabulary),
            "cjk_pieces": cjk, "reads": {"cjk": cjk >= CJK_VOCABULARY_MIN}}


def language_evidence(records: Iterable[Record], vectorizer: QueryVectorizer, store: VectorStore,
                      seed: str) -> LanguageCheck:
    """The tokenizer's evidence when the model's files are here, else the self-check's."""
    vocabulary = vectorizer.tokenizer_vocabulary()
    if vocabulary:
        return tokenizer_evidence(vocabulary)
    return run_self_check(records, vectorizer, store, seed)


def run_self_check(records: Iterable[Record], vectorizer: QueryVectorizer, store: VectorStore,
                   seed: str) -> LanguageCheck:
    """{"status", "basis": "self-check", "scripts": {script: {"queries", "mrr@10"}}, "reads"}.

    Stops at the first query the runtime cannot encode (no model here, remote not allowed):
    then status is "not-run" with the reason, and search falls back to what is known.
    """
    probe = vectorizer.encode_query(PROBE)  # before reading every record to sample them
    if probe.vector is None:
        return _not_run(probe)
    scripts: dict[str, dict[str, float]] = {}
    route = probe.route
    for script, queries in pseudo_queries(records, seed).items():
        reciprocal = 0.0
        for record_id, query in queries:
            encoding = vectorizer.encode_query(query)
            if encoding.vector is None:
                return _not_run(encoding)
            route = encoding.route
            found = [hit.record.record_id for hit in store.search(encoding.vector, TOP_K)]
            reciprocal += 1.0 / (found.index(record_id) + 1) if record_id in found else 0.0
        scripts[script] = {"queries": len(queries), "mrr@10": round(reciprocal / len(queries), 4)}
    return {"status": "ok" if scripts else "no-sample", "basis": "self-check", "route": route,
            "scripts": scripts, "reads": {k: v["mrr@10"] >= SELF_CHECK_MIN_MRR for k, v in scripts.items()}}


def _not_run(encoding: QueryEncoding) -> LanguageCheck:
    error = encoding.to_dict(include_vector=False).get("error")
    return {"status": "not-run", "basis": "self-check", "code": (error.get("code") if error else None),
            "reason": (error.get("message") if error else None) or "the query could not be encoded"}


def measured_reads(check: LanguageCheck | None) -> tuple[dict[str, bool], str | None]:
    """(script -> reads it, basis) from a cached result (empty when nothing was measured)."""
    if not check or check.get("status") != "ok":
        return {}, None
    return {str(k): bool(v) for k, v in (check.get("reads") or {}).items()}, check.get("basis")
