"""Cold start: light commands import nothing heavy, the weights are mapped in place, the
model's hash is checked once per file version, one BLAS threads policy, the MCP warm-up.

No timings are asserted here (the machine is shared): tools/bench/bench_cold.py measures them.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastmcp import Client

from book_agent import blas
from book_agent.agent import BookAgent
from book_agent.mcp.server import build_server
from book_agent_adapters.book.runtime_store import RuntimeDirStore
from book_agent_adapters.encoders.local import LocalQueryEncoder, bert_numpy, clear_model_cache
from book_agent_adapters.encoders.local import verify as verify_mod
from book_agent_adapters.encoders.local.loaded_model import load
from book_agent_adapters.encoders.local.weights import load_weights, pack
from tests.support import tiny_bert
from tests.support.module_probe import modules_imported_by
from tests.support.one_shot_book import vector_book
from tests.support.package_builder import build_package

HEAVY = ("numpy", "fastmcp", "httpx", "pypdfium2", "tokenizers", "book_agent_adapters.encoders.local", "faiss",
         "jieba")  # jieba: only a CJK query loads the word segmenter (adapters/book_agent_adapters/text/cjk_words.py)


def _env_without_blas_settings() -> dict[str, str]:
    env = dict(os.environ)
    for name in (*blas.BLAS_VARIABLES, blas.ENV):
        env.pop(name, None)
    return env


def heavy_modules_loaded(tmp_path: Path, *args: str) -> list[str]:
    loaded = modules_imported_by(tmp_path, *args)
    return [m for m in HEAVY if m in loaded]


@pytest.fixture(scope="module")
def lexical_only_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("lexical-only")
    root = build_package(work / "pkg", book_id="plain", vectors="none")
    with BookAgent(work / "data") as agent:
        agent.init(root)
    return work / "data"


@pytest.mark.parametrize("args", [
    ["--help"], ["--version"], ["--json", "list"], ["status", "plain"],
    ["--json", "search", "no-such-book", "a question"], ["--json", "search", "plain", "general"],
])
def test_light_commands_import_nothing_heavy(tmp_path: Path, lexical_only_data: Path, args: list[str]) -> None:
    assert heavy_modules_loaded(tmp_path, "--data-dir", str(lexical_only_data), *args) == []


# stdlib modules a one-shot search has no use for (issue 29: ~30 ms of its start at load 3):
# builds, writes, registration, a config file and --debug import them when they need them
NEEDLESS_FOR_A_SEARCH = ("tomllib", "tempfile", "shutil", "secrets", "hashlib", "random", "logging", "traceback",
                         "bz2", "lzma",
                         # ~3 ms: only an endpoint to judge, or a path SQLite's URI must quote, needs them
                         "urllib.parse", "ipaddress")


@pytest.fixture(scope="module")
def vector_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return vector_book(tmp_path_factory.mktemp("vectors"))


def test_a_one_shot_search_imports_no_module_it_does_not_use(tmp_path: Path, lexical_only_data: Path,
                                                             vector_data: tuple[Path, Path]) -> None:
    data, vector = vector_data
    lexical = modules_imported_by(tmp_path, "--data-dir", str(lexical_only_data), "--json", "search", "plain",
                                  "general")
    hybrid = modules_imported_by(tmp_path, "--data-dir", str(data), "--json", "search", "vec", "rivers",
                                 "--query-vector", str(vector))
    assert "book_agent_adapters.book.vectors.sqlite_vector_store" in hybrid  # the vector channel ran
    assert [m for m in NEEDLESS_FOR_A_SEARCH if m in lexical | hybrid] == []


# What a one-book search with a supplied vector never defines (issue 29: a cold query spent
# most of its time importing): the library's, hosts', registration's and reading's services and
# values, the hosts' port, the local model's loading code (its route needs only the model's
# folder), and the word segmenter (no Chinese here)
NOT_FOR_ONE_BOOK = (
    "book_agent.services.library.search", "book_agent.services.library.vector_indexes", "book_agent.services.library.writer",
    "book_agent.services.registration", "book_agent.services.reading", "book_agent.services.hosts",
    "book_agent.services.search.evaluation", "book_agent.services.status", "book_agent.services.configure",
    "book_agent.domain.library", "book_agent.domain.search.eval_results", "book_agent.ports.hosts",
    "book_agent_adapters.encoders.local.st_config", "book_agent_adapters.encoders.local.verify", "jieba",
    "book_agent.ports.library",  # the root's library proxies are the roles by shape, not by subclassing
    "book_agent.domain.sources.locator_summary",  # a build's summary: a search reads locators only
)


def test_a_one_book_search_with_a_vector_defines_no_other_use_case(tmp_path: Path,
                                                                   vector_data: tuple[Path, Path]) -> None:
    data, vector = vector_data
    hybrid = modules_imported_by(tmp_path, "--data-dir", str(data), "--json", "search", "vec", "rivers",
                                 "--query-vector", str(vector))
    assert "book_agent_adapters.book.vectors.sqlite_vector_store" in hybrid  # the vector channel ran
    assert [m for m in NOT_FOR_ONE_BOOK if m in hybrid] == []


COMPILED_PATTERNS = """
import json, sys
from book_agent.cli.entry import run
from book_agent.cli import output
from book_agent.domain.search import lexical_text
from book_agent.domain import network
from book_agent.lazy import LazyPattern
try:
    run(sys.argv[1:])
except SystemExit:
    pass
compiled = [name for module, name in [(lexical_text, "CJK_RUN"), (lexical_text, "_HAN_RUN"), (lexical_text, "_TOKEN"),
                                      (output, "_SURROGATES"), (network, "_UNSAFE_CHARS"),
                                      (network, "_ENCODED_DELIMITER")]  # compiled, at import or since
            if not isinstance(getattr(module, name), LazyPattern) or getattr(module, name)._compiled]
print(json.dumps(compiled), file=sys.stderr)
"""


def test_an_english_search_compiles_no_cjk_pattern(vector_data: tuple[Path, Path]) -> None:
    """The CJK character classes cost ~1.5 ms each to compile: an ASCII query's terms, scripts and
    wordless check compile none of them. Nor does its output (no lone surrogate to escape) or an
    offline book's config (no endpoint to judge): ~0.6 ms of a cold search."""
    data, vector = vector_data
    done = subprocess.run([sys.executable, "-c", COMPILED_PATTERNS, "--data-dir", str(data), "--json", "search", "vec",
                           "rivers", "--query-vector", str(vector)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"hits"' in done.stdout
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []


# -- weights: memory-mapped, used in place ----------------------------------------------
def test_weights_are_read_only_views_of_the_mapped_file(tmp_path: Path) -> None:
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    enc = LocalQueryEncoder("tiny", 16, model_dir=folder)
    w = load_weights(folder / "model.safetensors", enc.load().spec)
    layer = w.layers[0]
    for array in (w.word, w.position, layer.q_w, layer.inter_w, layer.down_w, layer.ln1_g):
        assert not array.flags.writeable and not array.flags.owndata  # a view, never a copy
    assert layer.inter_w.flags.f_contiguous  # the file's [out, in], seen as [in, out]
    assert layer.qkv_w is None and not w.packed


def test_packed_weights_give_the_same_hidden_states(tmp_path: Path) -> None:
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    spec = LocalQueryEncoder("tiny", 16, model_dir=folder).load().spec
    mapped = load_weights(folder / "model.safetensors", spec)
    packed = pack(mapped)
    assert packed.packed and packed.layers[0].qkv_w is not None and packed.layers[0].inter_w.flags.c_contiguous
    ids = np.array([[2, 30, 31, 40, 3], [2, 33, 3, 0, 0]], dtype=np.int64)
    mask = (np.arange(5) < np.array([[5], [3]])).astype(np.int64)
    np.testing.assert_allclose(bert_numpy.encode_tokens(packed, spec, ids, mask),
                               bert_numpy.encode_tokens(mapped, spec, ids, mask), atol=1e-5, rtol=0)


def test_a_long_lived_encoder_packs_its_weights(tmp_path: Path) -> None:
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    clear_model_cache()
    enc = LocalQueryEncoder("tiny", 16, model_dir=folder)
    first = enc.encode("the art of war")
    assert not enc.load().weights.packed  # a one-shot search never pays for packing
    packing = enc.warm_up()
    assert packing is not None
    packing.join(30)
    assert enc.load().weights.packed
    np.testing.assert_allclose(enc.encode("the art of war"), first, atol=1e-6)
    assert load(enc.locate().path) is enc.load()


def test_model_hash_is_checked_once_per_file_version(tmp_path: Path) -> None:
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    weights = folder / "model.safetensors"
    good = verify_mod.sha256_file(weights)
    cache = tmp_path / "cache"
    assert not verify_mod.verify_file(weights, good, cache)["from_cache"]
    verify_mod.forget_memory()
    assert verify_mod.verify_file(weights, good, cache)["from_cache"]  # a new process: no re-hash
    stat = weights.stat()
    replacement = tmp_path / "replacement"
    shutil.copyfile(weights, replacement)
    os.replace(replacement, weights)  # same bytes, size and mtime, another inode
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert weights.stat().st_ino != stat.st_ino
    verify_mod.forget_memory()
    assert not verify_mod.verify_file(weights, good, cache)["from_cache"]


# -- BLAS threads: one policy for every entry point -------------------------------------
def test_blas_policy_reads_its_variable() -> None:
    assert blas.wanted_threads({}) == 1
    assert blas.wanted_threads({blas.ENV: "3"}) == 3
    assert blas.wanted_threads({blas.ENV: "auto"}) is None
    assert blas.wanted_threads({blas.ENV: "many"}) == 1
    env: dict[str, str] = {"MKL_NUM_THREADS": "4"}
    blas.configure_environment(env)
    assert env["OPENBLAS_NUM_THREADS"] == "1" and env["MKL_NUM_THREADS"] == "4"  # the user's own kept
    env = {"OPENBLAS_NUM_THREADS": "4", blas.ENV: "2"}
    blas.configure_environment(env)
    assert env["OPENBLAS_NUM_THREADS"] == "2"  # the explicit override wins
    env = {blas.ENV: "auto"}
    blas.configure_environment(env)
    assert "OPENBLAS_NUM_THREADS" not in env


BLAS_PROBE = """
import sys
if sys.argv[1] == "numpy-first":
    import numpy
import book_agent
from book_agent_adapters.encoders.local import LocalQueryEncoder
LocalQueryEncoder("tiny", 16, model_dir=sys.argv[2]).encode("war")
from threadpoolctl import threadpool_info
print(max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
"""


def blas_threads(folder: Path, order: str, **env: str) -> int:
    out = subprocess.run([sys.executable, "-c", BLAS_PROBE, order, str(folder)], capture_output=True,
                         text=True, check=True, env={**_env_without_blas_settings(), **env}, timeout=120)
    return int(out.stdout.strip())


@pytest.mark.parametrize("order", ["book-agent-first", "numpy-first"])
def test_every_entry_point_uses_one_blas_thread_unless_told(tmp_path: Path, order: str) -> None:
    folder = tiny_bert.write_tiny_model(tmp_path / "m")
    two = min(2, os.cpu_count() or 1)  # OpenBLAS never runs more threads than cores
    assert blas_threads(folder, order) == 1
    assert blas_threads(folder, order, BOOK_AGENT_BLAS_THREADS="2") == two
    assert blas_threads(folder, order, OPENBLAS_NUM_THREADS="2") == two  # the user's own setting


def test_cli_and_mcp_entry_points_get_the_policy_from_the_package() -> None:
    probe = "import os, book_agent.cli.entry; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**_env_without_blas_settings(), blas.ENV: "3"})
    assert out.stdout.strip() == "3"


# -- the MCP server warms up after the handshake ----------------------------------------
class WarmUpRecorder:
    def __init__(self) -> None:
        self.warmed = threading.Event()
        self.calls: list[str] = []

    def warm_up(self, book_id: str, *, encoder: bool = True) -> dict[str, bool]:
        self.calls.append(book_id if encoder is False else f"{book_id} with the encoder")
        self.warmed.set()
        return {"lexical": True}


def _list_tools_and_linger(server: Any) -> list[Any]:
    async def run() -> list[Any]:
        async with Client(server) as client:
            tools = await client.list_tools()
            await asyncio.sleep(0.2)  # the warm-up starts just after tools/list is answered
            return list(tools)

    return asyncio.run(run())


def test_mcp_server_warms_up_after_tools_list() -> None:
    agent = WarmUpRecorder()
    assert _list_tools_and_linger(build_server("b", agent=agent, warm_up=True))
    assert agent.warmed.wait(10) and agent.calls == ["b"]  # not the encoder: no text query came
    idle = WarmUpRecorder()
    _list_tools_and_linger(build_server("b", agent=idle))  # off unless asked (serve asks)
    assert idle.calls == []


SERVE_WITHOUT_A_HANDSHAKE = """
import sys
from book_agent.mcp.server import serve

class Agent:
    calls = []
    def resolve(self, book_id):
        return {"book_id": book_id, "package": {"title": "t", "diagnostics": []}}
    def warm_up(self, book_id, *, encoder=True, segmenter=True):
        self.calls.append((book_id, encoder, segmenter))
        return {"lexical": True}
    def close(self):
        print(self.calls, file=sys.stderr)

serve("b", agent=Agent())
"""


def test_serve_queues_the_warm_up_before_any_handshake() -> None:
    """`serve` warms up at start, while FastMCP loads: a host that writes `tools/list` and a
    search at once finds the search parts loaded (issue 29). Here the host sends nothing at all
    (stdin at its end): the start-up warm-up still ran, without the encoder or the word segmenter
    (a Chinese book's dictionary takes seconds: it waits for tools/list)."""
    out = subprocess.run([sys.executable, "-c", SERVE_WITHOUT_A_HANDSHAKE], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert ast.literal_eval(out.stderr.strip().splitlines()[-1]) == [("b", False, False)]


def test_warm_up_loads_every_search_part_without_network(tmp_path: Path) -> None:
    folder = tiny_bert.write_tiny_model(tmp_path / "tiny")
    root = build_package(tmp_path / "pkg", book_id="warm", dims=16, model="acme/tiny-bert",
                         provider="siliconflow")
    with BookAgent(tmp_path / "data") as agent:
        agent.init(root)
        agent.configure("warm", model_dir=str(folder))  # remote requests stay off
        assert agent.warm_up("warm", encoder=False) == {"lexical": True, "vectors": True, "encoder": False}
        assert agent.warm_up("warm") == {"lexical": True, "vectors": True, "encoder": True}
        result = agent.search("warm", "rivers")
        assert result["channels"]["vector"]["ran"]


def test_a_second_warm_up_runs_no_second_dry_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve` warms a book up at start and again after tools/list (for a Chinese book's
    segmenter): for any other book the second has nothing to load, and must not queue a dry
    search ahead of a search sent with the handshake."""
    from book_agent.services import open_book

    dry: list[str] = []
    search = open_book.HybridSearch.search
    monkeypatch.setattr(open_book.HybridSearch, "search", lambda self, query, **kw: (dry.append(query),
                                                                                      search(self, query, **kw))[1])
    root = build_package(tmp_path / "pkg", book_id="twice", dims=16)
    with BookAgent(tmp_path / "data") as agent:
        agent.init(root)
        assert agent.warm_up("twice", encoder=False, segmenter=False)["vectors"]
        assert agent.warm_up("twice", encoder=False)["vectors"]
    assert dry == [open_book.DRY_QUERY]


def test_the_encoder_warm_up_after_a_text_search_only_packs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An MCP server packs the local encoder once its first text search is answered: that search
    loaded and ran everything, so the warm-up runs no dry search and encodes nothing (either
    made the session's next search wait behind it)."""
    from book_agent.services import open_book
    from book_agent_adapters.encoders.local import loaded_model

    dry: list[str] = []
    search = open_book.HybridSearch.search
    monkeypatch.setattr(open_book.HybridSearch, "search", lambda self, query, **kw: (dry.append(query),
                                                                                      search(self, query, **kw))[1])
    folder = tiny_bert.write_tiny_model(tmp_path / "tiny")
    root = build_package(tmp_path / "pkg", book_id="pack", dims=16, model="acme/tiny-bert", provider="siliconflow")
    with BookAgent(tmp_path / "data") as agent:
        agent.init(root)
        agent.configure("pack", model_dir=str(folder))
        assert agent.warm_up("pack", encoder=False, segmenter=False)["vectors"]
        assert agent.search("pack", "rivers")["channels"]["vector"]["ran"]  # the encoder loads
        model = loaded_model.LoadedModel  # every embed of the process, counted from here
        embeds: list[int] = []
        embed = model.embed
        monkeypatch.setattr(model, "embed", lambda self, texts: (embeds.append(len(texts)), embed(self, texts))[1])
        assert agent.warm_up("pack", encoder=True, dry_search=False)["encoder"]
        assert embeds == [] and dry == [open_book.DRY_QUERY, "rivers"]
        agent.search("pack", "water")
        assert embeds == [1]


def test_warm_up_of_a_book_without_vectors_or_index(tmp_path: Path) -> None:
    root = build_package(tmp_path / "pkg", book_id="bare", vectors="none")
    with BookAgent(tmp_path / "data") as agent:
        agent.init(root)
        assert agent.warm_up("bare") == {"lexical": True, "vectors": False, "encoder": False}
        agent.close()
        RuntimeDirStore().lexical_path(agent.runtime_dir("bare")).unlink()
        # nothing left to search with: no error here, the first search will say why
        assert agent.warm_up("bare") == {"lexical": False, "vectors": False, "encoder": False}


def test_the_mcp_server_is_built_without_jsonschema() -> None:
    # A bare FastMCP server does not import jsonschema (~150 ms), nor does ours (its arguments
    # are checked by FastMCP's validation with strict types, book_agent/mcp/arguments/strict.py).
    code = ("import sys\nfrom book_agent.mcp.server import build_server\n"
            "build_server('b', agent=object())\nprint('jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


# A dataclass without a docstring of its own gets one made from inspect.signature when it is
# defined (~50 us each, 16 on a one-shot search's path): those a search defines carry their own.


def test_the_dataclasses_a_search_defines_have_their_own_docstrings(tmp_path: Path,
                                                                     vector_data: tuple[Path, Path]) -> None:
    import dataclasses
    import importlib

    data, vector = vector_data
    hybrid = modules_imported_by(tmp_path, "--data-dir", str(data), "--json", "search", "vec", "rivers",
                                 "--query-vector", str(vector))
    ours = sorted(m for m in hybrid if m.split(".")[0] in ("book_agent", "book_agent_adapters"))
    made_up = [f"{name}.{cls.__name__}" for name in ours for cls in vars(importlib.import_module(name)).values()
               if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == name
               and (cls.__doc__ or "").startswith(cls.__name__ + "(")]
    assert made_up == []
