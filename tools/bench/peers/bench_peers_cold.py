"""Cold one-shot query processes: `book-agent --json search` against a sqlite-vec + FTS5 script,
each a process that opens its indexes, answers one hybrid query (the same text and vector, top
10, 50 candidates a channel, RRF for the peer) and exits; interleaved rounds, rotating the order.

Run by tools/bench/peers/bench_peers.py (`--cold N` rounds, on its `book` corpus, after the warm section built
the peer's file). The peer script is what a user would write: apsw with the sqlite-vec extension,
one SQLite file holding the FTS5 table, the vec0 table and a row -> record id table, the vector
passed as JSON text (no numpy import). `--cold-baseline PATH` adds another checkout's book-agent
(PYTHONPATH=PATH:PATH/adapters) to the same rounds, so before and after share the machine's load.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repo root: tools.*
from tools.bench.bench_cold import (  # run_child: (wall ms, peak RSS KiB, stdout, CPU ms)
    CLI,
    run_child,
)

ONE_SHOT = r'''
import json, sys
import apsw, sqlite_vec

path, query, vector_file = sys.argv[1], sys.argv[2], sys.argv[3]
con = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
con.enable_load_extension(True)
con.load_extension(sqlite_vec.loadable_path())
words = [w for w in "".join(c if c.isalnum() else " " for c in query.lower()).split()]
lexical = [r for (r,) in con.execute("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 50",
                                     (" OR ".join(f'"{w}"' for w in words),))] if words else []
with open(vector_file) as handle:
    vector = handle.read()
nearest = [r for (r,) in con.execute("SELECT rowid FROM vec WHERE embedding MATCH ? AND k = 50 ORDER BY distance",
                                     (vector,))]
scores = {}
for ranking in (lexical, nearest):
    for rank, row in enumerate(ranking):
        scores[row] = scores.get(row, 0.0) + 1.0 / (61 + rank)
top = sorted(scores, key=lambda row: -scores[row])[:10]
keys = dict(con.execute(f"SELECT rowid, key FROM ids WHERE rowid IN ({','.join('?' * len(top))})", top)) if top else {}
print(json.dumps([keys[row] for row in top]))
'''


def ensure_ids(database: Path, keys: list[str]) -> None:
    """The peer's row -> record id table (its answer names records, as book-agent's does)."""
    import apsw

    con = apsw.Connection(str(database))
    if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'ids'").fetchall():
        with con:
            con.execute("CREATE TABLE ids (rowid INTEGER PRIMARY KEY, key TEXT NOT NULL)")
            con.executemany("INSERT INTO ids VALUES (?, ?)", enumerate(keys))
    con.close()


def cold_one_shot(data_dir: Path, ref: str, keys: list[str], query: str, vector: list[float], folder: Path,
                  rounds: int, baseline: str | None = None) -> dict[str, Any]:
    database = folder / "sqlite-vec.db"
    ensure_ids(database, keys)
    script = folder / "sqlite_vec_one_shot.py"
    script.write_text(ONE_SHOT, encoding="utf-8")
    vector_file = folder / "cold-query-vector.json"
    vector_file.write_text(json.dumps(vector), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # installed code has its .pyc
    search = [*CLI, "--data-dir", str(data_dir), "--json", "search", ref, query,
              "--query-vector", str(vector_file), "--top-k", "10"]
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "book-agent": (search, env),
        "sqlite-vec+FTS5 script": ([sys.executable, str(script), str(database), query, str(vector_file)], env),
        "python -c pass": ([sys.executable, "-c", "pass"], env)}
    if baseline:
        commands["book-agent (baseline)"] = (search, {**env, "PYTHONPATH": f"{baseline}:{baseline}/adapters"})
    for argv, child_env in commands.values():
        run_child(argv, child_env)  # page cache and .pyc files warm for each
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for i in range(rounds):
        for name in names[i % len(names):] + names[:i % len(names)]:
            ms, _, _, cpu_ms = run_child(*commands[name])
            wall[name].append(ms)
            cpu[name].append(cpu_ms)
    peer = "sqlite-vec+FTS5 script"

    def ratio(series: dict[str, list[float]], name: str) -> float:
        return round(statistics.median(a / b for a, b in zip(series[name], series[peer], strict=True)), 3)

    return {"rounds": rounds, "loadavg": os.getloadavg()[0],
            "median_ms": {n: round(statistics.median(v), 1) for n, v in wall.items()},
            "median_cpu_ms": {n: round(statistics.median(v), 1) for n, v in cpu.items()},
            "ratio_to_peer": {n: ratio(wall, n) for n in names if n != peer},
            "cpu_ratio_to_peer": {n: ratio(cpu, n) for n in names if n != peer}}


def report(figures: dict[str, Any]) -> str:
    lines = [f"  cold one-shot query process ({figures['rounds']} interleaved rounds, load average "
             f"{figures['loadavg']:.1f}): {'process':26s} {'wall ms':>8s} {'CPU ms':>8s} {'/ peer':>7s} {'CPU /':>6s}"]
    for name, ms in figures["median_ms"].items():
        wall_ratio = figures["ratio_to_peer"].get(name, 1.0)
        cpu_ratio = figures["cpu_ratio_to_peer"].get(name, 1.0)
        lines.append(f"    {name:26s} {ms:8.1f} {figures['median_cpu_ms'][name]:8.1f} {wall_ratio:6.2f}x {cpu_ratio:5.2f}x")
    return "\n".join(lines)
