"""One-character CJK prefix queries as one sparse dimension each, scored as the local index scores them.

A one-character CJK query term is the FTS5 prefix `"c"*` (book_agent/domain/search/lexical_text.py). FTS5, and the
local impact index after it (impact_index.py, `ImpactScorer._prefix`), score it as ONE phrase:
the record's counts of every term starting with c are summed into one count f_c, weighed once by
BM25's document side (`document_weight(f_c, D, avgdl)`), times the idf of the records holding any
such term. Expanding the prefix into its terms, each under its own idf, ranks otherwise (drcd lost
0.0117 nDCG@10 that way). So each record also carries, per CJK character starting one of its
terms, the pseudo-term `c*` counted f_c: its sparse weight is f_c's document weight and the term
table keeps its document frequency as for any term (records holding any term starting with c).
A query's prefix c is then the one dimension of `c*` under its idf, and the inner product is the
local index's score. `*` is never part of a real term (FTS5's terms are runs of letters and
digits), so no pseudo-term collides with one.
"""

from __future__ import annotations

import numpy as np

from book_agent.domain.search.lexical_text import is_cjk
from book_agent_adapters.library.local.lexical.term_counts import BookTerms

MARK = "*"


def prefix_term(prefix: str) -> str:
    """The pseudo-term a query's one-character prefix is looked up as."""
    return prefix + MARK


def with_prefix_terms(terms: BookTerms) -> BookTerms:
    """`terms` plus one posting per (record, CJK first character of its terms): the pooled count
    of the record's terms starting with that character. The postings stay sorted by (term, doc)."""
    firsts = [t[0] if t and is_cjk(t[0]) else "" for t in terms.terms]
    chars = sorted({c for c in firsts if c})
    if not chars or not len(terms.record_ids):
        return terms
    number = {c: i for i, c in enumerate(chars)}
    pseudo_of_term = np.fromiter((number.get(c, -1) for c in firsts), np.int64, len(firsts))
    pseudo = pseudo_of_term[terms.term_ids]
    keep = pseudo >= 0
    records = len(terms.record_ids)
    keys, inverse = np.unique(pseudo[keep] * records + terms.docs[keep].astype(np.int64), return_inverse=True)
    pooled = np.bincount(inverse, weights=terms.freqs[keep].astype(np.float64))  # exact sums, then float32 as stored
    return BookTerms(
        record_ids=terms.record_ids,
        terms=[*terms.terms, *(prefix_term(c) for c in chars)],
        term_ids=np.concatenate([terms.term_ids, (len(terms.terms) + keys // records).astype(terms.term_ids.dtype)]),
        docs=np.concatenate([terms.docs, (keys % records).astype(terms.docs.dtype)]),
        freqs=np.concatenate([terms.freqs, pooled.astype(terms.freqs.dtype)]),
        lengths=terms.lengths,
    )
