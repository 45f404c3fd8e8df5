"""The committed eval sets (eval/sets/) are whole and as documented: every data file matches
SHA256SUMS, every set passes convert.py's own --verify checks, each set's README states the
counts the files hold, `make eval` knows every set, and the seeded dev/test split keeps each
judged query in exactly one split."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import REPO_ROOT

SETS_DIR = REPO_ROOT / "eval" / "sets"
DATA_FILES = ("corpus.jsonl.gz", "queries.jsonl.gz")


@functools.cache
def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def convert() -> ModuleType:
    return _module("eval_sets_convert", SETS_DIR / "convert.py")


@pytest.fixture(scope="module")
def eval_sets() -> ModuleType:
    import tools.eval.eval_sets as eval_sets

    return eval_sets


def _set_folders() -> list[str]:
    return sorted(p.parent.name for p in SETS_DIR.glob("*/corpus.jsonl.gz"))


def test_sha256sums_cover_every_data_file_and_match() -> None:
    listed = {}
    for line in (SETS_DIR / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, name = line.split(None, 1)
        listed[name.removeprefix("./")] = digest
    on_disk = sorted(str(p.relative_to(SETS_DIR)) for p in SETS_DIR.glob("*/*")
                     if p.name in DATA_FILES) + sorted(str(p.relative_to(SETS_DIR))
                                                       for p in SETS_DIR.glob("*/qrels/*.tsv"))
    assert sorted(listed) == sorted(on_disk)
    wrong = [n for n, d in listed.items() if hashlib.sha256((SETS_DIR / n).read_bytes()).hexdigest() != d]
    assert wrong == []


def test_make_eval_knows_every_committed_set(eval_sets: ModuleType) -> None:
    assert sorted(eval_sets.SET_NAMES) == _set_folders()
    assert set(eval_sets.LANGUAGES) == set(eval_sets.SET_NAMES)
    # long requests, CF, Chinese medical, and the topical Glasgow sets with dev/test halves
    assert {"cacm", "cfc", "cmdd-im", "medline", "lisa", "npl"} <= set(eval_sets.SET_NAMES)


def _readme_count(readme: str, row: str) -> int:
    match = re.search(rf"^\| {row} \| ([\d,]+)", readme, re.M)
    assert match, row
    return int(match.group(1).replace(",", ""))


@pytest.mark.parametrize("name", _set_folders())
def test_each_set_verifies_and_its_readme_states_its_counts(convert: ModuleType, name: str) -> None:
    counts = convert.verify(str(SETS_DIR / name))
    readme = (SETS_DIR / name / "README.md").read_text(encoding="utf-8")
    assert _readme_count(readme, "documents") == counts["docs"]
    assert _readme_count(readme, "queries") == counts["queries"]
    for split, c in counts["splits"].items():
        assert _readme_count(readme, f"qrels/{split}.tsv") == c["queries"]
    assert "test" in counts["splits"]
    assert "licence" in readme and "commit `" in readme


@pytest.mark.parametrize("name", ["cacm", "cfc", "cmdd-im", "medline", "lisa", "npl"])
def test_seeded_sets_have_dev_and_test_halves(eval_sets: ModuleType, name: str) -> None:
    es = eval_sets.load_set(name)
    dev, test = set(es.qrels["dev"]), set(es.qrels["test"])
    assert dev and not dev & test and dev | test == set(es.queries)
    assert abs(len(dev) - len(test)) <= 1


IDS = st.builds(lambda prefix, n: f"{prefix}{n}", st.sampled_from(["", "a", "q"]), st.integers(0, 9999))
DOC_IDS = st.lists(st.integers(0, 999).map(lambda n: f"d{n}"), min_size=1, max_size=3, unique=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(IDS, DOC_IDS, max_size=40), st.integers(0, 2**32))
def test_seeded_split_puts_each_query_in_one_half(judged: dict[str, list[str]], seed: int) -> None:
    convert = _module("eval_sets_convert", SETS_DIR / "convert.py")

    def split() -> dict[str, dict[tuple[str, str], int]]:
        es = convert.EvalSet("x")
        convert.seeded_split(es, judged, seed)
        return es.qrels

    first = split()
    assert first == split()  # the same seed gives the same split
    halves = [{q for q, _ in first.get(s, {})} for s in ("dev", "test")]
    assert not halves[0] & halves[1] and halves[0] | halves[1] == set(judged)
    assert len(halves[0]) == len(judged) // 2
    pairs = {(q, d) for rel in first.values() for q, d in rel}
    assert pairs == {(q, d) for q, ds in judged.items() for d in ds}
