"""Loading BERT / XLM-R encoder weights from model.safetensors into float32 numpy arrays.

Q, K and V are fused into one [H, 3H] matrix (one matmul per layer instead of three), with
the 1/sqrt(head_dim) attention scale folded into Q. Matrices are stored once, at load, as
C-contiguous [in, out]: measured ~20% faster per GEMM than BLAS reading transposed views.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.errors import QueryRuntimeError

from . import errors
from .st_config import ModelSpec

F32 = npt.NDArray[np.float32]
PREFIXES = ("bert.", "roberta.", "xlm_roberta.", "model.")


@dataclass
class LayerWeights:
    qkv_w: F32  # [H, 3H]
    qkv_b: F32
    out_w: F32  # [H, H]
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    inter_w: F32  # [H, I]
    inter_b: F32
    down_w: F32  # [I, H]
    down_b: F32
    ln2_g: F32
    ln2_b: F32


@dataclass
class EncoderWeights:
    word: F32
    position: F32
    token_type0: F32
    ln_g: F32
    ln_b: F32
    layers: list[LayerWeights]
    nbytes: int


def _corrupt(path: Path, message: str, **details: Any) -> Exception:
    return errors.error(errors.MODEL_CORRUPT, message, errors.REMEDIATION_CORRUPT, path=path, **details)


class _Reader:
    def __init__(self, handle: Any, path: Path) -> None:
        self.path = path
        self.handle = handle
        self.names: dict[str, str] = {}
        keys: list[str] = list(handle.keys())  # a safe_open handle is not a dict
        for key in keys:
            short = key
            for prefix in PREFIXES:
                if short.startswith(prefix):
                    short = short[len(prefix):]
                    break
            self.names.setdefault(short, key)

    def get(self, name: str, shape: tuple[int, ...]) -> F32:
        key = self.names.get(name)
        if key is None:
            raise _corrupt(self.path, f"{self.path.name} has no tensor {name!r}.", tensor=name)
        dtype = self.handle.get_slice(key).get_dtype()
        if dtype not in ("F32", "F16", "F64"):
            raise errors.error(
                errors.ARCHITECTURE_UNSUPPORTED, f"Tensor {name!r} is stored as {dtype}.",
                "Use a float32 or float16 safetensors export of the model.", tensor=name, dtype=dtype,
            )
        array = np.asarray(self.handle.get_tensor(key), dtype=np.float32)
        if tuple(array.shape) != shape:
            raise _corrupt(
                self.path, f"Tensor {name!r} has shape {array.shape}, config says {shape}.",
                tensor=name, shape=list(array.shape), expected=list(shape),
            )
        return array


def _t(matrix: F32) -> F32:
    return np.ascontiguousarray(matrix.T)


def _layer(r: _Reader, i: int, spec: ModelSpec) -> LayerWeights:
    h, inter = spec.hidden_size, spec.intermediate_size
    p = f"encoder.layer.{i}."
    scale = np.float32(1.0 / np.sqrt(h // spec.num_heads))
    q_w = r.get(p + "attention.self.query.weight", (h, h)) * scale
    q_b = r.get(p + "attention.self.query.bias", (h,)) * scale
    qkv_w = np.concatenate(
        [q_w, r.get(p + "attention.self.key.weight", (h, h)), r.get(p + "attention.self.value.weight", (h, h))]
    )
    qkv_b = np.concatenate(
        [q_b, r.get(p + "attention.self.key.bias", (h,)), r.get(p + "attention.self.value.bias", (h,))]
    )
    return LayerWeights(
        qkv_w=_t(qkv_w), qkv_b=qkv_b,
        out_w=_t(r.get(p + "attention.output.dense.weight", (h, h))),
        out_b=r.get(p + "attention.output.dense.bias", (h,)),
        ln1_g=r.get(p + "attention.output.LayerNorm.weight", (h,)),
        ln1_b=r.get(p + "attention.output.LayerNorm.bias", (h,)),
        inter_w=_t(r.get(p + "intermediate.dense.weight", (inter, h))),
        inter_b=r.get(p + "intermediate.dense.bias", (inter,)),
        down_w=_t(r.get(p + "output.dense.weight", (h, inter))),
        down_b=r.get(p + "output.dense.bias", (h,)),
        ln2_g=r.get(p + "output.LayerNorm.weight", (h,)),
        ln2_b=r.get(p + "output.LayerNorm.bias", (h,)),
    )


def load_weights(path: Path, spec: ModelSpec) -> EncoderWeights:
    """Raise query.local_model_corrupt for unreadable, truncated or mis-shaped files."""
    from safetensors import safe_open

    h = spec.hidden_size
    try:
        with safe_open(str(path), framework="np") as handle:
            r = _Reader(handle, path)
            types = r.get("embeddings.token_type_embeddings.weight", (spec.type_vocab_size, h))
            weights = EncoderWeights(
                word=r.get("embeddings.word_embeddings.weight", (spec.vocab_size, h)),
                position=r.get("embeddings.position_embeddings.weight", (spec.max_position_embeddings, h)),
                token_type0=np.ascontiguousarray(types[0]),
                ln_g=r.get("embeddings.LayerNorm.weight", (h,)),
                ln_b=r.get("embeddings.LayerNorm.bias", (h,)),
                layers=[_layer(r, i, spec) for i in range(spec.num_layers)],
                nbytes=0,
            )
    except QueryRuntimeError:
        raise
    except Exception as exc:  # safetensors raises its own error type and OSError/ValueError
        raise _corrupt(path, f"Cannot read {path.name}: {exc}", error=type(exc).__name__) from exc
    weights.nbytes = weights.word.nbytes + weights.position.nbytes + sum(
        sum(a.nbytes for a in vars(layer).values()) for layer in weights.layers
    )
    return weights
