"""Cold start figures: a new process per search (what an agent that shells out pays), and MCP.

    .venv/bin/python tools/bench/bench_cold.py [--json] [--records 5000] [--rounds 15] [--spawns 5]

1. interleaved medians, in one run, of `book-agent --json search BOOK "..."` with local query
   encoding, the same with `--query-vector FILE`, and `python -c "import numpy"` (the ratio
   local / vector is the figure issue 16 targets: <= 1.35), wall and CPU (user+sys: steadier
   on a shared machine); ratios are medians of per-round ratios; `--baseline` adds another
   checkout's two searches to the same rounds;
2. peak RSS of each (wait4's ru_maxrss of the child);
3. MCP: spawn -> tools/list against a bare FastMCP server (interleaved; wall and the server's
   CPU time), then the first text search sent at once and after a 1 s pause (a host's model
   thinks before its first call), against the median of the next 20;
4. what `--help`, `--version` and `list` import (`python -X importtime`): numpy must not be there.

The book is synthetic (tests/support/package_builder.py) with random vectors, but its vectors.json
names all-MiniLM-L6-v2 (384 dims), so a text query is encoded by the real local encoder.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support
BOOK = "cold-book"
QUERY = "what does the general do before the battle in the mountain pass"  # 12 words
# -P: `-m` would put the working directory first on sys.path, and run from a checkout that is
# its book_agent, ahead of a baseline's PYTHONPATH (the "baseline" then ran this checkout's code)
CLI = [sys.executable, "-P", "-m", "book_agent"]


def build_book(work: Path, records: int) -> Path:
    from book_agent.agent import BookAgent
    from tests.support.package_builder import build_package, synthetic_records

    root = build_package(work / "pkg", book_id=BOOK, records=synthetic_records(records), dims=384,
                         model="all-MiniLM-L6-v2", provider="local")
    data = work / "data"
    with BookAgent(data) as agent:
        agent.init(root)
    return data


def child_env() -> dict[str, str]:
    """This environment, with bytecode caching on: an installed book-agent has its .pyc files,
    and compiling every module from source would be most of a "cold" start."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_child(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int, bytes, float]:
    """(wall ms, peak RSS KiB, stdout, CPU ms) of one child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = (time.perf_counter() - started) * 1000
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited {proc.returncode}: {out[:400]!r}")
    return elapsed, usage.ru_maxrss, out, (usage.ru_utime + usage.ru_stime) * 1000


def cli_commands(data: Path, vector_file: Path, baseline: str | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    base = [*CLI, "--data-dir", str(data), "--json", "search", BOOK, QUERY]
    env = child_env()
    commands = {"local_encoding": (base, env), "query_vector": ([*base, "--query-vector", str(vector_file)], env),
                "import_numpy": ([sys.executable, "-c", "import numpy"], env)}
    if baseline:  # the same two searches run by another checkout of the code
        old = {**env, "PYTHONPATH": baseline}
        commands["baseline_local_encoding"] = (base, old)
        commands["baseline_query_vector"] = ([*base, "--query-vector", str(vector_file)], old)
    return commands


def cold_cli(data: Path, vector_file: Path, rounds: int, baseline: str | None) -> dict[str, Any]:
    """Runs in a small process (see main): a child's ru_maxrss starts at its parent's RSS."""
    commands = cli_commands(data, vector_file, baseline)
    result = json.loads(run_child(*commands["local_encoding"])[2])  # also records the model's hash
    route = result["channels"]["vector"].get("route") or result["channels"]["vector"]
    for name in commands:
        run_child(*commands[name])  # warm the page cache and .pyc files of each variant
    times: dict[str, list[float]] = {k: [] for k in commands}
    cpu: dict[str, list[float]] = {k: [] for k in commands}
    rss: dict[str, list[int]] = {k: [] for k in commands}
    names = list(commands)
    for i in range(rounds):  # interleaved, rotating the order: each sees the same machine load
        for name in names[i % len(names):] + names[: i % len(names)]:
            ms, peak, _, cpu_ms = run_child(*commands[name])
            times[name].append(ms)
            cpu[name].append(cpu_ms)
            rss[name].append(peak)

    def ratio(a: str, b: str, series: dict[str, list[float]]) -> float:
        """Median of the per-round ratios: each round's pair saw the same machine load."""
        return round(statistics.median(x / y for x, y in zip(series[a], series[b], strict=True)), 3)

    out: dict[str, Any] = {
        "vector_route": route,
        "median_ms": {k: round(statistics.median(v), 1) for k, v in times.items()},
        "median_cpu_ms": {k: round(statistics.median(v), 1) for k, v in cpu.items()},
        "ratio_local_to_vector": ratio("local_encoding", "query_vector", times),
        "ratio_local_to_vector_cpu": ratio("local_encoding", "query_vector", cpu),
        "ratio_vector_to_numpy": ratio("query_vector", "import_numpy", times),
        "peak_rss_mb": {k: round(statistics.median(v) / 1024, 1) for k, v in rss.items()},
        "all_ms": {k: [round(x) for x in v] for k, v in times.items()}}
    if baseline:
        out["baseline_ratio_local_to_vector"] = ratio("baseline_local_encoding", "baseline_query_vector", times)
        out["baseline_ratio_local_to_vector_cpu"] = ratio("baseline_local_encoding", "baseline_query_vector", cpu)
    return out


def mcp_first_vs_warm(data: Path, spawns: int) -> dict[str, Any]:
    """Spawned with this process's environment (PYTHONPATH picks the code under test)."""
    import tools.bench.serve.bench_mcp as bench_mcp
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # see child_env

    def one(pause: float) -> tuple[float, float, float]:
        started = time.perf_counter()
        proc = bench_mcp.spawn(bench_mcp.our_argv(data, BOOK))
        bench_mcp.handshake(proc)
        handshake_ms = (time.perf_counter() - started) * 1000
        time.sleep(pause)
        calls = [_mcp_search(proc, bench_mcp, 100 + i) for i in range(21)]
        bench_mcp.stop(proc)
        return handshake_ms, calls[0], statistics.median(calls[1:])

    rows = {"at_once": [one(0.0) for _ in range(spawns)], "after_1s": [one(1.0) for _ in range(spawns)]}
    out: dict[str, Any] = {}
    for name, values in rows.items():
        first = statistics.median(v[1] for v in values)
        warm = statistics.median(v[2] for v in values)
        out[name] = {"first_ms": round(first, 1), "warm_ms": round(warm, 2), "ratio": round(first / warm, 2)}
    out["spawn_to_tools_list_ms"] = round(statistics.median(v[0] for vs in rows.values() for v in vs), 1)
    return out


def _cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")  # utime + stime


def spawn_to_tools_list(data: Path, spawns: int, baseline: str | None) -> dict[str, Any]:
    """Interleaved: a bare FastMCP server, ours and (with --baseline) the older code; wall ms
    and the server's CPU ms when tools/list is answered; ratios are medians per round."""
    import tools.bench.serve.bench_mcp as bench_mcp
    bare = data.parent / "bare.py"
    bare.write_text(bench_mcp.BARE, encoding="utf-8")
    variants = {"bare": ([sys.executable, str(bare)], None), "ours": (bench_mcp.our_argv(data, BOOK), None)}
    if baseline:
        variants["baseline"] = (bench_mcp.our_argv(data, BOOK), baseline)
    wall: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(spawns):
        for name, (argv, pythonpath) in variants.items():
            env = child_env() | ({"PYTHONPATH": pythonpath} if pythonpath else {})
            started = time.perf_counter()
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env=env)
            bench_mcp.handshake(proc)
            wall[name].append((time.perf_counter() - started) * 1000)
            cpu[name].append(_cpu_ms(proc.pid))
            bench_mcp.stop(proc)
    out: dict[str, Any] = {"wall_ms": {k: round(statistics.median(v), 1) for k, v in wall.items()},
                           "cpu_ms": {k: round(statistics.median(v), 1) for k, v in cpu.items()}}
    for name in variants:
        if name != "bare":
            out[f"{name}_to_bare"] = {
                unit: round(statistics.median(a / b for a, b in zip(series[name], series["bare"], strict=True)), 3)
                for unit, series in (("wall", wall), ("cpu", cpu))}
    return out


def _mcp_search(proc: subprocess.Popen[bytes], bench_mcp: Any, ident: int) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    arguments = {"query": f"{QUERY} {ident}", "top_k": 6}
    started = time.perf_counter()
    proc.stdin.write(bench_mcp.rpc("tools/call", {"name": "search", "arguments": arguments}, ident))
    proc.stdin.flush()
    answer = bench_mcp.wait_for(proc.stdout, ident)
    elapsed = (time.perf_counter() - started) * 1000
    text = json.dumps(answer)
    if answer.get("result", {}).get("isError") or "local:numpy" not in text:
        raise RuntimeError("the MCP search did not encode locally: " + text[:400])
    return elapsed


def light_commands(data: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for args in (["--help"], ["--version"], ["list"], ["--json", "search", "no-such-book", "q"]):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "book_agent", "--data-dir", str(data),
                               *args], capture_output=True, text=True)
        modules = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
        heavy = sorted(m for m in ("numpy", "fastmcp", "httpx", "pypdfium2", "tokenizers") if m in modules)
        out[" ".join(args)] = {"heavy_imports": heavy, "modules": len(modules)}
    return out


def bench(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"records": args.records, "query_words": len(QUERY.split()),
                           "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE")}
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        work = Path(tmp)
        os.chdir(work)  # children's sys.path[0] is their cwd: never a checkout's root
        data = build_book(work, args.records)
        vector_file = work / "query-vector.json"
        vector_file.write_text(json.dumps([0.05] * 384), encoding="utf-8")
        measure = [sys.executable, __file__, "--measure", str(data), str(vector_file),
                   "--rounds", str(args.rounds)] + (["--baseline", args.baseline] if args.baseline else [])
        out["cold_cli"] = json.loads(subprocess.run(measure, capture_output=True, check=True).stdout)
        out["spawn_to_tools_list"] = spawn_to_tools_list(data, args.spawns, args.baseline)
        out["mcp"] = mcp_first_vs_warm(data, args.spawns)
        if args.baseline:
            os.environ["PYTHONPATH"] = args.baseline
            out["baseline_mcp"] = mcp_first_vs_warm(data, args.spawns)
            del os.environ["PYTHONPATH"]
        out["light_commands"] = light_commands(data)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--spawns", type=int, default=5)
    parser.add_argument("--baseline", help="a checkout of older code (its root on PYTHONPATH, with "
                        "adapters/book_agent_adapters linked to adapters/) measured side by side")
    parser.add_argument("--measure", nargs=2, metavar=("DATA", "VECTOR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # the small process that times the cold CLI (no numpy imported here)
        print(json.dumps(cold_cli(Path(args.measure[0]), Path(args.measure[1]), args.rounds, args.baseline)))
        return
    result = bench(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    c = result["cold_cli"]
    print(f"book: {result['records']} records, query of {result['query_words']} words; vector route {c['vector_route']}")
    print("cold `search --json` medians (ms): " + ", ".join(f"{k} {v}" for k, v in c["median_ms"].items()))
    print("  CPU (user+sys) medians (ms): " + ", ".join(f"{k} {v}" for k, v in c["median_cpu_ms"].items()))
    print(f"  local / query-vector = {c['ratio_local_to_vector']} wall, {c['ratio_local_to_vector_cpu']} CPU "
          f"(target <= 1.35); query-vector / import numpy = {c['ratio_vector_to_numpy']}")
    print("  peak RSS (MB): " + ", ".join(f"{k} {v}" for k, v in c["peak_rss_mb"].items()))
    if "baseline_ratio_local_to_vector" in c:
        print(f"  baseline: local / query-vector = {c['baseline_ratio_local_to_vector']} wall, "
              f"{c['baseline_ratio_local_to_vector_cpu']} CPU")
    for key in ("mcp", "baseline_mcp"):
        if key not in result:
            continue
        m = result[key]
        print(f"{key}: spawn -> tools/list {m['spawn_to_tools_list_ms']} ms")
        for name in ("at_once", "after_1s"):
            r = m[name]
            print(f"  first search {name}: {r['first_ms']} ms, warm {r['warm_ms']} ms, ratio {r['ratio']} (target <= 4)")
    t = result["spawn_to_tools_list"]
    print("MCP spawn -> tools/list medians: wall " + ", ".join(f"{k} {v}" for k, v in t["wall_ms"].items())
          + " ms; server CPU " + ", ".join(f"{k} {v}" for k, v in t["cpu_ms"].items()) + " ms")
    for key in [k for k in t if k.endswith("_to_bare")]:
        print(f"  {key}: wall {t[key]['wall']}, CPU {t[key]['cpu']} (target <= 1.1)")
    for command, info in result["light_commands"].items():
        print(f"`{command}`: {info['modules']} modules, heavy: {info['heavy_imports'] or 'none'}")


if __name__ == "__main__":
    main()
