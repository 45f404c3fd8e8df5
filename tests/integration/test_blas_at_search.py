"""Issue 29: the one-BLAS-thread policy holds for a Python API caller who imported numpy before
book_agent and searches with a supplied vector (the local encoder, which used to apply it, never loads).
A real subprocess each: which came first is a per-process fact."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from book_agent import blas
from tests.support.package_builder import build_package

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
if sys.argv[1] == "numpy-first":
    import numpy
from book_agent import BookAgent
with BookAgent(sys.argv[3]) as agent:
    agent.init(sys.argv[2])
    agent.search("test-book", "rivers", query_vector=[1.0] + [0.0] * 15)
from threadpoolctl import threadpool_info
print(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
"""


@pytest.mark.parametrize("order", ["book-agent-first", "numpy-first"])
def test_a_python_api_search_runs_one_blas_thread_whatever_came_first(tmp_path: Path, order: str) -> None:
    root = build_package(tmp_path / "pkg")
    env = {k: v for k, v in os.environ.items() if k not in (*blas.BLAS_VARIABLES, blas.ENV)}
    out = subprocess.run([sys.executable, "-c", PROBE, order, str(root), str(tmp_path / "data")], cwd=ROOT,
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip().splitlines()[-1]) == 1
