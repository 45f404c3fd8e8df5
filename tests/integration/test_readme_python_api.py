"""The README's "Python API" snippet runs as written (issue 44, item 12): the user contract's
names imported from `book_agent`, on the bundled example package, in a fresh interpreter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support import REPO_ROOT
from tests.support.eval_books import minilm_available
from tests.support.parts import require_real_part


def readme_snippet() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```python\n(.*?)```", section, re.S)
    assert found, "the README's Python API section has no python block"
    return found.group(1)


def test_the_snippet_uses_the_contracts_names() -> None:
    snippet = readme_snippet()
    assert snippet.startswith("from book_agent import BookAgent, ")
    for name in ("PackageInspector().inspect(", "verify_hashes=True", "agent.search(", "BookAgentError",
                 "QueryRuntime(", "resolve_query_runtime(", "allow_remote_requests"):
        assert name in snippet, name


def test_the_readme_snippet_runs(tmp_path: Path) -> None:
    require_real_part(minilm_available(), "the all-MiniLM-L6-v2 model (the example package's)")
    env = {**os.environ, "BOOK_AGENT_HOME": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", readme_snippet()], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "art-of-war The Art of War"
    hits = [line for line in lines if line.startswith("art-of-war#")]
    assert len(hits) == 3 and all("text/chapter-13.xhtml" in line for line in hits)  # The Use of Spies
    assert any(line.startswith("search.bad_top_k - ") for line in lines)
    assert lines[-1] == "ok"
    assert (tmp_path / "data" / "registry.json").exists()  # the data dir the snippet's BookAgent() chose
