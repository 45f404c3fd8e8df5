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
from .weights import F32, EncoderWeights, LayerWeights

I64 = npt.NDArray[np.int64]
# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7, below float32 resolution of GELU's output.
_P = np.float32(0.3275911)
# Its coefficients a1..a5, halved: GELU's 1/2 folded in (see gelu_erf_).
_A_HALF = tuple(np.float32(0.5 * a) for a in (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429))
_SQRT_HALF = np.float32(np.sqrt(0.5))


def gelu_erf_(x: F32) -> F32:
    """GELU (erf) computed in place on `x`, in few passes over it.

    With a = |x|/sqrt(2) and erf(a) = 1 - poly(t) exp(-a^2) (A&S 7.1.26), GELU(x) =
    x (1 + erf(x/sqrt 2)) / 2 = max(x, 0) - |x| poly(t) exp(-a^2) / 2 for either sign of x,
    so no sign fix-up is needed; the 1/2 is folded into the polynomial.
    """
    absx = np.abs(x)
    a = absx * _SQRT_HALF
    t = a * _P
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    poly = t * _A_HALF[4]
    for coeff in (_A_HALF[3], _A_HALF[2], _A_HALF[1], _A_HALF[0]):
        poly += coeff
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a
    poly *= absx
    np.maximum(x, np.float32(0.0), out=x)
    x -= poly
    return x


def activation(x: F32, kind: str) -> F32:
    """The activation of `x`; may reuse `x`'s memory (callers pass a fresh GEMM output)."""
    if kind == "gelu":
        return gelu_erf_(x)
    if kind == "relu":
        return np.maximum(x, np.float32(0.0), out=x)
    # gelu_new / gelu_pytorch_tanh: the tanh approximation
    c = np.float32(np.sqrt(2.0 / np.pi))
    inner = np.tanh(c * (x + np.float32(0.044715) * x * x * x))
    return cast(F32, np.float32(0.5) * x * (np.float32(1.0) + inner))


def layer_norm(x: F32, gamma: F32, beta: F32, eps: float) -> F32:
    """LayerNorm over the last axis of a 2-D `x`, in place (x is a fresh temporary)."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)
    var *= np.float32(1.0 / x.shape[-1])
    var += np.float32(eps)
    np.sqrt(var, out=var)
    np.reciprocal(var, out=var)
    x *= var[:, None]
    x *= gamma
    x += beta
    return x


def position_ids(ids: I64, spec: ModelSpec) -> I64:
    if spec.model_type == "bert":
        return np.broadcast_to(np.arange(ids.shape[1], dtype=np.int64), ids.shape)
    # RoBERTa numbers real tokens from padding_idx + 1; padding keeps padding_idx.
    real = (ids != spec.pad_token_id).astype(np.int64)
    return cast(I64, np.cumsum(real, axis=1) * real + spec.pad_token_id)


def _dense(x: F32, w: F32, b: F32) -> F32:
    y = x @ w  # w is [in, out]: a transposed view of the mapped file, or a packed copy
    y += b
    return y


def _qkv(x: F32, lw: LayerWeights) -> tuple[F32, F32, F32]:
    """Q (already scaled by 1/sqrt(head_dim)), K, V as [tokens, H]."""
    if lw.qkv_w is not None and lw.qkv_b is not None:  # packed: one GEMM, scale folded in
        qkv = _dense(x, lw.qkv_w, lw.qkv_b)
        h = qkv.shape[1] // 3
        return qkv[:, :h], qkv[:, h : 2 * h], qkv[:, 2 * h :]
    q = _dense(x, lw.q_w, lw.q_b)
    q *= np.float32(lw.q_scale)
    return q, _dense(x, lw.k_w, lw.k_b), _dense(x, lw.v_w, lw.v_b)


def _attention(x: F32, lw: LayerWeights, shape: tuple[int, int, int, int], bias: F32 | None) -> F32:
    """Self-attention context [B*L, H] for hidden states [B*L, H]; shape is (B, L, heads, hd)."""
    q, k, v = _qkv(x, lw)
    return attention_core(q, k, v, shape, bias)


def attention_core(q: F32, k: F32, v: F32, shape: tuple[int, int, int, int], bias: F32 | None) -> F32:
    """Scores, softmax and context from projected q, k, v [B*L, H] (tools/study/encoder_profile.py
    times this apart from the projections)."""
    batch, length, heads, hd = shape
    q4 = q.reshape(batch, length, heads, hd).transpose(0, 2, 1, 3)
    k4 = k.reshape(batch, length, heads, hd).transpose(0, 2, 3, 1)
    v4 = v.reshape(batch, length, heads, hd).transpose(0, 2, 1, 3)
    scores = q4 @ k4  # [B, heads, L, L]
    if bias is not None:
        scores += bias
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    sums = scores.sum(axis=-1, keepdims=True)
    np.reciprocal(sums, out=sums)
    scores *= sums
    context = np.empty((batch, length, heads, hd), dtype=np.float32)
    # written straight into [B, L, heads, hd] order: no transpose copy afterwards
    np.matmul(scores, v4, out=context.transpose(0, 2, 1, 3))
    return context.reshape(batch * length, heads * hd)


def _layer(x: F32, lw: LayerWeights, shape: tuple[int, int, int, int], bias: F32 | None,
           spec: ModelSpec) -> F32:
    attn = _dense(_attention(x, lw, shape, bias), lw.out_w, lw.out_b)
    attn += x
    x = layer_norm(attn, lw.ln1_g, lw.ln1_b, spec.layer_norm_eps)
    out = _dense(activation(_dense(x, lw.inter_w, lw.inter_b), spec.hidden_act), lw.down_w, lw.down_b)
    out += x
    return layer_norm(out, lw.ln2_g, lw.ln2_b, spec.layer_norm_eps)


def encode_tokens(w: EncoderWeights, spec: ModelSpec, ids: I64, mask: I64) -> F32:
    """Last hidden states [B, L, H] for right-padded `ids` with attention `mask` (1 = real).

    Hidden states stay 2-D ([B*L, H]) so every dense layer is one GEMM. A batch without
    padding (every single query) gets no attention bias at all."""
    batch, length = ids.shape
    h, heads = spec.hidden_size, spec.num_heads
    x = w.word[ids.reshape(-1)]  # a gather: a fresh array, so the weights stay untouched
    x += w.position[position_ids(ids, spec).reshape(-1)]
    x += w.token_type0
    x = layer_norm(x, w.ln_g, w.ln_b, spec.layer_norm_eps)
    bias = None
    if not mask.all():
        bias = ((1 - mask) * np.finfo(np.float32).min).astype(np.float32)[:, None, None, :]
    shape = (batch, length, heads, h // heads)
    for lw in w.layers:
        x = _layer(x, lw, shape, bias, spec)
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
