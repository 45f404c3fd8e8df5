"""The vector channel's self-check: evidence, per script, that the model reads the book.

These unit tests drive the service with a fake "model" that reads Latin words but turns CJK
text into noise (what an English-only model does); the slow tier runs the real MiniLM on a
Chinese and an English book whose packages declare no languages
(tests/integration/encoders/test_vector_check_minilm.py).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from book_agent.domain.records import Record, VectorHit
from book_agent.domain.search.lexical_text import CJK_RUN
from book_agent.domain.search.vector_trust import LanguageEvidence, vector_trust
from book_agent.services.vector_check import (
    CJK_VOCABULARY_MIN,
    language_evidence,
    measured_reads,
    pseudo_queries,
    run_self_check,
)

DIMS = 64


def _embed(text: str) -> np.ndarray:
    """Hashed bag of Latin words; CJK characters become noise seeded by the whole text."""
    vector = np.zeros(DIMS, dtype=np.float32)
    for word in CJK_RUN.sub(" ", text).lower().split():
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
    if CJK_RUN.search(text):
        vector += np.random.default_rng(abs(hash(text)) % 2**32).standard_normal(DIMS).astype(np.float32) * 5
    return vector / (np.linalg.norm(vector) or 1.0)


@dataclass
class _Encoding:
    vector: np.ndarray | None
    route: str | None = "fake:bag-of-words"

    def to_dict(self, include_vector: bool = False) -> dict[str, Any]:
        return {"error": None if self.vector is not None else {"message": "no model", "code": "query.model_missing"}}


class _Vectorizer:
    def __init__(self, works: bool = True, vocabulary: list[str] | None = None) -> None:
        self.works = works
        self.calls = 0
        self.vocabulary = vocabulary

    def tokenizer_vocabulary(self) -> list[str] | None:
        return self.vocabulary

    def encode_query(self, query: str) -> _Encoding:
        self.calls += 1
        return _Encoding(_embed(query) if self.works else None)

    def accept_query_vector(self, vector: Any) -> _Encoding:
        return _Encoding(np.asarray(vector, dtype=np.float32))


class _Store:
    def __init__(self, records: list[Record]) -> None:
        self.records = records
        self.matrix = np.stack([_embed(r.text) for r in records])

    def search(self, vector: np.ndarray, top_k: int) -> list[VectorHit]:
        scores = self.matrix @ vector
        return [VectorHit(self.records[i], float(scores[i])) for i in np.argsort(-scores)[:top_k]]


def _records(count: int) -> list[Record]:
    rng = np.random.default_rng(3)
    latin = [f"w{i}" for i in range(400)]
    hanzi = [chr(0x4E00 + i) for i in range(800)]
    out = []
    for i in range(count):
        text = "".join(rng.choice(hanzi, 60)) if i % 2 else " ".join(rng.choice(latin, 40))
        out.append(Record(f"r{i}", text, {"kind": "pdf", "page_index": 0}, seq=i))
    return out


def test_the_self_check_measures_each_script_and_shuts_the_gate_only_where_the_model_is_blind():
    records = _records(200)
    result = run_self_check(records, _Vectorizer(), _Store(records), seed="book")
    reads, basis = measured_reads(result)
    assert result["status"] == "ok" and basis == "self-check"
    assert result["scripts"]["latin"]["mrr@10"] >= 0.9 and result["scripts"]["cjk"]["mrr@10"] < 0.5
    assert reads == {"latin": True, "cjk": False}
    evidence = LanguageEvidence(None, "unknown", reads, basis)
    assert vector_trust(1.0, evidence)[0] == 0.0  # a Chinese question: the vector channel is noise here
    assert vector_trust(0.0, evidence)[0] == 1.0


@pytest.mark.parametrize(("cjk_pieces", "reads"), [(676, False), (CJK_VOCABULARY_MIN, True), (20000, True)])
def test_a_local_tokenizer_is_the_first_evidence(cjk_pieces: int, reads: bool):
    vocabulary = [f"w{i}" for i in range(30000)] + [chr(0x4E00 + i) for i in range(cjk_pieces)]
    vectorizer = _Vectorizer(vocabulary=vocabulary)
    records = _records(40)
    result = language_evidence(records, vectorizer, _Store(records), seed="s")
    assert result["basis"] == "tokenizer" and result["cjk_pieces"] == cjk_pieces
    assert measured_reads(result) == ({"cjk": reads}, "tokenizer")
    assert vectorizer.calls == 0  # nothing encoded, no request made


def test_the_sample_is_deterministic_and_bounded():
    records = _records(500)
    first, second = pseudo_queries(records, "seed"), pseudo_queries(records, "seed")
    assert first == second
    assert all(len(v) == 24 for v in first.values())
    texts = {r.record_id: r.text for r in records}
    for script, queries in first.items():
        for record_id, query in queries:
            assert "".join(query.split()) in "".join(texts[record_id].split()), (script, query)


def test_an_encoder_that_cannot_run_leaves_no_verdict():
    records = _records(40)
    vectorizer = _Vectorizer(works=False)
    read: list[str] = []

    def counted():
        for record in records:
            read.append(record.record_id)
            yield record

    result = run_self_check(counted(), vectorizer, _Store(records), seed="book")
    assert read == []  # no pass over the book when nothing can be encoded
    assert result["status"] == "not-run" and result["code"] == "query.model_missing"
    assert vectorizer.calls == 1  # stops at the first refusal: no retry storm
    assert measured_reads(result) == ({}, None)


def test_too_few_records_of_a_script_give_no_verdict_for_it():
    records = [r for r in _records(40) if not CJK_RUN.search(r.text)][:4]
    assert pseudo_queries(records, "s") == {}


