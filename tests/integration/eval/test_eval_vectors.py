"""The committed eval document vectors (eval/vectors/) are what the local encoder makes today:
a sample of each set's cache is encoded again and compared (cosine), so a stale or forged
cache fails here instead of skewing `make eval`."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support import REPO_ROOT
from tests.support.eval_books import MODEL, minilm_available

ROOT = REPO_ROOT
TOOLS = ROOT / "tools"
# The committed caches (tools/eval/eval_sets.py COMMITTED_VECTORS; lisa's and npl's are made by make eval)
SETS = ("fairytaleqa", "covid-qa", "pubmedqa", "xquad-en", "cacm", "cfc", "medline", "drcd", "xquad-zh", "cmdd-im")
# The splits `make eval` asks questions of (tools/eval/eval_suite.py --split test|dev): the cache
# holds the documents of each one's book (a set with a book per split, as FairytaleQA, has several).
EVAL_SPLITS = ("test", "dev")


@pytest.fixture(scope="module")
def tools_modules():
    import tools.eval.eval_sets as eval_sets
    import tools.eval.eval_vectors as eval_vectors

    return eval_sets, eval_vectors


@pytest.mark.realweights
@pytest.mark.parametrize("name", SETS)
def test_committed_vectors_match_a_fresh_encoding(tools_modules, name: str):
    from tests.support.parts import require_real_part

    require_real_part(minilm_available(), f"the {MODEL} weights")
    eval_sets, eval_vectors = tools_modules
    eval_set = eval_sets.load_set(name)
    texts = eval_sets.doc_texts(eval_set.docs)
    cache = eval_vectors._load_cache(ROOT / "eval" / "vectors" / f"{name}.npz", {
        "model": eval_vectors.MODEL, "model_sha256": eval_vectors.model_digest(),
        "dimensions": eval_vectors.DIMS, "kind": "documents"})
    splits = [split for split in EVAL_SPLITS if split in eval_set.qrels]
    assert splits, f"{name} has none of the splits {EVAL_SPLITS}"
    wanted = list(dict.fromkeys(text for split in splits
                                for text in eval_sets.doc_texts(eval_set.book_docs(split))))
    assert all(eval_vectors._text_key(t) in cache for t in wanted), "the cache lacks documents of the book"
    rng = np.random.default_rng(1)
    sample = [wanted[i] for i in rng.choice(len(wanted), 3, replace=False)]
    fresh = eval_vectors.encode_sorted(sample)
    stored = np.stack([cache[eval_vectors._text_key(t)] for t in sample])
    cosines = np.einsum("ij,ij->i", fresh, stored)
    assert (cosines > 0.9999).all(), cosines
    assert len(cache) <= len(texts)


def test_the_committed_caches_are_the_ones_listed(tools_modules):
    eval_sets, _ = tools_modules
    assert SETS == eval_sets.COMMITTED_VECTORS
    assert set(eval_sets.BENCH_VECTOR_SETS) <= set(SETS)  # a fresh clone's benches need no make eval
