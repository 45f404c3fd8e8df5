"""Reranker overhead figures.

    python tools/bench/search/bench_rerank.py [--json] [--iterations N] [--candidates N]

1. `none` provider: time of rerank() over N candidates (target < 1 ms).
2. SiliconFlow adapter's own overhead for N candidates, excluding server time: a loopback
   server answers instantly with a canned SiliconFlow response; the adapter's rerank() time
   minus a raw httpx round trip of the same request body on a same-configured client
   (target < 5 ms). Medians over the iterations.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def candidates(count: int) -> list[dict[str, Any]]:
    from book_agent.testing.fakes import sample_candidates

    hits = sample_candidates(count)
    for hit in hits:  # realistic chunk sizes (~1,200 characters)
        hit["text"] = (hit["text"] + " ") * 30
    return hits


def median_ms(fn: Any, iterations: int) -> float:
    fn()  # warm up (imports, connection)
    times = []
    for _ in range(iterations):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000.0


def paired_median_ms(first: Any, second: Any, iterations: int) -> tuple[float, float]:
    first()
    second()
    a, b = [], []
    for _ in range(iterations):
        started = time.perf_counter()
        first()
        middle = time.perf_counter()
        second()
        a.append(middle - started)
        b.append(time.perf_counter() - middle)
    return statistics.median(a) * 1000.0, statistics.median(b) * 1000.0


def instant_server(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, like a real provider
        disable_nagle_algorithm = True  # else delayed ACKs add ~40 ms to every round trip

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def bench(iterations: int, count: int, top_n: int) -> dict[str, Any]:
    import os

    import httpx

    from book_agent_adapters.bench import create_reranker
    from book_agent_adapters.bench import reranker_ssl_context as _ssl_context

    hits = candidates(count)
    none = create_reranker({"provider": "none"}, None)
    none_ms = median_ms(lambda: none.rerank("rivers", hits, top_n), iterations)

    results = [{"index": i, "relevance_score": 1.0 - i / count} for i in range(top_n)]
    server = instant_server(json.dumps({"id": "b", "results": results}).encode())
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/rerank"
    os.environ["BENCH_RERANK_KEY"] = "sk-bench"
    config = {"provider": "siliconflow", "endpoint": url,
              "network": {"allow_remote_requests": True, "allowed_endpoints": [url],
                          "auth_env": "BENCH_RERANK_KEY"}}
    reranker = create_reranker(config, None)
    out = reranker.rerank("rivers", hits, top_n)
    assert out["rerank_applied"], out["error"]

    # The adapter's exact request body, so the raw trip sends the same bytes.
    payload = json.dumps({"model": "BAAI/bge-reranker-v2-m3", "query": "rivers",
                          "documents": [h["text"] for h in hits], "top_n": top_n,
                          "return_documents": False}).encode("ascii")
    headers = {"Content-Type": "application/json", "Accept": "application/json",
               "Authorization": "Bearer sk-bench"}
    with httpx.Client(follow_redirects=False, trust_env=False, verify=_ssl_context()) as client:
        # Interleaved, so load on a shared machine hits both sides alike.
        adapter_ms, raw_ms = paired_median_ms(
            lambda: reranker.rerank("rivers", hits, top_n),
            lambda: client.post(url, content=payload, headers=headers).json(),
            iterations,
        )
    server.shutdown()
    return {
        "candidates": count,
        "top_n": top_n,
        "iterations": iterations,
        "none_rerank_ms": round(none_ms, 4),
        "siliconflow_rerank_ms": round(adapter_ms, 3),
        "raw_httpx_round_trip_ms": round(raw_ms, 3),
        "siliconflow_adapter_overhead_ms": round(adapter_ms - raw_ms, 3),
        "targets": {"none_rerank_ms": 1.0, "siliconflow_adapter_overhead_ms": 5.0},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--top-n", type=int, default=10)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    figures = bench(args.iterations, args.candidates, args.top_n)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"rerank overhead, {figures['candidates']} candidates, top_n {figures['top_n']}, "
          f"median of {figures['iterations']}")
    print(f"  none provider rerank():            {figures['none_rerank_ms']:.4f} ms   (target < 1 ms)")
    print(f"  siliconflow rerank() vs loopback:  {figures['siliconflow_rerank_ms']:.3f} ms")
    print(f"  raw httpx round trip, same body:   {figures['raw_httpx_round_trip_ms']:.3f} ms")
    print(f"  siliconflow adapter overhead:      {figures['siliconflow_adapter_overhead_ms']:.3f} ms   (target < 5 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
