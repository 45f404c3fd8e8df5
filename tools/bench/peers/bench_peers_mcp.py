"""MCP over stdio: book-agent's server against a minimal FastMCP + bm25s server over the same book.

    .venv-bench/bin/python tools/bench/peers/bench_peers_mcp.py [--calls 200] [--spawns 5] [--baseline CHECKOUT]

The peer is what a user would write in a page: FastMCP, one `search(query, query_vector, top_k)`
tool, bm25s (English stopwords) over the book's records and an exact numpy product over its
vectors, fused by RRF (50 candidates a channel, as ours), answering ids, texts and scores. Both
serve bench_peers' `book` corpus (fairytaleqa's test book, real vectors and questions), every call
brings the question's vector (so neither encodes), and the calls alternate between the servers
(the machine's load falls on both alike). Figures:

1. warm round trip p50 (send -> answer parsed), ours / the peer's (target <= 1.3);
2. the first search sent at once after `tools/list` (initialize, initialized, tools/list and
   the search written together, as a host does), against our warm p50 (target <= 2): spawns
   of a fresh server each; also with a text query (the local encoder then loads on it),
   against warm text queries (up to 100 after the vector rounds, the encoder's work in both).

`--baseline CHECKOUT` adds another checkout's server (PYTHONPATH) to the same rounds.
`--no-warm-up` adds our server with its background warm-up switched off (a launcher that makes
`BookSession.queue_warm_up` do nothing, then runs the same entry): whether the warm-up paths pay
for their code (issue 46, item 5) is the first search's figure with and without them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")

from tools.bench.serve.bench_mcp import INIT, rpc, wait_for  # noqa: E402

# The peer's one tool over `ids`, `texts` and `matrix` (its loader sets them), shared by the stdio
# peer here and the HTTP one (bench_peers_http.py), so both answer alike.
SEARCH_TOOL = r'''
retriever = bm25s.BM25()
retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
server = FastMCP("peer")

@server.tool
def search(query: str, query_vector: list[float] | None = None, top_k: int = 10) -> dict:
    tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
    lexical = []
    if tokens.ids and tokens.ids[0]:
        found, scores = retriever.retrieve(tokens, k=min(50, len(texts)), show_progress=False, n_threads=1)
        lexical = [int(r) for r, s in zip(found[0], scores[0]) if s > 0]
    nearest = []
    if query_vector is not None:
        scored = matrix @ np.asarray(query_vector, dtype=np.float32)
        top = np.argpartition(-scored, 50)[:50]
        nearest = top[np.argsort(-scored[top])].tolist()
    fused = {}
    for ranking in (lexical, nearest):
        for rank, row in enumerate(ranking):
            fused[row] = fused.get(row, 0.0) + 1.0 / (61 + rank)
    best = sorted(fused, key=lambda row: -fused[row])[:top_k]
    return {"hits": [{"record_id": ids[r], "text": texts[r], "score": fused[r]} for r in best]}
'''

PEER = r'''
import json, sqlite3, sys
import bm25s, numpy as np
from fastmcp import FastMCP

database, vectors_file = sys.argv[1], sys.argv[2]
con = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
rows = con.execute("SELECT record_id, text, headings FROM records ORDER BY seq").fetchall()
ids = [r[0] for r in rows]
texts = [" ".join([*json.loads(r[2]), r[1]]) for r in rows]
matrix = np.load(vectors_file)
''' + SEARCH_TOOL + r'''
server.run(transport="stdio", show_banner=False)
'''


class Server:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        # the server's log: $BENCH_MCP_STDERR (a file, appended) when set, else nowhere
        with open(os.environ.get("BENCH_MCP_STDERR", os.devnull), "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env)
        self.ident = 10

    def send(self, payload: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(payload)
        self.proc.stdin.flush()

    def call(self, arguments: dict[str, Any]) -> float:
        self.ident += 1
        started = time.perf_counter()
        self.send(rpc("tools/call", {"name": "search", "arguments": arguments}, self.ident))
        self._answer(self.ident)
        return (time.perf_counter() - started) * 1000

    def _answer(self, ident: int) -> None:
        assert self.proc.stdout is not None
        answer = wait_for(self.proc.stdout, ident)
        if "error" in answer or answer.get("result", {}).get("isError"):
            raise RuntimeError(json.dumps(answer)[:400])

    def first_at_once(self, arguments: dict[str, Any]) -> tuple[float, float]:
        """(spawn -> tools/list answered, tools/list answered -> first search answered) in ms,
        the search written together with the handshake."""
        started = time.perf_counter()
        self.send(rpc("initialize", INIT, 1) + rpc("notifications/initialized", {}) + rpc("tools/list", {}, 2)
                  + rpc("tools/call", {"name": "search", "arguments": arguments}, 3))
        self._answer(2)
        listed = time.perf_counter()
        self._answer(3)
        return (listed - started) * 1000, (time.perf_counter() - listed) * 1000

    def handshake(self) -> None:
        self.send(rpc("initialize", INIT, 1) + rpc("notifications/initialized", {}) + rpc("tools/list", {}, 2))
        self._answer(2)

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def setup(folder: Path) -> tuple[Any, list[str], dict[str, list[str]], dict[str, str]]:
    import numpy as np

    from tools.bench.peers.bench_peers import book_corpus

    corpus = book_corpus(400)
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "mcp-peer-vectors.npy", corpus.matrix)
    script = folder / "mcp_peer_server.py"
    script.write_text(PEER, encoding="utf-8")
    from book_agent import BookAgent

    with BookAgent(corpus.data_dir) as agent:
        database = agent.books.open(corpus.ref).package.database_path
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    ours = [sys.executable, "-P", "-m", "book_agent", "--data-dir", str(corpus.data_dir), "mcp", corpus.ref]
    argvs = {"book-agent": ours, "FastMCP+bm25s": [sys.executable, str(script), str(database),
                                                   str(folder / "mcp-peer-vectors.npy")]}
    return corpus, list(argvs), argvs, env


NO_WARM_UP = ("import sys; from book_agent.mcp.session import BookSession; "
              "BookSession.queue_warm_up = lambda self, kind='search': None; "
              "from book_agent.cli.entry import main; main()")


def bench(calls: int, spawns: int, baseline: str | None, no_warm_up: bool = False) -> dict[str, Any]:
    corpus, names, argvs, env = setup(ROOT / ".bench" / "peers" / "book")
    envs = {name: env for name in names}
    if no_warm_up:  # sys.argv[1:] of `python -c` are the CLI's arguments, as the console script's
        names.append("book-agent (no warm-up)")
        argvs[names[-1]] = [sys.executable, "-P", "-c", NO_WARM_UP, *argvs["book-agent"][4:]]
        envs[names[-1]] = env
    if baseline:
        names.append("book-agent (baseline)")
        argvs[names[-1]] = argvs["book-agent"]
        envs[names[-1]] = {**env, "PYTHONPATH": f"{baseline}:{baseline}/adapters"}
    pairs = [(q, [round(float(x), 6) for x in v]) for q, v in zip(corpus.queries, corpus.vectors, strict=True)]
    servers = {name: Server(argvs[name], envs[name]) for name in names}
    for server in servers.values():
        server.handshake()
    for query, vector in pairs[:10]:
        for server in servers.values():
            server.call({"query": query, "query_vector": vector, "top_k": 10})
    warm: dict[str, list[float]] = {name: [] for name in names}
    order = list(names)
    shuffle = random.Random(5)
    for i in range(calls):
        query, vector = pairs[(10 + i) % len(pairs)]
        shuffle.shuffle(order)
        for name in order:
            warm[name].append(servers[name].call({"query": query, "query_vector": vector, "top_k": 10}))
    # a text query's first search is compared with warm text searches (the local encoder's work
    # is in both), not with warm searches that bring their vector
    warm_text: dict[str, list[float]] = {name: [] for name in names if name != "FastMCP+bm25s"}
    for i in range(min(calls, 100)):
        query, _ = pairs[(10 + calls + i) % len(pairs)]
        for name in warm_text:
            warm_text[name].append(servers[name].call({"query": query, "top_k": 10}))
    for server in servers.values():
        server.stop()
    firsts: dict[str, dict[str, list[float]]] = {}
    for kind in ("vector", "text"):
        for name in names:
            if kind == "text" and name == "FastMCP+bm25s":
                continue  # it cannot encode text
            firsts.setdefault(f"{name}, {kind} query", {"tools_list": [], "first": []})
        for i in range(spawns):
            query, vector = pairs[i]
            arguments = {"query": query, "top_k": 10, **({"query_vector": vector} if kind == "vector" else {})}
            for name in names:
                key = f"{name}, {kind} query"
                if key not in firsts:
                    continue
                server = Server(argvs[name], envs[name])
                listed, first = server.first_at_once(arguments)
                server.stop()
                firsts[key]["tools_list"].append(listed)
                firsts[key]["first"].append(first)
    p50 = {name: round(statistics.median(v), 2) for name, v in warm.items()}
    text_p50 = {name: round(statistics.median(v), 2) for name, v in warm_text.items()}

    def warm_of(key: str) -> float:
        name, kind = key.split(", ")
        return text_p50[name] if kind == "text query" else p50[name]

    return {"calls": calls, "spawns": spawns, "loadavg": os.getloadavg()[0], "warm_p50_ms": p50,
            "warm_text_p50_ms": text_p50,
            "warm_ratio": {n: round(p50[n] / p50["FastMCP+bm25s"], 2) for n in names},
            "first_after_tools_list_ms": {k: round(statistics.median(v["first"]), 1) for k, v in firsts.items()},
            "spawn_to_tools_list_ms": {k: round(statistics.median(v["tools_list"]), 1) for k, v in firsts.items()},
            "first_over_warm": {k: round(statistics.median(v["first"]) / warm_of(k), 2) for k, v in firsts.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument("--baseline", metavar="CHECKOUT")
    parser.add_argument("--no-warm-up", action="store_true", help="also our server without its warm-up")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = bench(args.calls, args.spawns, args.baseline, args.no_warm_up)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"MCP over stdio, book corpus: {result['calls']} warm calls each, alternating; load average "
          f"{result['loadavg']:.1f}")
    for name, ms in result["warm_p50_ms"].items():
        print(f"  warm round trip p50 {name:24s} {ms:7.2f} ms  x{result['warm_ratio'][name]:.2f} the peer's")
    for name, ms in result["warm_text_p50_ms"].items():
        print(f"  warm text query p50 {name:24s} {ms:7.2f} ms  (the query encoded by the local model)")
    for key, ms in result["first_after_tools_list_ms"].items():
        print(f"  first search at once after tools/list, {key:36s} {ms:7.1f} ms = x{result['first_over_warm'][key]:.2f} "
              f"warm (spawn -> tools/list {result['spawn_to_tools_list_ms'][key]:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
