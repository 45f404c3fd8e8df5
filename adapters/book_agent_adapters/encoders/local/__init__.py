"""Local query encoding for BERT-family sentence-embedding models, numpy only (no torch).

    LocalQueryEncoder(model_name, dimensions, *, normalize, query_instruction, model_dir, ...)
    find_model(model_name, model_dir=None, hf_home=None) -> ModelLocation

See contracts/local-encoder.md for the search order, verification and error codes.
Importing this package does not import the code that loads and runs a model (loaded_model,
bert_numpy, weights, tokenizers): the first encode does.
"""

from __future__ import annotations

from .encoder import LocalQueryEncoder
from .known_models import KNOWN_MODELS, KnownModel
from .model_files import ModelLocation, find_model


def clear_model_cache() -> None:
    """Forget the models loaded in this process (tests); imports nothing when none was."""
    import sys

    loaded = sys.modules.get(f"{__name__}.loaded_model")
    if loaded is not None:
        loaded.clear_cache()


__all__ = [
    "KNOWN_MODELS",
    "KnownModel",
    "LocalQueryEncoder",
    "ModelLocation",
    "clear_model_cache",
    "find_model",
]
