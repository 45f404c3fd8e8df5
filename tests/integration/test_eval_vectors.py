"""The committed eval document vectors (eval/vectors/) are what the local encoder makes today:
a sample of each set's cache is encoded again and compared (cosine), so a stale or forged
cache fails here instead of skewing `make eval`."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from tests.support import REPO_ROOT
from tests.support.eval_books import MODEL, minilm_available

ROOT = REPO_ROOT
TOOLS = ROOT / "tools"
SETS = ("fairytaleqa", "covid-qa", "xquad-en", "cacm", "cfc", "drcd", "xquad-zh", "cmdd-im")


@pytest.fixture(scope="module")
def tools_modules():
    sys.path.insert(0, str(TOOLS))
    try:
        import eval_sets
        import eval_vectors

        yield eval_sets, eval_vectors
    finally:
        sys.path.remove(str(TOOLS))


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
    split = "test" if name != "fairytaleqa" else "dev"
    wanted = eval_sets.doc_texts(eval_set.book_docs(split))
    assert all(eval_vectors._text_key(t) in cache for t in wanted), "the cache lacks documents of the book"
    rng = np.random.default_rng(1)
    sample = [wanted[i] for i in rng.choice(len(wanted), 3, replace=False)]
    fresh = eval_vectors.encode_sorted(sample)
    stored = np.stack([cache[eval_vectors._text_key(t)] for t in sample])
    cosines = np.einsum("ij,ij->i", fresh, stored)
    assert (cosines > 0.9999).all(), cosines
    assert len(cache) <= len(texts)
