"""A model folder loaded once per process: spec, weights, tokenizer. Shared by encoders."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from book_agent import blas

from . import bert_numpy
from .st_config import ModelSpec, load_spec
from .text_tokenizer import TextTokenizer
from .weights import F32, EncoderWeights, load_weights, pack

_CACHE: dict[Path, LoadedModel] = {}
_CACHE_LOCK = threading.Lock()
BATCH_SIZE = 32
# Packing (weights.pack) costs ~40 ms and ~43 MB once and saves ~1-2 ms per query: worth it
# once a process has shown it encodes more than a one-shot search does.
PACK_AFTER_CALLS = 8


@dataclass
class LoadedModel:
    folder: Path
    spec: ModelSpec
    weights: EncoderWeights
    tokenizer: TextTokenizer
    load_seconds: float
    calls: int = 0

    @property
    def weights_path(self) -> Path:
        return weights_file(self.folder, self.spec)

    def pack(self) -> None:
        """Switch to packed weights (see weights.pack); idempotent. The swap is one attribute
        assignment, so a concurrent embed uses either set, both correct."""
        if not self.weights.packed:
            self.weights = pack(self.weights)

    def embed(self, texts: list[str]) -> F32:
        """Pooled (not normalised) sentence vectors [n, dims], in input order."""
        self.calls += 1
        if self.calls == PACK_AFTER_CALLS or len(texts) >= BATCH_SIZE:
            self.pack()
        weights = self.weights
        rows = self.tokenizer.ids([t.strip() for t in texts])
        out = np.empty((len(rows), self.spec.dimensions), dtype=np.float32)
        for chunk in _batches(rows):
            ids, mask = self.tokenizer.pad([rows[i] for i in chunk])
            hidden = bert_numpy.encode_tokens(weights, self.spec, ids, mask)
            out[chunk] = bert_numpy.pool(hidden, mask, self.spec.pooling)
        return out


def _batches(rows: list[list[int]]) -> list[list[int]]:
    """Row indices grouped longest first; a batch closes at BATCH_SIZE rows or when a row is
    under half the batch's longest, so padding never more than doubles the work (one
    256-token text must not make nine short ones cost 256 tokens each)."""
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
    batches: list[list[int]] = []
    for i in order:
        current = batches[-1] if batches else None
        if current and len(current) < BATCH_SIZE and 2 * len(rows[i]) >= len(rows[current[0]]):
            current.append(i)
        else:
            batches.append([i])
    return batches


def weights_file(folder: Path, spec: ModelSpec) -> Path:
    candidate = spec.transformer_dir / "model.safetensors"
    return candidate if candidate.is_file() else folder / "model.safetensors"


def load(folder: Path, spec: ModelSpec | None = None, cache_dir: Path | None = None) -> LoadedModel:
    """The process-wide model for `folder`, loading it on first use (`cache_dir`: the
    encoder's cache, where the tokenizer keeps a faster-loading form)."""
    key = folder.resolve()
    with _CACHE_LOCK:
        model = _CACHE.get(key)
        if model is None:
            started = time.perf_counter()
            blas.apply_to_loaded_blas()  # numpy may have come before book_agent's policy
            spec = spec or load_spec(key)
            weights = load_weights(weights_file(key, spec), spec)
            tokenizer = TextTokenizer(key, spec, cache_dir)
            model = LoadedModel(key, spec, weights, tokenizer, time.perf_counter() - started)
            _CACHE[key] = model
        return model


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()
