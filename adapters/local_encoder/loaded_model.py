"""A model folder loaded once per process: spec, weights, tokenizer. Shared by encoders."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import bert_numpy
from .st_config import ModelSpec, load_spec
from .text_tokenizer import TextTokenizer
from .weights import F32, EncoderWeights, load_weights

_CACHE: dict[Path, LoadedModel] = {}
_CACHE_LOCK = threading.Lock()
BATCH_SIZE = 32


@dataclass
class LoadedModel:
    folder: Path
    spec: ModelSpec
    weights: EncoderWeights
    tokenizer: TextTokenizer
    load_seconds: float

    @property
    def weights_path(self) -> Path:
        return weights_file(self.folder, self.spec)

    def embed(self, texts: list[str]) -> F32:
        """Pooled (not normalised) sentence vectors [n, dims], in input order."""
        rows = self.tokenizer.ids([t.strip() for t in texts])
        out = np.empty((len(rows), self.spec.dimensions), dtype=np.float32)
        for chunk in _batches(rows):
            ids, mask = self.tokenizer.pad([rows[i] for i in chunk])
            hidden = bert_numpy.encode_tokens(self.weights, self.spec, ids, mask)
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


def load(folder: Path, spec: ModelSpec | None = None) -> LoadedModel:
    """The process-wide model for `folder`, loading it on first use."""
    key = folder.resolve()
    with _CACHE_LOCK:
        model = _CACHE.get(key)
        if model is None:
            started = time.perf_counter()
            spec = spec or load_spec(key)
            weights = load_weights(weights_file(key, spec), spec)
            tokenizer = TextTokenizer(key, spec)
            model = LoadedModel(key, spec, weights, tokenizer, time.perf_counter() - started)
            _CACHE[key] = model
        return model


def clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


def cached_folders() -> list[Path]:
    with _CACHE_LOCK:
        return list(_CACHE)
