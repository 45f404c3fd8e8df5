"""Local query encoding for BERT-family sentence-embedding models, numpy only (no torch).

    LocalQueryEncoder(model_name, dimensions, *, normalize, query_instruction, model_dir, ...)
    find_model(model_name, model_dir=None, hf_home=None) -> ModelLocation

See contracts/local-encoder.md for the search order, verification and error codes.
"""

from __future__ import annotations

from .encoder import LocalQueryEncoder
from .known_models import KNOWN_MODELS, KnownModel
from .loaded_model import clear_cache as clear_model_cache
from .model_files import ModelLocation, find_model

__all__ = [
    "KNOWN_MODELS",
    "KnownModel",
    "LocalQueryEncoder",
    "ModelLocation",
    "clear_model_cache",
    "find_model",
]
