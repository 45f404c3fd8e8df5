"""The public eval sets (eval/sets/, BEIR layout) as book packages, registered in a data dir.

A development tool: `tools/eval_suite.py` (`make eval`) and `tools/fusion_study.py` use it.
Each set becomes one package: a record per corpus document (its title as the heading), an
EPUB chapter per title, and all-MiniLM-L6-v2 document vectors from the local encoder
(tools/eval_vectors.py, cached in eval/vectors/). Packages and the data dir live under
.eval/ and are rebuilt only when a set's texts, its vectors or this builder change.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SETS_DIR = ROOT / "eval" / "sets"
VECTORS_DIR = ROOT / "eval" / "vectors"
WORK_DIR = ROOT / ".eval"
BUILDER_VERSION = "1"
SET_NAMES = ("fairytaleqa", "covid-qa", "xquad-en", "drcd", "xquad-zh")
LANGUAGES = {"fairytaleqa": "en", "covid-qa": "en", "xquad-en": "en", "drcd": "zh-Hant", "xquad-zh": "zh-Hans"}

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tools"))


@dataclass
class EvalSet:
    name: str
    docs: list[dict[str, str]]  # {"_id", "title", "text"} in corpus order
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # split -> qid -> {doc: grade}

    @property
    def book_id(self) -> str:
        return f"eval-{self.name}"

    def doc_texts(self) -> list[str]:
        """What the document encoder sees: title and text, as BEIR's dense baselines embed them."""
        return [(d["title"] + " " + d["text"]).strip() for d in self.docs]

    def questions(self, split: str) -> list[tuple[str, str, dict[str, float]]]:
        """(query id, text, relevant docs) for a split, in query-id order."""
        judged = self.qrels.get(split)
        if judged is None:
            raise SystemExit(f"{self.name} has no {split} split (it has {', '.join(sorted(self.qrels))})")
        return [(qid, self.queries[qid], judged[qid]) for qid in sorted(judged)]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_set(name: str, sets_dir: Path = SETS_DIR) -> EvalSet:
    folder = sets_dir / name
    docs = [{"_id": str(d["_id"]), "title": str(d.get("title") or ""), "text": str(d["text"])}
            for d in _jsonl(folder / "corpus.jsonl.gz")]
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(folder / "queries.jsonl.gz")}
    out = EvalSet(name, docs, queries)
    for tsv in sorted((folder / "qrels").glob("*.tsv")):
        judged: dict[str, dict[str, float]] = {}
        with open(tsv, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                judged.setdefault(row["query-id"], {})[row["corpus-id"]] = float(row["score"])
        out.qrels[tsv.stem] = judged
    return out


def document_vectors(eval_set: EvalSet, progress: bool = True) -> np.ndarray:
    from eval_vectors import cached_vectors, stderr_progress

    return cached_vectors(VECTORS_DIR / f"{eval_set.name}.npy", eval_set.doc_texts(),
                          stderr_progress(f"{eval_set.name} documents") if progress else None)


def query_vectors(eval_set: EvalSet, split: str, progress: bool = True) -> np.ndarray:
    from eval_vectors import cached_vectors, stderr_progress

    texts = [text for _, text, _ in eval_set.questions(split)]
    return cached_vectors(WORK_DIR / "cache" / f"{eval_set.name}-{split}-queries.npy", texts,
                          stderr_progress(f"{eval_set.name} {split} queries") if progress else None,
                          queries=True)


def _stamp(eval_set: EvalSet, vectors: np.ndarray) -> dict[str, str]:
    from eval_vectors import MODEL, texts_digest

    texts = [f"{d['_id']}\t{d['title']}\t{d['text']}" for d in eval_set.docs]
    return {"builder": BUILDER_VERSION, "model": MODEL, "texts_sha256": texts_digest(texts),
            "vectors_sha256": hashlib.sha256(np.ascontiguousarray(vectors).tobytes()).hexdigest()}


def build_package(eval_set: EvalSet, vectors: np.ndarray, dest: Path) -> Path:
    """Write the set's package at dest (replaced whole)."""
    from eval_vectors import DIMS, MODEL
    from package_builder import RecordSpec
    from package_builder import build_package as write_package

    chapters: dict[str, int] = {}
    records = [RecordSpec(d["_id"], d["text"], [d["title"]] if d["title"] else [],
                          chapters.setdefault(d["title"], len(chapters)))
               for d in eval_set.docs]
    if dest.exists():
        shutil.rmtree(dest)
    return Path(write_package(
        dest, book_id=eval_set.book_id, title=f"Eval set {eval_set.name}", kind="epub",
        records=records, dims=DIMS, vectors=vectors, model=MODEL, provider="local",
        language=LANGUAGES.get(eval_set.name, "en"),
    ))


def registered_book(agent: Any, eval_set: EvalSet, progress: bool = True) -> str:
    """Build (when stale) and register the set's package; returns its book id."""
    vectors = document_vectors(eval_set, progress)
    stamp = _stamp(eval_set, vectors)
    package = WORK_DIR / "packages" / eval_set.name
    stamp_path = WORK_DIR / "packages" / f"{eval_set.name}.stamp.json"
    fresh = stamp_path.is_file() and json.loads(stamp_path.read_text(encoding="utf-8")) == stamp
    if not fresh or not package.is_dir():
        stamp_path.unlink(missing_ok=True)
        build_package(eval_set, vectors, package)
        stamp_path.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
        fresh = False
    known = {b["book_id"] for b in agent.list_books()}
    if not fresh or eval_set.book_id not in known:
        if progress:
            print(f"registering {eval_set.book_id} ({len(eval_set.docs)} records) ...", file=sys.stderr)
        agent.init(package, replace=True)
    return eval_set.book_id
