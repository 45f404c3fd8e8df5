"""Document and query vectors for the eval sets, made once by the local MiniLM encoder and cached.

A development tool, not product code (the product never embeds documents). A cache file is
valid only for the exact model file and the exact texts it was made from: its sidecar JSON
records the model's sha256 and a sha256 over the texts in order, and a mismatch re-encodes.

Texts are encoded in batches of similar length (few pad tokens: numpy BERT pays for every
one), which changes a vector only in its last float bits against one-at-a-time encoding.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

# Batch encoding of documents uses every core (the product's default is one BLAS thread,
# right for single queries on a shared machine: book_agent/blas.py).
os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "auto")

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIMS = 384
BATCH = 16
Progress = Callable[[int, int], None]


def texts_digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(hashlib.sha256(text.encode("utf-8")).digest())
    return digest.hexdigest()


def model_digest() -> str:
    from book_agent_adapters.bench import known_model as lookup

    known = lookup(MODEL)
    assert known is not None
    return known.sha256["model.safetensors"]


def encode_sorted(texts: Sequence[str], progress: Progress | None = None, *, queries: bool = False) -> np.ndarray:
    """Encode texts in length-sorted batches; rows come back in the input order."""
    from book_agent_adapters.bench import LocalQueryEncoder

    encoder = LocalQueryEncoder(MODEL, DIMS, normalize=True)
    out = np.zeros((len(texts), DIMS), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), BATCH):
        chunk = order[start : start + BATCH]
        out[chunk] = encoder.encode_batch([texts[i] for i in chunk], with_instruction=queries)
        if progress:
            progress(min(start + BATCH, len(order)), len(order))
    return out


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _load_cache(path: Path, stamp: dict[str, object]) -> dict[str, np.ndarray]:
    stamp_path = path.with_suffix(".json")
    if not (path.is_file() and stamp_path.is_file()):
        return {}
    try:
        if json.loads(stamp_path.read_text(encoding="utf-8")) != stamp:
            return {}  # another model or encoder setting: start again
        with np.load(path) as data:
            return dict(zip(data["keys"].tolist(), np.asarray(data["vectors"], dtype=np.float32), strict=True))
    except (ValueError, KeyError, OSError):
        return {}


def _save_cache(path: Path, stamp: dict[str, object], known: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = sorted(known)
    tmp = path.with_name(path.stem + ".tmp.npz")
    np.savez(tmp, keys=np.array(keys), vectors=np.stack([known[k] for k in keys]) if keys
             else np.zeros((0, DIMS), np.float32))
    tmp.replace(path)
    path.with_suffix(".json").write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")


def cached_vectors(path: Path, texts: Sequence[str], progress: Progress | None = None,
                   *, queries: bool = False, save_every: int = 256) -> np.ndarray:
    """Vectors for texts, from an .npz keyed by each text's sha256 (with a .json stamp naming
    the model), encoding only the texts it lacks. Saved as it goes: an interrupted run
    resumes where it stopped."""
    stamp: dict[str, object] = {"model": MODEL, "model_sha256": model_digest(), "dimensions": DIMS,
                                "kind": "queries" if queries else "documents"}
    known = _load_cache(path, stamp)
    todo = sorted({_text_key(t): t for t in texts if _text_key(t) not in known}.items(), key=lambda kv: len(kv[1]))
    for start in range(0, len(todo), save_every):
        chunk = todo[start : start + save_every]
        vectors = encode_sorted([t for _, t in chunk], queries=queries)
        known.update(zip([k for k, _ in chunk], vectors, strict=True))
        _save_cache(path, stamp, known)
        if progress:
            progress(start + len(chunk), len(todo))
    return np.stack([known[_text_key(t)] for t in texts]) if texts else np.zeros((0, DIMS), np.float32)


def stderr_progress(label: str) -> Progress:
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        if done:
            elapsed = time.perf_counter() - started
            eta = elapsed / done * (total - done) if done else 0.0
            print(f"\r{label}: {done}/{total} encoded, {elapsed:.0f} s, about {eta:.0f} s left",
                  end="\n" if done == total else "", file=sys.stderr, flush=True)

    return report
