"""The BERT / XLM-RoBERTa encoder forward pass and sentence pooling, in numpy float32.

Mirrors Hugging Face `BertModel` / `XLMRobertaModel` in eval mode (no dropout), with
token type 0 everywhere (single-sentence queries). Hidden states stay 2-D ([tokens, H])
so every dense layer is a single GEMM.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import numpy.typing as npt

from .st_config import ModelSpec
from .weights import F32, EncoderWeights

I64 = npt.NDArray[np.int64]
# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7, below float32 resolution of GELU's output.
_P = np.float32(0.3275911)
_A = tuple(np.float32(a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
_SQRT_HALF = np.float32(np.sqrt(0.5))


def erf(x: F32) -> F32:
    a = np.abs(x)
    t = 1.0 / (1.0 + _P * a)
    poly = ((((_A[4] * t + _A[3]) * t + _A[2]) * t + _A[1]) * t + _A[0]) * t
    y = 1.0 - poly * np.exp(-a * a)
    return np.copysign(y, x).astype(np.float32, copy=False)


def activation(x: F32, kind: str) -> F32:
    if kind == "gelu":
        return x * np.float32(0.5) * (np.float32(1.0) + erf(x * _SQRT_HALF))
    if kind == "relu":
        return np.maximum(x, np.float32(0.0))
    # gelu_new / gelu_pytorch_tanh: the tanh approximation
    c = np.float32(np.sqrt(2.0 / np.pi))
    inner = np.tanh(c * (x + np.float32(0.044715) * x * x * x))
    return cast(F32, np.float32(0.5) * x * (np.float32(1.0) + inner))


def layer_norm(x: F32, gamma: F32, beta: F32, eps: float) -> F32:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    var = np.einsum("ij,ij->i", centered, centered)[:, None] / np.float32(x.shape[-1])
    centered *= 1.0 / np.sqrt(var + np.float32(eps))
    centered *= gamma
    centered += beta
    return centered


def position_ids(ids: I64, spec: ModelSpec) -> I64:
    if spec.model_type == "bert":
        return np.broadcast_to(np.arange(ids.shape[1], dtype=np.int64), ids.shape)
    # RoBERTa numbers real tokens from padding_idx + 1; padding keeps padding_idx.
    real = (ids != spec.pad_token_id).astype(np.int64)
    return cast(I64, np.cumsum(real, axis=1) * real + spec.pad_token_id)


def encode_tokens(w: EncoderWeights, spec: ModelSpec, ids: I64, mask: I64) -> F32:
    """Last hidden states [B, L, H] for right-padded `ids` with attention `mask` (1 = real)."""
    batch, length = ids.shape
    h, heads = spec.hidden_size, spec.num_heads
    hd = h // heads
    x = w.word[ids] + w.position[position_ids(ids, spec)]
    x += w.token_type0
    x = layer_norm(x.reshape(batch * length, h), w.ln_g, w.ln_b, spec.layer_norm_eps)
    bias = None
    if not mask.all():
        bias = ((1 - mask) * np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
    for lw in w.layers:
        qkv = x @ lw.qkv_w
        qkv += lw.qkv_b
        q, k, v = qkv.reshape(batch, length, 3, heads, hd).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)  # scale already folded into q
        if bias is not None:
            scores += bias
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, h)
        attn = context @ lw.out_w
        attn += lw.out_b
        attn += x
        x = layer_norm(attn, lw.ln1_g, lw.ln1_b, spec.layer_norm_eps)
        inner = x @ lw.inter_w
        inner += lw.inter_b
        out = activation(inner, spec.hidden_act) @ lw.down_w
        out += lw.down_b
        out += x
        x = layer_norm(out, lw.ln2_g, lw.ln2_b, spec.layer_norm_eps)
    return x.reshape(batch, length, h)


def pool(hidden: F32, mask: I64, modes: tuple[str, ...]) -> F32:
    """sentence-transformers Pooling: the listed modes, concatenated in its order."""
    m = mask.astype(np.float32)[:, :, None]
    counts = np.maximum(m.sum(axis=1), np.float32(1e-9))
    parts: list[F32] = []
    for mode in modes:
        if mode == "cls":
            parts.append(hidden[:, 0])
        elif mode == "max":
            parts.append(np.where(m > 0, hidden, np.float32(-1e9)).max(axis=1))
        elif mode == "mean":
            parts.append(cast(F32, (hidden * m).sum(axis=1) / counts))
        elif mode == "mean_sqrt_len":
            parts.append(cast(F32, (hidden * m).sum(axis=1) / np.sqrt(counts)))
        else:
            raise ValueError(f"unknown pooling mode {mode!r}")  # st_config admits none
    out = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
    return np.ascontiguousarray(out, dtype=np.float32)


def l2_normalize(x: F32) -> F32:
    norms = np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]
    return cast(F32, (x / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False))
