"""Reading a model folder's configs: the encoder's shape and the sentence-transformers
pipeline (modules.json, 1_Pooling/config.json, sentence_bert_config.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import errors

SUPPORTED_TYPES = ("bert", "xlm-roberta", "roberta")
SUPPORTED_ACTS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu")
POOLING_KEYS = {  # sentence-transformers' order when several modes are concatenated
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}
MODULE_TRANSFORMER = "sentence_transformers.models.Transformer"
MODULE_POOLING = "sentence_transformers.models.Pooling"
MODULE_NORMALIZE = "sentence_transformers.models.Normalize"


@dataclass(frozen=True)
class ModelSpec:
    model_type: str
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    type_vocab_size: int
    pad_token_id: int
    layer_norm_eps: float
    hidden_act: str
    name_or_path: str
    transformer_dir: Path
    pooling: tuple[str, ...]
    pooling_source: str  # "1_Pooling/config.json" or "default"
    normalize: bool
    max_seq_length: int
    do_lower_case: bool

    @property
    def dimensions(self) -> int:
        return self.hidden_size * len(self.pooling)


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise errors.error(
            errors.MODEL_MISSING, f"Cannot read {path}: {exc}", errors.REMEDIATION_MISSING,
            path=path,
        ) from exc
    except ValueError as exc:
        raise errors.error(
            errors.MODEL_CORRUPT, f"{path} is not valid JSON: {exc}", errors.REMEDIATION_CORRUPT,
            path=path,
        ) from exc


def _corrupt(path: Path, what: str) -> Exception:
    return errors.error(errors.MODEL_CORRUPT, f"{path} is not {what}.", errors.REMEDIATION_CORRUPT,
                        path=path)


def read_object(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise _corrupt(path, "a JSON object")
    return data


def _unsupported(message: str, **details: Any) -> Exception:
    return errors.error(
        errors.ARCHITECTURE_UNSUPPORTED, message,
        "Use a BERT or XLM-RoBERTa sentence-embedding model (e.g. all-MiniLM-L6-v2, bge-*-v1.5, "
        "bge-m3), or a remote query endpoint for this book.",
        **details,
    )


def _modules(folder: Path) -> tuple[Path, Path | None, bool, bool]:
    """(transformer dir, pooling dir, normalize listed, modules.json present)."""
    path = folder / "modules.json"
    if not path.is_file():
        return folder, None, False, False
    modules = read_json(path)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise _corrupt(path, "a list of sentence-transformers modules")
    transformer, pooling, normalize = folder, None, False
    for module in modules:
        kind, sub = str(module.get("type", "")), str(module.get("path", ""))
        if kind == MODULE_TRANSFORMER:
            transformer = folder / sub if sub else folder
        elif kind == MODULE_POOLING:
            pooling = folder / sub
        elif kind == MODULE_NORMALIZE:
            normalize = True
        else:
            raise _unsupported(f"modules.json lists an unsupported module {kind!r}.", module=kind)
    return transformer, pooling, normalize, True


def _pooling(pooling_dir: Path | None) -> tuple[tuple[str, ...], str]:
    if pooling_dir is None:
        return ("mean",), "default"  # what sentence-transformers does for a bare model
    config = read_object(pooling_dir / "config.json")
    modes = tuple(mode for key, mode in POOLING_KEYS.items() if config.get(key))
    extra = [k for k, v in config.items() if k.startswith("pooling_mode_") and v and k not in POOLING_KEYS]
    if extra or not modes:
        raise _unsupported(f"Unsupported pooling {extra or 'none'}.", pooling=config)
    return modes, f"{pooling_dir.name}/config.json"


def load_spec(folder: Path) -> ModelSpec:
    transformer_dir, pooling_dir, normalize, _ = _modules(folder)
    config_path = transformer_dir / "config.json"
    if not config_path.is_file():
        config_path = folder / "config.json"
    config = read_object(config_path)
    model_type = str(config.get("model_type", ""))
    if model_type not in SUPPORTED_TYPES:
        raise _unsupported(f"Model type {model_type!r} is not supported.", model_type=model_type)
    act = str(config.get("hidden_act", "gelu"))
    position_kind = str(config.get("position_embedding_type", "absolute"))
    if act not in SUPPORTED_ACTS or position_kind != "absolute":
        raise _unsupported(
            f"Activation {act!r} / position embedding {position_kind!r} is not supported.",
            hidden_act=act, position_embedding_type=position_kind,
        )
    sbert_path = folder / "sentence_bert_config.json"
    sbert = read_object(sbert_path) if sbert_path.is_file() else {}
    pooling, pooling_source = _pooling(pooling_dir)
    try:
        hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
        pad = int(config.get("pad_token_id") or 0)
        positions = int(config["max_position_embeddings"])
        limit = positions - (pad + 1 if model_type != "bert" else 0)
        max_seq = min(int(sbert.get("max_seq_length") or limit), limit)
        spec = ModelSpec(
            model_type=model_type, hidden_size=hidden, num_layers=int(config["num_hidden_layers"]),
            num_heads=heads, intermediate_size=int(config["intermediate_size"]),
            vocab_size=int(config["vocab_size"]), max_position_embeddings=positions,
            type_vocab_size=int(config.get("type_vocab_size", 2)), pad_token_id=pad,
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)), hidden_act=act,
            name_or_path=str(config.get("_name_or_path", "")), transformer_dir=transformer_dir,
            pooling=pooling, pooling_source=pooling_source, normalize=normalize,
            max_seq_length=max_seq, do_lower_case=bool(sbert.get("do_lower_case", False)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise errors.error(
            errors.MODEL_CORRUPT, f"{config_path} lacks a usable {exc}.", errors.REMEDIATION_CORRUPT,
            path=config_path,
        ) from exc
    if hidden % heads:
        raise errors.error(errors.MODEL_CORRUPT, "hidden_size is not a multiple of the heads.",
                           path=config_path)
    return spec
