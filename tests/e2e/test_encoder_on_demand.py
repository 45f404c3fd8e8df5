"""Issue 29: the local encoder loads with the first query that needs it, never for one that
brings its own vector: a one-shot CLI search (its modules, seen from inside the process) and a
real stdio MCP server after its warm-up (its memory map, seen from outside: the model file and
the tokenizers library are mapped once the encoder loads)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from book_agent.agent import BookAgent
from tests.support import tiny_bert
from tests.support.module_probe import modules_imported_by
from tests.support.package_builder import build_package
from tests.support.stdio_session import RawSession, call, rpc

BOOK = "tiny"
RUNNER = "book_agent_adapters.encoders.local.loaded_model"


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A data dir with one book whose 16-d model (a tiny BERT) is on this machine."""
    work = tmp_path_factory.mktemp("on-demand")
    model = tiny_bert.write_tiny_model(work / "model")
    root = build_package(work / "pkg", book_id=BOOK, dims=16, model="acme/tiny-bert", provider="siliconflow")
    with BookAgent(work / "data") as agent:
        agent.init(root)
        agent.configure(BOOK, model_dir=str(model))  # remote encoding stays off: the local route
    vector = work / "vector.json"
    vector.write_text(json.dumps([0.25] * 16), encoding="utf-8")
    return work / "data", vector


def cli_modules(tmp_path: Path, data: Path, *search: str) -> set[str]:
    return modules_imported_by(tmp_path, "--data-dir", str(data), "--json", "search", BOOK, *search)


def test_a_cli_search_with_a_vector_does_not_import_the_model_runner(book: tuple[Path, Path], tmp_path: Path) -> None:
    data, vector = book
    modules = cli_modules(tmp_path, data, "river water", "--query-vector", str(vector))
    assert "book_agent_adapters.encoders.query_runtime" in modules  # the vector channel ran
    assert RUNNER not in modules and "tokenizers" not in modules
    assert "book_agent_adapters.encoders.local.bert_numpy" not in modules
    assert RUNNER in cli_modules(tmp_path, data, "river water")  # a text query encodes: it loads


def mapped_files(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def search_answer(session: RawSession, ident: int, arguments: dict[str, object]) -> dict[str, object]:
    session.send(call(ident, "search", arguments))
    answer = session.wait_for([ident], timeout=60)[ident][0]
    assert not answer["result"].get("isError"), answer
    return dict(answer["result"]["structuredContent"])


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the server's memory map (Linux)")
def test_an_mcp_server_whose_queries_bring_vectors_never_loads_the_encoder(book: tuple[Path, Path],
                                                                           tmp_path: Path) -> None:
    data, _ = book
    model_file = str(data.parent / "model" / "model.safetensors")
    session = RawSession(data, BOOK, tmp_path / "server.log")
    try:
        session.send(rpc("tools/list", {}, 1))
        session.wait_for([1], timeout=60)
        for ident in range(2, 6):  # sent at once, behind the warm-up
            result = search_answer(session, ident, {"query": "river water", "query_vector": [0.5] * 16})
            assert result["channels"]["vector"]["ran"]  # type: ignore[index]
        time.sleep(1.0)  # the warm-up and the jsonschema import are done by now
        maps = mapped_files(session.proc.pid)
        assert model_file not in maps and "/tokenizers" not in maps
        result = search_answer(session, 9, {"query": "river water"})  # a text query: the model loads
        assert "local:numpy" in json.dumps(result["channels"])
        assert model_file in mapped_files(session.proc.pid)
    finally:
        session.close()


def imported(log: Path, module: str) -> bool:
    """Whether the server's `-X importtime` lines (its stderr) show `module` imported."""
    return any(line.rsplit("|", 1)[-1].strip() == module
               for line in log.read_text(encoding="utf-8", errors="replace").splitlines()
               if line.startswith("import time:"))


def test_an_mcp_server_imports_nothing_on_speculation(book: tuple[Path, Path], tmp_path: Path) -> None:
    """Nothing is imported on speculation after a call: queued after the first answer, the
    jsonschema import held up every session's second search. A refused call says what was wrong,
    without jsonschema too (issue 47: FastMCP's validation with strict types)."""
    import os

    data, _ = book
    log = tmp_path / "server.log"
    session = RawSession(data, BOOK, log, env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    try:
        session.send(rpc("tools/list", {}, 1))
        session.wait_for([1], timeout=60)
        for ident in range(2, 5):
            search_answer(session, ident, {"query": "river water", "query_vector": [0.5] * 16})
        search_answer(session, 5, {"query": "river water"})  # the encoder loads, then packs on the lane
        search_answer(session, 6, {"query": "water"})  # queued behind that job: it has run
        time.sleep(1.0)  # anything queued after the answers has run by now
        assert imported(log, "book_agent.mcp.server") and imported(log, "tokenizers")  # the log sees imports
        assert not imported(log, "jsonschema")
        session.send(call(7, "search", {"query": "river", "top_k": "five"}))
        refused = session.wait_for([7], timeout=60)[7][0]
        assert refused["result"]["isError"] and "top_k" in json.dumps(refused["result"])
        assert not imported(log, "jsonschema")
    finally:
        session.close()


def test_a_cli_search_reads_a_pdf_page_once_and_checks_its_package_once(book: tuple[Path, Path],
                                                                         tmp_path: Path) -> None:
    """Issue 46: the page-image advice reads a prose hit's page from the PDF the first time only
    (the profile is kept in the runtime folder), and a one-shot search opens its book once (a
    second open checks the package again, which arms the package watch: inotify's imports)."""
    data, vector = book
    for kept in data.rglob("page_profiles.json"):
        kept.unlink()  # another test's searches read pages already
    search = ("lamps harbour winter", "--query-vector", str(vector))
    first = cli_modules(tmp_path, data, *search)
    assert "book_agent_adapters.sources.pdf.page_profile" in first  # the hits' pages were read
    again = cli_modules(tmp_path, data, *search)
    assert "pypdfium2" not in again and "book_agent_adapters.sources.pdf.reader" not in again
    for modules in (first, again):
        assert "book_agent_adapters.package.change_watch" not in modules and "inotify_simple" not in modules
