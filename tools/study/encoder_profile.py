"""Where a warm query encoding goes, and how far it is from the machine's floor.

Used by tools/bench/search/bench_local_encoder.py. Times are CPU time of this thread (time.thread_time),
medians over runs: on a shared 2-core machine wall time measures the neighbours as much as
the code. The floor is the model's FLOPs at this machine's measured single-thread SGEMM
rate, and its weight bytes at the measured copy bandwidth: for a short query, streaming
~43 MB of dense weights once bounds the time more than the arithmetic does.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from book_agent_adapters.bench import EncoderWeights, ModelSpec
from book_agent_adapters.bench import bert_numpy as bn

WORD_QUERIES = {
    3: "general battle plan",
    12: "what does the general do before the battle in the mountain pass",
    40: " ".join(["the army marches through the river valley at dawn"] * 4),
}


def cpu_median_ms(fn: Callable[[], object], runs: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        started = time.thread_time()
        fn()
        times.append(time.thread_time() - started)
    return statistics.median(times) * 1000


def flops(spec: ModelSpec, tokens: int) -> dict[str, float]:
    """Multiply-adds x 2 per encode: dense layers, and attention's two small products."""
    h, inter, n = spec.hidden_size, spec.intermediate_size, spec.num_layers
    dense = 2 * tokens * (4 * h * h + 2 * h * inter) * n
    attention = 2 * 2 * tokens * tokens * h * n
    return {"dense_mflop": dense / 1e6, "attention_mflop": attention / 1e6}


def machine_rates() -> dict[str, float]:
    """Single-thread SGEMM GFLOP/s (1024^3) and copy bandwidth GB/s (64 MB) here, now."""
    a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    gemm_ms = min(cpu_median_ms(lambda: a @ a, 5) for _ in range(2))
    big = np.ones(16 << 20, dtype=np.float32)
    out = np.empty_like(big)
    copy_ms = cpu_median_ms(lambda: np.copyto(out, big), 7)
    return {"sgemm_gflops": round(2 * 1024**3 / gemm_ms / 1e6, 1),
            "copy_gbps": round(2 * big.nbytes / copy_ms / 1e6, 1)}


def _timed_layer(x: Any, lw: Any, shape: tuple[int, int, int, int], spec: ModelSpec,
                 acc: dict[str, float]) -> Any:
    """bert_numpy._layer, op by op (must stay the same sequence of calls)."""
    clock = [time.thread_time()]

    def tick(name: str) -> None:
        now = time.thread_time()
        acc[name] = acc.get(name, 0.0) + now - clock[0]
        clock[0] = now

    q, k, v = bn._qkv(x, lw)
    tick("qkv dense")
    context = bn.attention_core(q, k, v, shape, None)
    tick("attention (scores, softmax, context)")
    attn = bn._dense(context, lw.out_w, lw.out_b)
    tick("output dense")
    attn += x
    x = bn.layer_norm(attn, lw.ln1_g, lw.ln1_b, spec.layer_norm_eps)
    tick("residual + layer norm")
    inner = bn._dense(x, lw.inter_w, lw.inter_b)
    tick("intermediate dense")
    act = bn.activation(inner, spec.hidden_act)
    tick("gelu")
    out = bn._dense(act, lw.down_w, lw.down_b)
    tick("down dense")
    out += x
    x = bn.layer_norm(out, lw.ln2_g, lw.ln2_b, spec.layer_norm_eps)
    tick("residual + layer norm")
    return x


def profile_ops(w: EncoderWeights, spec: ModelSpec, ids: Any, runs: int) -> dict[str, float]:
    """Median CPU ms per op kind, summed over the layers, for one single-sequence encode."""
    shape = (1, ids.shape[1], spec.num_heads, spec.hidden_size // spec.num_heads)
    samples: dict[str, list[float]] = {}
    for run in range(runs + 3):
        acc: dict[str, float] = {}
        started = time.thread_time()
        x = w.word[ids.reshape(-1)]
        x += w.position[bn.position_ids(ids, spec).reshape(-1)]
        x += w.token_type0
        x = bn.layer_norm(x, w.ln_g, w.ln_b, spec.layer_norm_eps)
        acc["embeddings"] = time.thread_time() - started
        for lw in w.layers:
            x = _timed_layer(x, lw, shape, spec, acc)
        if run >= 3:
            for name, seconds in acc.items():
                samples.setdefault(name, []).append(seconds * 1000)
    return {name: round(statistics.median(v), 3) for name, v in samples.items()}


def floor_report(w: EncoderWeights, spec: ModelSpec, ids: Any, warm_ms: float,
                 rates: dict[str, float]) -> dict[str, Any]:
    tokens = int(ids.shape[1])
    f = flops(spec, tokens)
    dense_bytes = sum(a.nbytes for lw in w.layers for a in (lw.q_w, lw.k_w, lw.v_w, lw.out_w,
                                                            lw.inter_w, lw.down_w))
    compute_ms = (f["dense_mflop"] + f["attention_mflop"]) / rates["sgemm_gflops"]  # MFLOP / GFLOP/s = ms
    stream_ms = dense_bytes / rates["copy_gbps"] / 1e6
    return {"tokens": tokens, **{k: round(v, 1) for k, v in f.items()},
            "dense_weight_mb": round(dense_bytes / 1e6, 1),
            "floor_compute_ms": round(compute_ms, 2), "floor_weight_stream_ms": round(stream_ms, 2),
            "measured_cpu_ms": round(warm_ms, 2),
            "achieved_gflops": round((f["dense_mflop"] + f["attention_mflop"]) / warm_ms, 1)}


def warm_encodes(model: Any, runs: int) -> dict[str, Any]:
    """Per query length: the forward pass on mapped and on packed weights (interleaved), and
    the whole encode (tokenizer, pass, pooling) as the encoder runs it once warm (packed)."""
    from book_agent_adapters.bench import load_weights, pack

    mapped = load_weights(model.weights_path, model.spec)
    packed = pack(mapped)
    out: dict[str, Any] = {}
    for words, text in WORD_QUERIES.items():
        ids = np.asarray(model.tokenizer.ids([text]), dtype=np.int64)
        mask = np.ones_like(ids)
        times: dict[str, list[float]] = {"mapped": [], "packed": []}
        for _ in range(runs):
            for name, w in (("mapped", mapped), ("packed", packed)):
                started = time.thread_time()
                bn.encode_tokens(w, model.spec, ids, mask)
                times[name].append((time.thread_time() - started) * 1000)
        wall = []
        for _ in range(runs):
            started = time.perf_counter()
            model.embed([text])
            wall.append((time.perf_counter() - started) * 1000)
        out[f"{words}_words"] = {
            "tokens": int(ids.shape[1]),
            "pass_cpu_p50_ms_mapped": round(statistics.median(times["mapped"]), 2),
            "pass_cpu_p50_ms_packed": round(statistics.median(times["packed"]), 2),
            "encode_wall_p50_ms": round(statistics.median(wall), 2),
        }
    return out
