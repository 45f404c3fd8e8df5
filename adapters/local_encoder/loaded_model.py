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
        # Similar lengths share a batch (as sentence-transformers does): less padding.
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
        for start in range(0, len(order), BATCH_SIZE):
            chunk = order[start : start + BATCH_SIZE]
            ids, mask = self.tokenizer.pad([rows[i] for i in chunk])
            hidden = bert_numpy.encode_tokens(self.weights, self.spec, ids, mask)
            out[chunk] = bert_numpy.pool(hidden, mask, self.spec.pooling)
        return out


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
