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
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

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
    from book_agent.adapters.local_encoder.known_models import lookup

    known = lookup(MODEL)
    assert known is not None
    return known.sha256["model.safetensors"]


def encode_sorted(texts: Sequence[str], progress: Progress | None = None, *, queries: bool = False) -> np.ndarray:
    """Encode texts in length-sorted batches; rows come back in the input order."""
    from book_agent.adapters.local_encoder import LocalQueryEncoder

    encoder = LocalQueryEncoder(MODEL, DIMS, normalize=True)
    out = np.zeros((len(texts), DIMS), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), BATCH):
        chunk = order[start : start + BATCH]
        out[chunk] = encoder.encode_batch([texts[i] for i in chunk], with_instruction=queries)
        if progress:
            progress(min(start + BATCH, len(order)), len(order))
    return out


def cached_vectors(path: Path, texts: Sequence[str], progress: Progress | None = None,
                   *, queries: bool = False) -> np.ndarray:
    """Vectors for texts from path (an .npy with a .json stamp beside it), encoding on a miss."""
    stamp_path = path.with_suffix(".json")
    stamp = {"model": MODEL, "model_sha256": model_digest(), "texts_sha256": texts_digest(texts),
             "count": len(texts), "dimensions": DIMS}
    if path.is_file() and stamp_path.is_file():
        try:
            if json.loads(stamp_path.read_text(encoding="utf-8")) == stamp:
                matrix = np.load(path)
                if matrix.shape == (len(texts), DIMS):
                    return np.asarray(matrix, dtype=np.float32)
        except ValueError:
            pass  # unreadable: encode again
    matrix = encode_sorted(texts, progress, queries=queries)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, matrix)
    tmp.replace(path)
    stamp_path.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    return matrix


def stderr_progress(label: str) -> Progress:
    started = time.perf_counter()

    def report(done: int, total: int) -> None:
        if done == total or done % (BATCH * 8) == 0:
            elapsed = time.perf_counter() - started
            eta = elapsed / done * (total - done) if done else 0.0
            print(f"\r{label}: {done}/{total} encoded, {elapsed:.0f} s, about {eta:.0f} s left",
                  end="\n" if done == total else "", file=sys.stderr, flush=True)

    return report
