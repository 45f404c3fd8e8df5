"""Benchmark the local numpy query encoder on the real all-MiniLM-L6-v2.

Prints model load time (with and without the sha256 check cached), warm single-query
latency (p50/p90/p99 and CPU ms per query), a 256-token query, batch throughput, the cosine against the
sentence-transformers reference embeddings, warm encodes of 3-, 12- and 40-word queries on
memory-mapped and on packed weights, the 12-word pass op by op, and the floor (FLOPs at the
measured SGEMM rate, weight bytes at the measured bandwidth; tools/study/encoder_profile.py). `--json` prints the same figures as JSON.
OPENBLAS_CORETYPE is reported, never changed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = ROOT / "tests" / "support" / "data" / "all-MiniLM-L6-v2.reference.json"
SHORT = "What does the general do before a battle is fought?"


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


def _timed(fn: Any, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def run(repeat: int) -> dict[str, Any]:
    import numpy as np

    from book_agent_adapters.bench import LocalQueryEncoder, clear_model_cache
    from book_agent_adapters.bench import encoder_verify as verify_mod

    results: dict[str, Any] = {
        "python": platform.python_version(), "numpy": np.__version__, "cpus": os.cpu_count(),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
        "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
    }
    with tempfile.TemporaryDirectory() as cache:
        def fresh_load() -> tuple[LocalQueryEncoder, float]:
            clear_model_cache()
            verify_mod.forget_memory()
            enc = LocalQueryEncoder("all-MiniLM-L6-v2", 384, verify_cache_dir=Path(cache))
            started = time.perf_counter()
            enc.load()
            return enc, time.perf_counter() - started

        _, cold = fresh_load()  # hashes 90 MB and records the result in the cache dir
        enc, warm = fresh_load()  # sha256 read back from the cache dir
    model = enc.load()
    results["model_dir"] = str(model.folder)
    results["load_ms_with_sha256"] = _ms(cold)
    results["load_ms_sha256_cached"] = _ms(warm)
    results["load_ms_weights_and_tokenizer"] = _ms(model.load_seconds)
    started = time.perf_counter()
    enc.encode(SHORT)
    results["first_encode_ms"] = _ms(time.perf_counter() - started)

    for _ in range(10):
        enc.encode(SHORT)
    cpu_started = time.process_time()
    short = _timed(lambda: enc.encode(SHORT), repeat)
    cpu_ms = (time.process_time() - cpu_started) * 1000.0 / repeat
    q = statistics.quantiles(short, n=100)
    results["short_query"] = {
        "text": SHORT, "tokens": len(model.tokenizer.ids([SHORT])[0]), "runs": repeat,
        "p50_ms": _ms(statistics.median(short)), "p90_ms": _ms(q[89]), "p99_ms": _ms(q[98]),
        "mean_ms": _ms(statistics.fmean(short)),
        # CPU time per query (all threads): a load-independent figure on a busy machine
        "cpu_ms_per_query": round(cpu_ms, 3),
    }
    long_text = " ".join(["word"] * 400)
    long = _timed(lambda: enc.encode(long_text), max(5, repeat // 10))
    results["long_query_256_tokens_p50_ms"] = _ms(statistics.median(long))
    batch = [f"{SHORT} number {i}" for i in range(64)]
    started = time.perf_counter()
    enc.encode_batch(batch)
    elapsed = time.perf_counter() - started
    results["batch_64_short_texts_per_s"] = round(64 / elapsed, 1)

    results.update(_reference(enc))
    results["output_dtype"] = str(enc.encode(SHORT).dtype)
    results.update(_profile(model, repeat))
    return results


def _reference(enc: Any) -> dict[str, Any]:
    import numpy as np

    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    cosines = []
    for item in reference["items"]:
        got = enc.encode(item["text"]).astype(np.float64)
        want = np.asarray(item["embedding"], dtype=np.float64)
        cosine = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
        cosines.append({"text": item["text"][:40], "cosine": round(cosine, 7)})
    return {"reference_cosines": cosines, "reference_min_cosine": min(c["cosine"] for c in cosines)}


def _profile(model: Any, repeat: int) -> dict[str, Any]:
    """Warm encode p50 for 3-, 12- and 40-word queries, the 12-word pass op by op, the floor."""
    import numpy as np
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
    from book_agent_adapters.bench import load_weights, pack
    from tools.study.encoder_profile import (
        WORD_QUERIES,
        floor_report,
        machine_rates,
        profile_ops,
        warm_encodes,
    )

    out: dict[str, Any] = {"warm_encode": warm_encodes(model, max(20, repeat // 4))}
    ids = np.asarray(model.tokenizer.ids([WORD_QUERIES[12]]), dtype=np.int64)
    mapped = load_weights(model.weights_path, model.spec)
    packed = pack(mapped)
    out["ops_12_words_mapped_cpu_ms"] = profile_ops(mapped, model.spec, ids, max(20, repeat // 4))
    out["ops_12_words_packed_cpu_ms"] = profile_ops(packed, model.spec, ids, max(20, repeat // 4))
    rates = machine_rates()
    out["machine"] = rates
    warm = out["warm_encode"]["12_words"]["pass_cpu_p50_ms_packed"]
    out["floor_12_words"] = floor_report(mapped, model.spec, ids, warm, rates)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--repeat", type=int, default=200, help="short-query runs")
    args = parser.parse_args(argv)
    results = run(args.repeat)
    if args.json:
        json.dump(results, sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    for key, value in results.items():
        if key == "reference_cosines":
            print("reference cosines:")
            for row in value:
                print(f"  {row['cosine']:.7f}  {row['text']!r}")
        elif isinstance(value, dict):
            print(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
