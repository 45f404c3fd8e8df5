"""BERT / XLM-R encoder weights, memory-mapped from model.safetensors and used in place.

safetensors is an 8-byte header length, a JSON header, then raw little-endian tensors, so a
float32 tensor is a read-only numpy view of the mapped file: nothing is copied or
transposed at load (copying and transposing 90 MB cost ~70 ms and ~170 MB of RSS in every
process), the pages are shared with the page cache and with every process that maps the
file, and a query touches only the embedding rows it needs. Dense weights keep PyTorch's
[out, in] layout; the forward pass multiplies by their transposed view (`x @ W.T`: BLAS
reads it as is, no copy).

`pack` makes contiguous [in, out] copies with Q, K and V fused and the attention scale
folded into Q: BLAS runs those GEMMs ~15-20% faster, for ~43 MB and ~40 ms once, which pays
in a long-lived process (the MCP server packs in its background warm-up), not in a
one-shot CLI search.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.errors import QueryRuntimeError

from . import errors
from .st_config import ModelSpec

F32 = npt.NDArray[np.float32]
PREFIXES = ("bert.", "roberta.", "xlm_roberta.", "model.")
_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}
_MAX_HEADER = 100 << 20  # safetensors' own limit on the JSON header


@dataclass(frozen=True)
class LayerWeights:
    """Dense weights as [in, out] (a transposed view of the file, or a packed copy).
    `qkv_w` [H, 3H] is set once packed (then `q_scale` is 1: folded into it)."""

    q_w: F32
    q_b: F32
    k_w: F32
    k_b: F32
    v_w: F32
    v_b: F32
    out_w: F32
    out_b: F32
    ln1_g: F32
    ln1_b: F32
    inter_w: F32
    inter_b: F32
    down_w: F32
    down_b: F32
    ln2_g: F32
    ln2_b: F32
    q_scale: float
    qkv_w: F32 | None = None
    qkv_b: F32 | None = None


@dataclass(frozen=True)
class EncoderWeights:
    word: F32
    position: F32
    token_type0: F32
    ln_g: F32
    ln_b: F32
    layers: tuple[LayerWeights, ...]
    nbytes: int
    packed: bool = False


def _corrupt(path: Path, message: str, **details: Any) -> Exception:
    return errors.error(errors.MODEL_CORRUPT, message, errors.REMEDIATION_CORRUPT, path=path, **details)


class MappedTensors:
    """The tensors of one safetensors file as read-only views of a memory map."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with path.open("rb") as fh:  # the map stays valid after the file is closed
            size = fh.seek(0, 2)
            fh.seek(0)
            header_len = struct.unpack("<Q", fh.read(8))[0] if size >= 8 else -1
            if not 0 < header_len <= min(_MAX_HEADER, size - 8):
                raise ValueError("not a safetensors file (bad header length)")
            header = json.loads(fh.read(header_len))
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        if not isinstance(header, dict):
            raise ValueError("no tensor table in the header")
        self._base = 8 + header_len
        self._size = size
        self.entries: dict[str, dict[str, Any]] = {}
        for key, entry in header.items():
            if key == "__metadata__":
                continue
            short = next((key[len(p):] for p in PREFIXES if key.startswith(p)), key)
            self.entries.setdefault(short, entry)

    def get(self, name: str, shape: tuple[int, ...]) -> F32:
        entry = self.entries.get(name)
        if entry is None:
            raise _corrupt(self.path, f"{self.path.name} has no tensor {name!r}.", tensor=name)
        dtype = entry.get("dtype")
        if dtype not in _DTYPES:
            raise errors.error(
                errors.ARCHITECTURE_UNSUPPORTED, f"Tensor {name!r} is stored as {dtype}.",
                "Use a float32 or float16 safetensors export of the model.", tensor=name, dtype=dtype,
            )
        found = tuple(entry.get("shape") or ())
        if found != shape:
            raise _corrupt(
                self.path, f"Tensor {name!r} has shape {list(found)}, config says {list(shape)}.",
                tensor=name, shape=list(found), expected=list(shape),
            )
        begin, end = (int(x) for x in entry["data_offsets"])
        count = math.prod(shape)
        if end - begin != count * np.dtype(_DTYPES[dtype]).itemsize or self._base + end > self._size:
            raise ValueError(f"tensor {name!r} lies outside the file (truncated?)")
        array = np.frombuffer(self._map, dtype=_DTYPES[dtype], count=count, offset=self._base + begin)
        if dtype != "F32":  # float16/64 exports: converted once (a copy), rare
            array = array.astype(np.float32)
        return array.reshape(shape)


def _layer(r: MappedTensors, i: int, spec: ModelSpec) -> LayerWeights:
    h, inter = spec.hidden_size, spec.intermediate_size
    p = f"encoder.layer.{i}."

    def dense(name: str, n_out: int, n_in: int) -> tuple[F32, F32]:
        return r.get(p + name + ".weight", (n_out, n_in)).T, r.get(p + name + ".bias", (n_out,))

    q_w, q_b = dense("attention.self.query", h, h)
    k_w, k_b = dense("attention.self.key", h, h)
    v_w, v_b = dense("attention.self.value", h, h)
    out_w, out_b = dense("attention.output.dense", h, h)
    inter_w, inter_b = dense("intermediate.dense", inter, h)
    down_w, down_b = dense("output.dense", h, inter)
    return LayerWeights(
        q_w=q_w, q_b=q_b, k_w=k_w, k_b=k_b, v_w=v_w, v_b=v_b, out_w=out_w, out_b=out_b,
        ln1_g=r.get(p + "attention.output.LayerNorm.weight", (h,)),
        ln1_b=r.get(p + "attention.output.LayerNorm.bias", (h,)),
        inter_w=inter_w, inter_b=inter_b, down_w=down_w, down_b=down_b,
        ln2_g=r.get(p + "output.LayerNorm.weight", (h,)),
        ln2_b=r.get(p + "output.LayerNorm.bias", (h,)),
        q_scale=1.0 / math.sqrt(h // spec.num_heads),
    )


def load_weights(path: Path, spec: ModelSpec) -> EncoderWeights:
    """Map `path`; raise query.local_model_corrupt for unreadable, truncated or mis-shaped files."""
    h = spec.hidden_size
    try:
        r = MappedTensors(path)
        types = r.get("embeddings.token_type_embeddings.weight", (spec.type_vocab_size, h))
        layers = tuple(_layer(r, i, spec) for i in range(spec.num_layers))
        weights = EncoderWeights(
            word=r.get("embeddings.word_embeddings.weight", (spec.vocab_size, h)),
            position=r.get("embeddings.position_embeddings.weight", (spec.max_position_embeddings, h)),
            token_type0=types[0],
            ln_g=r.get("embeddings.LayerNorm.weight", (h,)),
            ln_b=r.get("embeddings.LayerNorm.bias", (h,)),
            layers=layers,
            nbytes=0,
        )
    except QueryRuntimeError:
        raise
    except Exception as exc:  # OSError, ValueError (ours, JSON), KeyError/TypeError (header fields)
        raise _corrupt(path, f"Cannot read {path.name}: {exc}", error=type(exc).__name__) from exc
    return replace(weights, nbytes=_nbytes(weights))


def _nbytes(w: EncoderWeights) -> int:
    arrays = [w.word, w.position] + [a for lw in w.layers for a in vars(lw).values()
                                     if isinstance(a, np.ndarray)]
    return sum(a.nbytes for a in arrays)


def pack(w: EncoderWeights) -> EncoderWeights:
    """Contiguous [in, out] copies, fused QKV with the scale folded into Q (see the module doc)."""
    if w.packed:
        return w
    layers = []
    for lw in w.layers:
        scale = np.float32(lw.q_scale)
        qkv_w = np.ascontiguousarray(np.concatenate([lw.q_w * scale, lw.k_w, lw.v_w], axis=1))
        qkv_b = np.concatenate([lw.q_b * scale, lw.k_b, lw.v_b])
        layers.append(replace(
            lw, qkv_w=qkv_w, qkv_b=qkv_b, q_scale=1.0,
            out_w=np.ascontiguousarray(lw.out_w), inter_w=np.ascontiguousarray(lw.inter_w),
            down_w=np.ascontiguousarray(lw.down_w),
        ))
    return replace(w, layers=tuple(layers), packed=True)
