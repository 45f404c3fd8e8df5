"""A vector matrix sidecar truncated in place under a running process: the process survives.

The matrix is memory-mapped (above vector_sidecar.READ_WHOLE_BELOW_BYTES) or read whole (below it);
either way a search after `truncate` must answer (the matrix loaded again, from SQLite) instead
of dying by SIGBUS. Each case runs in its own process: a fault would kill pytest itself.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT
from tests.support.library_support import corpus, make_book

SCRIPT = r"""
import json, os, sys
from pathlib import Path
from book_agent_adapters.book.vectors import vector_matrix
from book_agent_adapters.book.vectors import vector_sidecar
from book_agent_adapters.book.vectors.sqlite_vector_store import PrebuiltVectorStoreAdapter

package, sidecar, copy_below, cut = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
vector_sidecar.COPY_BELOW_BYTES = vector_sidecar.READ_WHOLE_BELOW_BYTES = copy_below
manifest = json.loads((package / "vectors.json").read_text())
dims = int(manifest["dimensions"])
query = [1.0] + [0.0] * (dims - 1)

def store():
    return PrebuiltVectorStoreAdapter(package / "index.sqlite", manifest, sidecar_dir=sidecar)

first = store().search_ids(query, 5)           # loads from SQLite, writes the sidecar
vector_matrix.clear_cache()
running = store()                              # a server's store: the sidecar, mapped or read whole
mapped = running.search_ids(query, 5)
npy = sidecar / vector_sidecar.NPY
with open(npy, "r+b") as handle:               # truncated in place, as damage or a stray tool would
    handle.truncate(cut)
after = running.search_ids(query, 5)           # must not fault
rows = running.rows()
print(json.dumps({"first": first, "mapped": mapped, "after": after, "rows": len(rows),
                  "sum": float(abs(rows).sum())}))
"""


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_book(tmp_path_factory.mktemp("maps"), "map-book", corpus(200))


@pytest.mark.parametrize("copy_below", [0, 1 << 30], ids=["mapped", "read-whole"])
@pytest.mark.parametrize("cut", [0, 100, 4096])
def test_a_search_survives_its_matrix_truncated_underneath(package: Path, tmp_path: Path, copy_below: int,
                                                           cut: int) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(package), str(tmp_path / "sidecar"), str(copy_below),
                           str(cut)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: SIGBUS
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["first"] == found["mapped"] == found["after"] and len(found["after"]) == 5
    assert found["rows"] == 200 and found["sum"] > 0
