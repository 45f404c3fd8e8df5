"""Peers: book-agent against the search stacks a user would assemble, over the same records,
the same vectors and the same queries, timed interleaved in one process.

    .venv-bench/bin/python tools/bench/peers/bench_peers.py [--sizes book,100000] [--runs 200] [--json]
    .venv-bench/bin/python tools/bench/peers/bench_peers.py --sizes 1000000      # after `make bench-1m` built it

`make bench` installs the peers into .venv-bench (never into .venv: `make install` does not
get them) and runs this script there. The stacks:

- **tantivy + faiss**: tantivy (BM25, English stemmer) and faiss in memory, fused by RRF (k=60);
- **sqlite-vec + FTS5**: one SQLite file (apsw: the python.org build cannot load extensions),
  FTS5 bm25 (porter) and a vec0 table (exact), RRF;
- **bm25s + numpy**: bm25s (sparse BM25, English stopwords) and an exact numpy product, RRF;
- **LanceDB**: one table, its full-text index and its (exact) vector search, RRF.

Same candidate depth as book-agent's channels (50 each for a top 10, book_agent/services/search/hybrid.py), the
same vectors (each book's own float32 rows) and, where book-agent searches approximately (a
model group of 100,000 vectors or more), the same faiss index parameters: the peer's faiss
index is trained as ours is (IVF-SQ8, nlist and nprobe from our index's pointer). Where ours
is exact the peer's faiss is exact too (IndexFlatIP), and the figure of a peer with IVF-SQ8 at
our approximate index's parameters is printed beside it.

Corpora: `book` is the eval set fairytaleqa's test book (real all-MiniLM-L6-v2 vectors, the
set's real questions and judgements: nDCG@10 of each stack); a size (100000, 1000000) is the
library tools/bench/library/bench_library_vectors.py builds (4 books, vectors mixed from real ones, synthetic
words; no judgements). A peer too slow at a size (exact sqlite-vec, LanceDB and bm25s at 1M) is
left out and said so. Each query goes to every stack in turn (a shuffled order per query), so
the machine's load falls on all alike: the ratios are the figure, the milliseconds are not.

Two interleaved runs per corpus. The head-to-head run, whose ratios are issue 29's targets,
interleaves book-agent (and its baselines) with tantivy + faiss alone. The all-peers run adds
the exact peers for the full table and their nDCG. Each exact peer's search scans every vector
(30-150 ms at 100k, 150 MB read), and LanceDB's threads run on after each call returns, so
whichever search follows one finds its caches cold and a core taken. That costs book-agent's
interpreter-bound search more than tantivy's compiled one (x3.56 against x2.97 at 100k in one
session, same code), so the head-to-head ratio is the fair one. A user's server does not scan
a sqlite-vec table between two of its queries. Every query is new to each stack, as a user's
are. A query asked again finds warm caches (book-agent's passage readings, stems, SQLite pages)
and runs ~1.5x faster at 100k, which is why a loop over the same queries flatters.
On a loaded machine wall time punishes the longer searches more (they are preempted more), so
each search's CPU time on the calling thread is reported too (`cpu_p50_ms`; LanceDB searches on
threads of its own, so its figure is a lower bound).

Before and after (`--warm-baseline CHECKOUT`): another checkout's book-agent (its code on
PYTHONPATH, e.g. a `git archive` of the base commit) runs warm in a child process
(tools/bench/peers/bench_peers_warm.py), timed there, as one more stack of the same interleaved run.

Cold one-shot (`--cold ROUNDS`, book corpus): `book-agent --json search` against a sqlite-vec +
FTS5 script, a process each that opens, answers one query and exits (tools/bench/peers/bench_peers_cold.py).

RSS of a warm worker: for book-agent and tantivy + faiss, a process of its own that imports only
its stack opens its indexes (book-agent: the data dir; the peer: the files built here and its
row -> id map), runs 50 warm hybrid queries and reports VmRSS (and VmHWM, its peak).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / ".bench" / "peers"
sys.path.insert(0, str(ROOT))  # the test helpers: tests.support
os.environ.setdefault("BOOK_AGENT_BLAS_THREADS", "1")

DEPTH = 50  # each channel's candidates for a top 10 (book_agent/services/search/hybrid.py CANDIDATES_MIN)
TOP_K = 10
RRF_K = 60
WARM = 5
RSS_QUERIES = 50
BIG = 500_000  # from this many records the exact peers are left out
HEAD_TO_HEAD = ("book-agent", "tantivy+faiss")  # the stacks of the head-to-head run (their names' first word)


@dataclass
class Corpus:
    name: str
    data_dir: Path
    ref: str  # what book-agent searches: a book id or @all
    keys: list[str]  # row -> the id book-agent's hit carries (record id, or book#record in a library)
    texts: list[str]
    matrix: np.ndarray  # float32 unit rows, the books' own
    queries: list[str]
    vectors: np.ndarray
    judged: list[dict[str, float]] | None = None  # per query: {key: grade}
    ann: dict[str, int] | None = None  # our index's nlist/nprobe where book-agent searches approximately
    ann_params: dict[str, int] = field(default_factory=dict)  # nlist/nprobe for the IVF-SQ8 peer


# -- corpora ------------------------------------------------------------------------------------

def book_records(database: Path) -> tuple[list[str], list[str]]:
    """(record ids, texts with their headings) in reading order, from a package's index.sqlite."""
    con = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT record_id, text, headings FROM records ORDER BY seq").fetchall()
    finally:
        con.close()
    return [r[0] for r in rows], [" ".join([*json.loads(r[2]), r[1]]) for r in rows]


def corpus_rows(agent: Any, book_ids: list[str], library: bool) -> tuple[list[str], list[str], np.ndarray]:
    keys, texts, matrices = [], [], []
    for book_id in book_ids:
        book = agent.books.open(book_id)
        store = book.vector_parts[0]
        loaded = store.load()
        ids, body = book_records(Path(book.package.database_path))
        text_of = dict(zip(ids, body, strict=True))
        keys += [f"{book_id}#{rid}" if library else rid for rid in loaded.ids]
        texts += [text_of[rid] for rid in loaded.ids]
        matrices.append(np.asarray(loaded.matrix, dtype=np.float32))
    return keys, texts, np.ascontiguousarray(np.concatenate(matrices))


def book_corpus(runs: int) -> Corpus:
    from book_agent import BookAgent
    from tools.eval.eval_sets import WORK_DIR, load_set, query_vectors, registered_book

    eval_set = load_set("fairytaleqa")
    data = WORK_DIR / "data"
    with BookAgent(data) as agent:
        book_id = registered_book(agent, eval_set, "test", WORK_DIR, progress=False)
        keys, texts, matrix = corpus_rows(agent, [book_id], library=False)
    questions = eval_set.questions("test")
    vectors = query_vectors(eval_set, "test", WORK_DIR, progress=False).astype(np.float32)
    chosen = sorted(random.Random(3).sample(range(len(questions)), min(runs, len(questions))))
    return Corpus("book", data, book_id, keys, texts, matrix, [questions[i][1] for i in chosen],
                  vectors[chosen], judged=[questions[i][2] for i in chosen])


def library_corpus(size: int, runs: int) -> Corpus:
    from book_agent import BookAgent
    from tests.support.package_builder import synthetic_records
    from tools.bench.library.bench_library_vectors import BENCH as LV
    from tools.bench.library.bench_library_vectors import (
        COMPLETE,
        DIMS,
        query_vectors,
        real_document_vectors,
    )

    data = LV / f"data-{size}"
    pointer_files = list((data / "library" / "vectors").glob("*.json"))
    if not (data / COMPLETE).is_file() or not pointer_files:
        raise SystemExit(f"no complete {size:,}-record library: run "
                         f"`tools/bench/library/bench_library_vectors.py --sizes {size} --build-only` first")
    pointer = json.loads(pointer_files[0].read_text())
    with BookAgent(data) as agent:
        book_ids = sorted(b["book_id"] for b in agent.list_books())
        keys, texts, matrix = corpus_rows(agent, book_ids, library=True)
    assert matrix.shape[1] == DIMS
    vectors, _ = query_vectors(runs, ROOT / ".eval" / "cache", real_document_vectors())
    words = [" ".join(r.text.rstrip(".").split(" ")[:4]) for r in synthetic_records(runs, seed=9, cjk_share=0.0)]
    from book_agent.domain.library import APPROXIMATE_MIN_VECTORS

    params = {"nlist": int(pointer["nlist"]), "nprobe": int(pointer["nprobe"])}
    return Corpus(str(size), data, "@all", keys, texts, matrix, words[:len(vectors)], vectors.astype(np.float32),
                  ann=params if size >= APPROXIMATE_MIN_VECTORS else None, ann_params=params)


def library_complete(size: int) -> bool:
    from tools.bench.library.bench_library_vectors import BENCH as LV
    from tools.bench.library.bench_library_vectors import COMPLETE

    return (LV / f"data-{size}" / COMPLETE).is_file()


# -- the stacks ---------------------------------------------------------------------------------

Search = Callable[[str, np.ndarray], list[str]]


def rrf(*rankings: list[int]) -> list[int]:
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking):
            scores[row] = scores.get(row, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda row: -scores[row])[:TOP_K]


def words_only(query: str) -> list[str]:
    return re.findall(r"\w+", query.lower())


def book_agent_stack(corpus: Corpus, min_vectors: int | None = None) -> Search:
    from book_agent.agent import build_agent
    from book_agent_adapters.bench import FaissLibraryVectors

    options = {} if min_vectors is None else {
        "library_vectors": FaissLibraryVectors(corpus.data_dir / "library", min_vectors=min_vectors)}
    agent = build_agent(corpus.data_dir, **options)
    agent.warm_up(corpus.ref, encoder=False)  # what a server does at its start (the peers' indexes are loaded too)
    library = corpus.ref.startswith("@")

    def search(query: str, vector: np.ndarray) -> list[str]:
        # the float32 array the peers get too (a list would time a conversion they do not pay)
        hits = agent.search(corpus.ref, query, top_k=TOP_K, query_vector=vector)["hits"]
        return [f"{h['book_id']}#{h['record_id']}" if library else h["record_id"] for h in hits]

    return search


class ChildStack:
    """book-agent of another checkout, warm in a child process (tools/bench/peers/bench_peers_warm.py); each
    search is timed in the child, so the pipe's cost is not counted (`last`: wall and CPU ms)."""

    def __init__(self, corpus: Corpus, checkout: str, min_vectors: int | None = None) -> None:
        env = {**os.environ, "PYTHONPATH": f"{checkout}:{checkout}/adapters"}
        extra = [] if min_vectors is None else [str(min_vectors)]
        self.process = subprocess.Popen([sys.executable, str(ROOT / "tools" / "bench/peers/bench_peers_warm.py"),
                                         str(corpus.data_dir), corpus.ref, *extra], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env, cwd="/")
        ready = json.loads(self._line())
        assert ready["book_agent"].startswith(checkout), ready  # the checkout's code, not this one's
        self.last = (0.0, 0.0)

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"the baseline's warm process ended (exit {self.process.wait()})")
        return line

    def __call__(self, query: str, vector: np.ndarray) -> list[str]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"query": query, "vector": vector.tolist()}) + "\n")
        self.process.stdin.flush()
        answer = json.loads(self._line())
        self.last = (answer["wall_ms"], answer["cpu_ms"])
        return list(answer["keys"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def faiss_index(corpus: Corpus, kind: str, folder: Path) -> Any:
    """An exact (flat) or IVF-SQ8 faiss index over the corpus rows, in memory; the IVF-SQ8 one
    trained as ours is (faiss_vector_index._trained_and_filled), cached on disk."""
    import faiss

    faiss.omp_set_num_threads(1)
    if kind == "flat":
        index = faiss.IndexFlatIP(corpus.matrix.shape[1])
        index.add(corpus.matrix)
        return index
    path = folder / f"ivf-sq8-{corpus.ann_params['nlist']}.faiss"
    if not path.is_file():
        from book_agent_adapters.bench import SEED, TRAIN_PER_LIST

        nlist = corpus.ann_params["nlist"]
        index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(corpus.matrix.shape[1]), corpus.matrix.shape[1],
                                              nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        total = len(corpus.matrix)
        sample = np.random.default_rng(SEED).choice(total, size=min(total, TRAIN_PER_LIST * nlist), replace=False)
        faiss.omp_set_num_threads(2)
        index.train(corpus.matrix[np.sort(sample)])
        index.add(corpus.matrix)
        faiss.omp_set_num_threads(1)
        faiss.write_index(index, str(path))
    index = faiss.read_index(str(path))
    index.nprobe = corpus.ann_params["nprobe"]
    return index


def tantivy_index(corpus: Corpus, folder: Path) -> Any:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_unsigned_field("row", stored=True)
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    schema = builder.build()
    path = folder / "tantivy"
    done = path / ".complete"
    if not done.is_file():
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        index = tantivy.Index(schema, path=str(path))
        writer = index.writer(heap_size=256_000_000, num_threads=1)
        for row, text in enumerate(corpus.texts):
            writer.add_document(tantivy.Document(row=row, text=text))
        writer.commit()
        writer.wait_merging_threads()
        done.touch()
    index = tantivy.Index(schema, path=str(path))
    index.reload()
    return index


def tantivy_faiss_stack(corpus: Corpus, folder: Path, kind: str) -> Search:
    index = tantivy_index(corpus, folder)
    searcher = index.searcher()
    vectors = faiss_index(corpus, kind, folder)

    def search(query: str, vector: np.ndarray) -> list[str]:
        words = words_only(query)
        lexical: list[int] = []
        if words:
            parsed = index.parse_query(" ".join(words), ["text"])
            lexical = [searcher.doc(address)["row"][0] for _, address in searcher.search(parsed, DEPTH).hits]
        _, found = vectors.search(vector[None, :], DEPTH)
        # the same kind of answer as book-agent's: the top passages' texts (kept in memory: the
        # cheapest a stack can hold them, so the ratio does not flatter book-agent)
        answer = [(corpus.keys[row], corpus.texts[row]) for row in rrf(lexical, [int(r) for r in found[0] if r >= 0])]
        return [key for key, _ in answer]

    return search


def sqlite_vec_stack(corpus: Corpus, folder: Path) -> Search:
    path = folder / "sqlite-vec.db"
    if not path.is_file():
        building = path.with_suffix(".building")
        building.unlink(missing_ok=True)
        con = _sqlite_vec(building)
        with con:
            con.execute("CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='porter unicode61')")
            con.execute(f"CREATE VIRTUAL TABLE vec USING vec0(embedding float[{corpus.matrix.shape[1]}])")
            con.executemany("INSERT INTO fts(rowid, text) VALUES (?, ?)", enumerate(corpus.texts))
            con.executemany("INSERT INTO vec(rowid, embedding) VALUES (?, ?)",
                            ((i, row.tobytes()) for i, row in enumerate(corpus.matrix)))
        con.close()
        building.rename(path)
    con = _sqlite_vec(path)

    def search(query: str, vector: np.ndarray) -> list[str]:
        words = words_only(query)
        lexical = [row for (row,) in con.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?",
            (" OR ".join(f'"{w}"' for w in words), DEPTH))] if words else []
        nearest = [row for (row,) in con.execute(
            "SELECT rowid FROM vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (vector.astype(np.float32).tobytes(), DEPTH))]
        return [corpus.keys[row] for row in rrf(lexical, nearest)]

    return search


def _sqlite_vec(path: Path) -> Any:
    import apsw
    import sqlite_vec

    con = apsw.Connection(str(path))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    return con


def bm25s_stack(corpus: Corpus) -> Search:
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus.texts, stopwords="en", show_progress=False), show_progress=False)
    matrix = corpus.matrix

    def search(query: str, vector: np.ndarray) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        lexical: list[int] = []
        if tokens.ids and tokens.ids[0]:
            rows, scores = retriever.retrieve(tokens, k=min(DEPTH, len(corpus.texts)), show_progress=False,
                                              n_threads=1)
            lexical = [int(r) for r, s in zip(rows[0], scores[0], strict=True) if s > 0]
        scores = matrix @ vector
        top = np.argpartition(-scores, DEPTH)[:DEPTH]
        nearest = top[np.argsort(-scores[top])].tolist()
        return [corpus.keys[row] for row in rrf(lexical, nearest)]

    return search


def lancedb_stack(corpus: Corpus, folder: Path) -> Search:
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS

    db = lancedb.connect(str(folder / "lancedb"))
    if not (folder / "lancedb" / ".complete").is_file():
        shutil.rmtree(folder / "lancedb", ignore_errors=True)
        db = lancedb.connect(str(folder / "lancedb"))
        dims = corpus.matrix.shape[1]
        table = pa.table({"row": pa.array(range(len(corpus.texts)), pa.int64()), "text": corpus.texts,
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(corpus.matrix.ravel()), dims)})
        created = db.create_table("records", data=table)
        created.create_index("text", config=FTS(stem=True, language="English", remove_stop_words=False))
        (folder / "lancedb" / ".complete").touch()
    table = db.open_table("records")

    def search(query: str, vector: np.ndarray) -> list[str]:
        words = words_only(query)
        lexical: list[int] = []
        if words:
            found = table.search(" ".join(words), query_type="fts").limit(DEPTH).select(["row", "_score"]).to_arrow()
            lexical = found.column("row").to_pylist()
        nearest = (table.search(vector, query_type="vector").distance_type("dot").limit(DEPTH)
                   .select(["row", "_distance"]).to_arrow().column("row").to_pylist())
        return [corpus.keys[row] for row in rrf(lexical, nearest)]

    return search


def stacks(corpus: Corpus, folder: Path, warm_baseline: str | None = None) -> dict[str, Search]:
    big = len(corpus.texts) >= BIG
    out: dict[str, Search] = {"book-agent": book_agent_stack(corpus)}
    if warm_baseline:
        out["book-agent (baseline)"] = ChildStack(corpus, warm_baseline)
    if corpus.ann is None and corpus.name != "book":
        out["book-agent (approximate)"] = book_agent_stack(corpus, min_vectors=1)
        if warm_baseline:
            out["book-agent (baseline, approx.)"] = ChildStack(corpus, warm_baseline, min_vectors=1)
    out["tantivy+faiss"] = tantivy_faiss_stack(corpus, folder, "ivf-sq8" if corpus.ann else "flat")
    if corpus.ann is None and corpus.name != "book":
        out["tantivy+faiss (IVF-SQ8)"] = tantivy_faiss_stack(corpus, folder, "ivf-sq8")
    if not big:
        out["sqlite-vec+FTS5"] = sqlite_vec_stack(corpus, folder)
        out["bm25s+numpy"] = bm25s_stack(corpus)
        out["LanceDB"] = lancedb_stack(corpus, folder)
    return out


# -- measuring ----------------------------------------------------------------------------------

def ndcg10(found: list[str], judged: dict[str, float]) -> float:
    gains = sum(judged.get(key, 0.0) / math.log2(rank + 2) for rank, key in enumerate(found[:TOP_K]))
    ideal = sum(g / math.log2(rank + 2) for rank, g in enumerate(sorted(judged.values(), reverse=True)[:TOP_K]))
    return gains / ideal if ideal > 0 else 0.0


def interleaved(corpus: Corpus, searches: dict[str, Search], asked: range) -> dict[str, dict[str, float]]:
    """The `asked` queries (their first WARM to warm up) to every stack in turn, in a shuffled
    order per query."""
    times: dict[str, list[float]] = {name: [] for name in searches}
    cpu: dict[str, list[float]] = {name: [] for name in searches}
    quality: dict[str, list[float]] = {name: [] for name in searches}
    pairs = [(corpus.queries[i], corpus.vectors[i]) for i in asked]
    judged = [corpus.judged[i] for i in asked] if corpus.judged is not None else None
    for query, vector in pairs[:WARM]:
        for search in searches.values():
            search(query, vector)
    order = list(searches)
    shuffle = random.Random(11)
    for i, (query, vector) in enumerate(pairs):
        shuffle.shuffle(order)
        for name in order:
            started, started_cpu = time.perf_counter(), time.thread_time()
            found = searches[name](query, vector)
            wall_ms, cpu_ms = (time.perf_counter() - started) * 1000, (time.thread_time() - started_cpu) * 1000
            if isinstance(searches[name], ChildStack):  # timed where it ran
                wall_ms, cpu_ms = searches[name].last  # type: ignore[attr-defined]
            times[name].append(wall_ms)
            cpu[name].append(cpu_ms)
            if judged is not None:
                quality[name].append(ndcg10(found, judged[i]))
    out = {}
    for name in searches:
        ordered = sorted(times[name])
        out[name] = {"queries": len(pairs), "p50_ms": round(statistics.median(ordered), 3),
                     "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
                     "cpu_p50_ms": round(statistics.median(cpu[name]), 3)}
        if quality[name]:
            out[name]["ndcg@10"] = round(statistics.fmean(quality[name]), 4)
    return out


def save_worker_input(corpus: Corpus, folder: Path) -> None:
    """What a warm worker needs and nothing more: the queries, and for a peer its row -> id map
    (its indexes are the files built in `folder`)."""
    np.save(folder / "worker-vectors.npy", corpus.vectors)
    (folder / "worker-input.json").write_text(json.dumps(
        {"data_dir": str(corpus.data_dir), "ref": corpus.ref, "queries": corpus.queries, "keys": corpus.keys,
         "ann": corpus.ann, "ann_params": corpus.ann_params}))
    if corpus.ann is None:  # the exact peer's vectors: a flat index file, read back in memory
        import faiss

        faiss.write_index(faiss_index(corpus, "flat", folder), str(folder / "flat.faiss"))


def rss_worker(folder: Path, stack: str) -> dict[str, float]:
    """In a process of its own: open one stack, run warm queries, report its resident memory.
    Only that stack's modules are imported (book_agent for book-agent alone)."""
    before = _status("VmRSS")
    given = json.loads((folder / "worker-input.json").read_text())
    vectors = np.load(folder / "worker-vectors.npy")
    corpus = Corpus(folder.name, Path(given["data_dir"]), given["ref"], given["keys"] if stack != "book-agent" else [],
                    [], np.zeros((0, vectors.shape[1]), np.float32), given["queries"], vectors,
                    ann=given["ann"], ann_params=given["ann_params"] or {})
    del given
    if stack == "book-agent":
        search = book_agent_stack(corpus)
    else:
        import faiss

        index = tantivy_index(corpus, folder)
        searcher = index.searcher()
        vectors_index = faiss.read_index(str(folder / (f"ivf-sq8-{corpus.ann_params['nlist']}.faiss" if corpus.ann
                                                       else "flat.faiss")))
        faiss.omp_set_num_threads(1)
        if corpus.ann:
            vectors_index.nprobe = corpus.ann_params["nprobe"]

        def search(query: str, vector: np.ndarray) -> list[str]:
            words = words_only(query)
            lexical = [searcher.doc(a)["row"][0] for _, a in
                       searcher.search(index.parse_query(" ".join(words), ["text"]), DEPTH).hits] if words else []
            _, found = vectors_index.search(vector[None, :], DEPTH)
            return [corpus.keys[row] for row in rrf(lexical, [int(r) for r in found[0] if r >= 0])]
    for i in range(RSS_QUERIES):
        search(corpus.queries[i % len(corpus.queries)], corpus.vectors[i % len(corpus.vectors)])
    return {"rss_mb": round(_status("VmRSS"), 1), "peak_mb": round(_status("VmHWM"), 1),
            "rss_at_start_mb": round(before, 1),  # the interpreter and numpy, before either stack
            # what the resident set is: the process's own memory, or pages of mapped files
            "anon_mb": round(_status("RssAnon"), 1), "file_mb": round(_status("RssFile"), 1)}


def _status(field_name: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field_name}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(size: str, runs: int, rss: bool, cold: int = 0, cold_baseline: str | None = None,
            warm_baseline: str | None = None) -> dict[str, Any]:
    corpus = book_corpus(runs) if size == "book" else library_corpus(int(size), runs)
    folder = BENCH / corpus.name
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    searches = stacks(corpus, folder, warm_baseline)
    result: dict[str, Any] = {"corpus": corpus.name, "records": len(corpus.texts), "queries": len(corpus.queries),
                              "book_agent_vectors": "approximate" if corpus.ann else "exact",
                              "ann_params": corpus.ann_params or None,
                              "open_s": round(time.perf_counter() - started, 1),
                              "loadavg_before": os.getloadavg()[0]}
    head = {name: search for name, search in searches.items() if name.split(" ")[0] in HEAD_TO_HEAD}
    both = len(head) < len(searches)
    half = len(corpus.queries) // 2 if both else len(corpus.queries)
    result["stacks"] = interleaved(corpus, head, range(0, half))
    if both:  # the exact peers too, over the other queries (each query new to every stack)
        result["all_stacks"] = interleaved(corpus, searches, range(half, len(corpus.queries)))
    result["loadavg_after"] = os.getloadavg()[0]
    for search in searches.values():
        if isinstance(search, ChildStack):
            search.close()
    del searches
    if cold:
        from tools.bench.peers.bench_peers_cold import cold_one_shot

        result["cold"] = cold_one_shot(corpus.data_dir, corpus.ref, corpus.keys, corpus.queries[0],
                                       corpus.vectors[0].tolist(), folder, cold, cold_baseline)
    if rss:
        save_worker_input(corpus, folder)
        del corpus
        result["rss"] = {stack: warm_worker_rss(folder, stack) for stack in ("book-agent", "tantivy+faiss")}
    return result


def _table(title: str, stacks_: dict[str, dict[str, float]]) -> list[str]:
    base, base_cpu = stacks_["tantivy+faiss"]["p50_ms"], stacks_["tantivy+faiss"]["cpu_p50_ms"]
    queries = next(iter(stacks_.values()))["queries"]
    lines = [f"  {title}, {queries} queries interleaved:",
             f"  {'stack':26s} {'p50 ms':>8s} {'p95 ms':>8s} {'p50 / tantivy+faiss':>20s} {'CPU p50':>8s} {'ratio':>6s}"
             + ("  nDCG@10" if any("ndcg@10" in s for s in stacks_.values()) else "")]
    for name, figures in stacks_.items():
        lines.append(f"  {name:26s} {figures['p50_ms']:8.2f} {figures['p95_ms']:8.2f} "
                     f"{figures['p50_ms'] / base:19.2f}x {figures['cpu_p50_ms']:8.2f} "
                     f"{figures['cpu_p50_ms'] / base_cpu:5.2f}x" + (f"  {figures['ndcg@10']:.4f}" if "ndcg@10" in figures else ""))
    return lines


def warm_worker_rss(folder: Path, stack: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--rss-worker", str(folder), "--stack", stack],
                         check=True, capture_output=True, text=True, cwd=ROOT)
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return figures


def report(result: dict[str, Any]) -> str:
    lines = [f"{result['corpus']}: {result['records']:,} records, {result['queries']} queries, "
             f"book-agent's vectors {result['book_agent_vectors']}"
             + (f" (IVF-SQ8 nlist {result['ann_params']['nlist']}, nprobe {result['ann_params']['nprobe']})"
                if result["ann_params"] else "")
             + f"; load average {result['loadavg_before']:.1f} -> {result['loadavg_after']:.1f}"]
    lines += _table("head to head (issue 29's ratios)", result["stacks"])
    if "all_stacks" in result:
        lines += _table("every peer (the other half of the queries)", result["all_stacks"])
    if result["records"] >= BIG:
        lines.append("  left out at this size (exact, too slow): sqlite-vec+FTS5, bm25s+numpy, LanceDB")
    if "cold" in result:
        from tools.bench.peers.bench_peers_cold import report as cold_report

        lines.append(cold_report(result["cold"]))
    if "rss" in result:
        rss = result["rss"]
        ours, peer = rss["book-agent"], rss["tantivy+faiss"]
        lines.append(f"  RSS of a warm worker: book-agent {ours['rss_mb']:.0f} MB (peak {ours['peak_mb']:.0f}; "
                     f"{ours['anon_mb']:.0f} own + {ours['file_mb']:.0f} mapped files), tantivy+faiss "
                     f"{peer['rss_mb']:.0f} MB (peak {peer['peak_mb']:.0f}; {peer['anon_mb']:.0f} own + "
                     f"{peer['file_mb']:.0f} mapped files): x{ours['rss_mb'] / peer['rss_mb']:.2f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="book,100000",
                        help="corpora, comma-separated: book (fairytaleqa test), or a library size built by "
                             "tools/bench/library/bench_library_vectors.py (100000 is built when missing)")
    parser.add_argument("--runs", type=int, default=200, help="queries per corpus")
    parser.add_argument("--no-rss", action="store_true", help="skip the warm workers' RSS")
    parser.add_argument("--cold", type=int, default=0, metavar="ROUNDS",
                        help="also time cold one-shot query processes on the book corpus (tools/bench/peers/bench_peers_cold.py)")
    parser.add_argument("--cold-baseline", metavar="CHECKOUT", help="another checkout's book-agent in the cold rounds")
    parser.add_argument("--warm-baseline", metavar="CHECKOUT",
                        help="another checkout's book-agent as one more warm stack (a child process, interleaved)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rss-worker", help=argparse.SUPPRESS)
    parser.add_argument("--stack", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_worker:
        print(json.dumps(rss_worker(Path(args.rss_worker), args.stack)))
        return 0
    results = []
    for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:
        if size != "book" and not library_complete(int(size)):  # built, or a half-built one finished
            # (a complete one is read without the lock: another size's build may hold it for an hour)
            lock = ["flock", str(ROOT / ".bench" / ".build.lock")] if shutil.which("flock") else []  # shared cache
            subprocess.run([*lock, sys.executable, str(ROOT / "tools" / "bench/library/bench_library_vectors.py"), "--sizes", size,
                            "--build-only"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        results.append(measure(size, args.runs, not args.no_rss, args.cold if size == "book" else 0,
                               args.cold_baseline, args.warm_baseline))
        if not args.json:
            print(report(results[-1]), flush=True)
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
