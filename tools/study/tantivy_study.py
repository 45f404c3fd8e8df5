"""tantivy as the local library's lexical engine, against today's impact index (issue 47, item 2).

    .venv-bench/bin/python tools/study/tantivy_study.py quality [--sets fairytaleqa,cacm,npl,covid-qa,drcd,xquad-zh,cmdd-im]
    .venv-bench/bin/python tools/study/tantivy_study.py speed [--sizes 100000,300000] [--queries 200]
    .venv-bench/bin/python tools/study/tantivy_study.py operational [--rounds 8]
    make study-tantivy      # all three in the bench venv (.venv-bench has tantivy==0.25.1, the Makefile's PEERS)

(Or any venv with `pip install -e '.[faiss]' tantivy==0.25.1`.) Figures and the decision:
contracts/library.md, "tantivy as the local lexical engine (issue 47)".

Only the engine differs. Both sides index the same terms: our FTS5-compatible terms
(adapters/book_agent_adapters/text/fts_terms.py: unicode61 words, porter stems, CJK bigrams and
folds), given to tantivy pre-tokenised, space-joined, through its whitespace tokenizer. A record
is two tantivy fields as it is two FTS5 columns: `body` and `headings`, the headings field
boosted by HEADINGS_WEIGHT at query time (FTS5's bm25(fts, 1.0, 0.4)). A query is our query
terms (FtsTerms.query_terms, repeats kept) as an OR of term queries, each boosted by its count,
on both fields. Our side is SqliteLibraryIndex / SqliteLibraryLexical (the impact index,
library_lexical_index.py, library_lexical_search.py, impact_top.py), as the product runs it.

quality: each eval set's test book (eval/sets, loaded by tools/eval/eval_sets.py) as one
package database; nDCG@10 and recall@100 of both engines on the test questions, and how
their rankings agree (top-10 overlap; Spearman correlation of the scores of the records in
both top-100s).

speed: the synthetic libraries of tools/bench/library/bench_library_lexical.py (4 books,
Zipf words with function words, 5% CJK records); cold build time and size on disk; warm
top-100 p50/p95 over new queries of its three kinds, the two engines interleaved per query
(a shuffled order each time) in one process, with the load average before and after; adding
a 10,000-record book and removing it (ours: a living generation's delta and its removal;
tantivy: add + commit, delete by a book_id term + commit, then the merge to one segment).

operational: kill -9 of a tantivy writer at random moments (the index must open at a commit and
a new writer take the lock); issue 44.2's `cp` of identical bytes over the index files under a
searching reader (memory maps: SIGBUS?); both engines' indexes searched on a read-only mount.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # tools.*, tests.support
WORK = ROOT / ".bench" / "tantivy_study"
TOP = 100
SETS = ("fairytaleqa", "cacm", "npl", "covid-qa", "drcd", "xquad-zh", "cmdd-im")  # English and Chinese
HEAP = 200_000_000  # tantivy writer's memory budget (bytes)


# -- the two engines ----------------------------------------------------------------------------

def record_terms(database: Path) -> Iterator[tuple[str, str, str]]:
    """(record id, body terms, heading terms) of a package database, space-joined, in seq order:
    the terms our impact index counts (term_counts.count_terms reads them the same way)."""
    from book_agent_adapters.bench import RECORDS_SQL, FtsTerms, connect_readonly, headings_text

    tokens = FtsTerms()
    con = connect_readonly(database)
    heads: dict[str | None, str] = {}
    try:
        cursor = con.execute(RECORDS_SQL)
        while rows := cursor.fetchmany(2000):
            terms = tokens.terms
            bodies = tokens.text_ids(r[1] or "" for r in rows)
            for raw in dict.fromkeys(r[2] for r in rows):
                if raw not in heads:
                    heads[raw] = " ".join(terms[i] for i in tokens.text_ids([headings_text(raw)])[0])
            for row, body in zip(rows, bodies, strict=True):
                yield str(row[0]), " ".join(terms[i] for i in body if i >= 0), heads[row[2]]
    finally:
        con.close()
        tokens.close()


class Tantivy:
    """A tantivy index of the library: one document per record (key `book#record`, book id)."""

    def __init__(self, folder: Path, threads: int = 2, fresh: bool = True) -> None:
        import tantivy

        self.tv = tantivy
        self.folder = folder
        if fresh:
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("key", stored=True, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("book", tokenizer_name="raw", index_option="basic")
        for name in ("body", "headings"):
            builder.add_text_field(name, tokenizer_name="ws", index_option="freq")
        self.schema = builder.build()
        self.index = tantivy.Index(self.schema, path=str(folder), reuse=not fresh)
        self.index.register_tokenizer("ws", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
        self.writer = self.index.writer(heap_size=HEAP, num_threads=threads) if threads else None
        from book_agent_adapters.bench import HEADINGS_WEIGHT, FtsTerms

        self.headings_weight = HEADINGS_WEIGHT
        self.query_tokens = FtsTerms()
        self.searcher: Any = None

    def add_book(self, book_id: str, database: Path) -> int:
        count = 0
        for record_id, body, heads in record_terms(database):
            self.writer.add_document(self.tv.Document(key=f"{book_id}#{record_id}", book=book_id,
                                                      body=body, headings=heads))
            count += 1
        return count

    def remove_book(self, book_id: str) -> None:
        self.writer.delete_documents_by_term("book", book_id)

    def commit_reader(self) -> None:
        self.index.reload()
        self.searcher = self.index.searcher()

    def commit(self, merge: bool = False) -> None:
        self.writer.commit()
        if merge:
            self.writer.wait_merging_threads()
            self.writer = self.index.writer(heap_size=HEAP, num_threads=2)
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        tv = self.tv
        terms, _prefixes = self.query_tokens.query_terms(query)  # one-letter CJK prefixes: not measured
        if not terms:
            return []
        parts = []
        for term, count in Counter(terms).items():
            for field, weight in (("body", 1.0), ("headings", self.headings_weight)):
                query_part = tv.Query.term_query(self.schema, field, term)
                parts.append((tv.Occur.Should, tv.Query.boost_query(query_part, weight * count)))
        hits = self.searcher.search(tv.Query.boolean_query(parts), top_k).hits
        return [(self.searcher.doc(address)["key"][0], score) for score, address in hits]

    def search_rows(self, query: str, top_k: int) -> list[tuple[Any, float]]:
        """As search, without reading the hits' keys from the doc store (the engine's own share)."""
        terms, _prefixes = self.query_tokens.query_terms(query)
        tv = self.tv
        parts = [(tv.Occur.Should, tv.Query.boost_query(tv.Query.term_query(self.schema, field, term), weight * count))
                 for term, count in Counter(terms).items()
                 for field, weight in (("body", 1.0), ("headings", self.headings_weight))]
        return [(address, score) for score, address in self.searcher.search(tv.Query.boolean_query(parts), top_k).hits]

    def segments(self) -> int:
        return int(self.searcher.num_segments)

    def size_mb(self) -> float:
        return round(sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file()) / 1e6, 1)


class Ours:
    """Today's engine, as the product builds and searches it."""

    def __init__(self, folder: Path) -> None:
        from book_agent_adapters.bench import SqliteLibraryIndex

        shutil.rmtree(folder, ignore_errors=True)
        self.folder = folder
        self.index = SqliteLibraryIndex(folder)
        self.reader: Any = None

    def build(self, members: Sequence[Any], compact: bool = False) -> None:
        stamp = {"books": ",".join(f"{m.book_id}:{m.stamp}" for m in members)}
        (self.index.compact if compact else self.index.build)(members, stamp, None)
        if self.reader is not None:
            self.reader.close()
        self.reader = self.index.open()
        self.reader.warm_up()  # as a server warms up: every postings block's CRC checked before the queries
        if self.reader.checking is not None:
            self.reader.checking.join()

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        return [(hit.record_id, hit.score) for hit in self.reader.search(query, top_k)]

    def size_mb(self) -> float:
        files = [p for p in self.folder.iterdir() if p.is_file() and not p.name.endswith(".lock")]
        return round(sum(p.stat().st_size for p in files) / 1e6, 1)


# -- quality ------------------------------------------------------------------------------------

def eval_database(name: str) -> tuple[Path, list[tuple[str, str, dict[str, float]]]]:
    """The set's test book as a package database (record = document, its title the heading)."""
    from book_agent.domain.book.package import DATABASE_SCHEMA_SQL
    from tools.eval.eval_sets import load_set

    eval_set = load_set(name)
    path = WORK / "eval" / f"{name}-test.sqlite"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        con = sqlite3.connect(tmp)
        con.executescript(DATABASE_SCHEMA_SQL)
        con.executemany("INSERT INTO records VALUES (?, ?, ?, ?, 0, 0, '{}')",
                        [(d["_id"], seq, d["text"], json.dumps([d["title"]] if d["title"] else []))
                         for seq, d in enumerate(eval_set.book_docs("test"))])
        con.commit()
        con.close()
        tmp.replace(path)
    return path, eval_set.questions("test")


def ndcg10(ranked: list[str], judged: dict[str, float]) -> float:
    import math

    dcg = sum(judged.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(judged.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall(ranked: list[str], judged: dict[str, float], k: int = TOP) -> float:
    relevant = {d for d, g in judged.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def spearman(a: list[float], b: list[float]) -> float | None:
    if len(a) < 3:
        return None
    import numpy as np

    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def quality(name: str) -> dict[str, Any]:
    from book_agent.domain.library import LibraryMember

    database, questions = eval_database(name)
    count = sqlite3.connect(database).execute("SELECT count(*) FROM records").fetchone()[0]
    member = LibraryMember(f"eval-{name}", database, count, f"{name}-test")
    ours = Ours(WORK / "eval" / f"ours-{name}")
    ours.build([member])
    theirs = Tantivy(WORK / "eval" / f"tantivy-{name}")
    theirs.add_book(member.book_id, database)
    theirs.commit(merge=True)
    sums: dict[str, list[float]] = {k: [] for k in ("ours_ndcg", "tantivy_ndcg", "ours_recall", "tantivy_recall",
                                                   "overlap10", "spearman", "same_top1")}
    for _, text, judged in questions:
        ranked = {}
        for label, engine in (("ours", ours), ("tantivy", theirs)):
            hits = engine.search(text, TOP)
            ranked[label] = hits
            ids = [key.split("#", 1)[1] for key, _ in hits]
            sums[f"{label}_ndcg"].append(ndcg10(ids, judged))
            sums[f"{label}_recall"].append(recall(ids, judged))
        a, b = dict(ranked["ours"]), dict(ranked["tantivy"])
        top_a, top_b = [k for k, _ in ranked["ours"][:10]], [k for k, _ in ranked["tantivy"][:10]]
        if top_a or top_b:
            sums["overlap10"].append(len(set(top_a) & set(top_b)) / max(len(top_a), len(top_b)))
            sums["same_top1"].append(float(top_a[:1] == top_b[:1]))
        both = sorted(set(a) & set(b))
        rho = spearman([a[k] for k in both], [b[k] for k in both])
        if rho is not None:
            sums["spearman"].append(rho)
    row: dict[str, Any] = {"set": name, "records": count, "questions": len(questions)}
    row.update({k: round(statistics.fmean(v), 4) if v else None for k, v in sums.items()})
    return row


# -- speed --------------------------------------------------------------------------------------

def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def timed(call: Any, *args: Any) -> float:
    started = time.perf_counter()
    call(*args)
    return time.perf_counter() - started


def speed(size: int, books: int, count: int) -> dict[str, Any]:
    from book_agent.domain.library import LibraryMember
    from tools.bench.library.bench_library_lexical import book_database, queries

    per_book = size // books
    members = [LibraryMember(f"book-{p}", book_database(per_book, p), per_book, f"bench-{per_book}-{p}")
               for p in range(books)]
    extra = LibraryMember("book-added", book_database(10_000, 9), 10_000, "bench-10000-9")
    row: dict[str, Any] = {"records": size, "books": books, "load_before": load()}
    ours = Ours(WORK / f"ours-{size}")
    row["ours_build_s"] = round(timed(ours.build, members), 1)  # counting every book's terms, then the merge
    row["ours_mb"] = ours.size_mb()
    row["ours_terms_cache_mb"] = round(sum(p.stat().st_size for p in (ours.folder / "terms").iterdir()) / 1e6, 1)
    theirs = Tantivy(WORK / f"tantivy-{size}")
    started = time.perf_counter()
    for m in members:
        theirs.add_book(m.book_id, m.database_path)
    theirs.commit()
    row["tantivy_build_s"] = round(time.perf_counter() - started, 1)  # tokenising (ours, in Python) + indexing
    row["tantivy_merge_s"] = round(timed(theirs.commit, True), 1)
    row["tantivy_mb"], row["tantivy_segments"] = theirs.size_mb(), theirs.segments()
    row["tokenise_only_s"] = round(timed(lambda: [None for m in members for _ in record_terms(m.database_path)]), 1)
    rows_only = type("RowsOnly", (), {"search": staticmethod(theirs.search_rows)})()  # no doc-store reads
    row.update(interleaved({"ours": ours, "tantivy": theirs, "tantivy_rows": rows_only},
                           queries(members[0].database_path, count)))
    row.update(living(ours, theirs, members, extra))
    row["load_after"] = load()
    return row


def interleaved(engines: dict[str, Any], kinds: dict[str, list[str]]) -> dict[str, Any]:
    """Warm top-100 per query, each query new, the engines in a shuffled order per query."""
    for engine in engines.values():
        engine.search("warm up", TOP)
    order = random.Random(7)
    times: dict[str, list[float]] = {name: [] for name in engines}
    out: dict[str, Any] = {}
    for kind, texts in kinds.items():
        per_kind: dict[str, list[float]] = {name: [] for name in engines}
        for text in texts:
            names = list(engines)
            order.shuffle(names)
            for name in names:
                ms = timed(engines[name].search, text, TOP) * 1000
                per_kind[name].append(ms)
                times[name].append(ms)
        for name, values in per_kind.items():
            out[f"{name}_{kind}_p50_ms"] = round(percentile(values, 0.5), 2)
            out[f"{name}_{kind}_p95_ms"] = round(percentile(values, 0.95), 2)
    for name, values in times.items():
        out[f"{name}_all_p50_ms"] = round(percentile(values, 0.5), 2)
        out[f"{name}_all_p95_ms"] = round(percentile(values, 0.95), 2)
    return out


def living(ours: Ours, theirs: Tantivy, members: list[Any], extra: Any) -> dict[str, Any]:
    """Adding a 10k-record book and removing it again, on each engine; then each one's tidy-up."""
    row: dict[str, Any] = {}
    row["ours_add_book_s"] = round(timed(ours.build, [*members, extra]), 2)  # a delta (its counts included)
    probe = "warm up"
    ours.search(probe, TOP)
    row["ours_remove_book_s"] = round(timed(ours.build, members), 2)  # the book filtered out, a new generation
    row["ours_compact_s"] = round(timed(ours.build, members, True), 1)  # the exact rebuild, counts cached

    def add() -> None:
        theirs.add_book(extra.book_id, extra.database_path)
        theirs.commit()

    def remove() -> None:
        theirs.remove_book(extra.book_id)
        theirs.commit()

    row["tantivy_add_book_s"] = round(timed(add), 2)
    row["tantivy_remove_book_s"] = round(timed(remove), 2)
    row["tantivy_segments_after"] = theirs.segments()
    row["tantivy_merge_after_s"] = round(timed(theirs.commit, True), 1)
    row["tantivy_gone"] = not any(k.startswith(extra.book_id + "#") for k, _ in theirs.search("the of and", 10_000))
    return row


# -- operational: kill -9 during writes, files rewritten under a reader ---------------------------

def synthetic_docs(start: int, count: int) -> Iterator[tuple[str, str]]:
    rng = random.Random(start)
    for n in range(start, start + count):
        yield f"w#{n}", " ".join(f"t{int(rng.paretovariate(1.2))}" for _ in range(40))


def child_writer(folder: Path) -> None:
    """Adds 2,000 documents and commits, forever, printing the documents committed after each commit."""
    index = Tantivy(folder, threads=1, fresh=False)
    total = index.index.searcher().num_docs
    while True:
        for key, body in synthetic_docs(total, 2000):
            index.writer.add_document(index.tv.Document(key=key, book="w", body=body, headings=""))
        index.writer.commit()
        total += 2000
        print(total, flush=True)


def child_reader(folder: Path) -> None:
    """Searches in a loop, printing a line per 50 searches (it dies if its maps fault)."""
    index = Tantivy(folder, threads=0, fresh=False)
    index.commit_reader()
    n = 0
    while True:
        index.search(f"t{1 + n % 7} t{n % 50} t{n % 300}", 10)
        n += 1
        if n % 50 == 0:
            print(n, flush=True)


def spawn(role: str, folder: Path) -> Any:
    import subprocess

    return subprocess.Popen([sys.executable, __file__, role, "--folder", str(folder)], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'adapters'}"})


def kill_during_writes(rounds: int) -> dict[str, Any]:
    """kill -9 a writer at a random moment, `rounds` times; after each, the index must open with
    a committed count of documents, and a new writer must take the lock and commit."""
    import signal

    folder = WORK / "crash"
    Tantivy(folder, threads=1).commit()  # an empty index
    rng = random.Random(5)
    outcomes = []
    for _ in range(rounds):
        child = spawn("_writer", folder)
        seen = [int(child.stdout.readline()) for _ in range(rng.randint(1, 3))]
        time.sleep(rng.uniform(0.0, 0.5))  # mid-batch or mid-commit
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        after = Tantivy(folder, threads=1, fresh=False)
        found = after.index.searcher().num_docs
        after.writer.add_document(after.tv.Document(key="probe", book="p", body="probe", headings=""))
        after.writer.commit()
        after.writer.delete_documents_by_term("book", "p")
        after.writer.commit()
        after.writer.wait_merging_threads()
        outcomes.append({"committed_seen": seen[-1], "found": found,
                         "committed_count": found % 2000 == 0 and found >= seen[-1]})
        after.writer = None  # its lock goes with it: the next writer takes it
        del after
    return {"kill9_rounds": rounds, "kill9_all_consistent": all(o["committed_count"] for o in outcomes),
            "kill9_outcomes": outcomes}


def rewrite_under_reader(seconds: float) -> dict[str, Any]:
    """Issue 44.2's case: `cp -r backup/. index/` (identical bytes, written in place) in a loop
    while a reader searches through its memory maps; tantivy's index, and ours (the 100k index
    `speed` built, copied)."""
    folder = WORK / "rewrite"
    index = Tantivy(folder, threads=1)
    for part in range(4):
        for key, body in synthetic_docs(part * 20_000, 20_000):
            index.writer.add_document(index.tv.Document(key=key, book="w", body=body, headings=""))
        index.writer.commit()
    index.writer.wait_merging_threads()
    out = {f"tantivy_{k}": v for k, v in rewrite_loop("_reader", folder, seconds).items()}
    ours = WORK / "ours-100000"
    if ours.is_dir():
        shutil.rmtree(WORK / "rewrite-ours", ignore_errors=True)
        shutil.copytree(ours, WORK / "rewrite-ours")
        out.update({f"ours_{k}": v for k, v in rewrite_loop("_reader_ours", WORK / "rewrite-ours", seconds).items()})
    return out


def rewrite_loop(role: str, folder: Path, seconds: float) -> dict[str, Any]:
    backup = folder.with_name(folder.name + "-backup")
    shutil.rmtree(backup, ignore_errors=True)
    shutil.copytree(folder, backup)
    reader = spawn(role, folder)
    reader.stdout.readline()  # searching
    copies, ended = 0, time.monotonic() + seconds
    while time.monotonic() < ended and reader.poll() is None:
        for path in backup.rglob("*"):
            if path.is_file() and not path.name.startswith("."):
                shutil.copyfile(path, folder / path.relative_to(backup))  # truncate, then write: as cp does
        copies += 1
    code = reader.poll()
    if code is None:
        reader.kill()
        reader.wait()
    return {"rewrite_copies": copies, "reader_exit": code, "reader_sigbus": code == -7}


def child_reader_ours(folder: Path) -> None:
    from book_agent_adapters.bench import SqliteLibraryLexical

    reader = SqliteLibraryLexical(folder / "lexical.sqlite")
    n = 0
    while True:
        try:
            reader.search(f"the of {n % 97} and", 10)
        except Exception as exc:  # a coded error is what a survivor gives
            print(f"error {getattr(exc, 'code', type(exc).__name__)}", flush=True)
        n += 1
        if n % 50 == 0:
            print(n, flush=True)


def read_only_mount() -> dict[str, Any]:
    """Both engines' indexes (the cacm ones `quality` built) searched through a read-only bind
    mount of their folder, as a data dir on a read-only volume is (needs root: unshare -m)."""
    import subprocess

    folder = WORK / "eval"
    if os.geteuid() != 0 or not shutil.which("unshare") or not (folder / "tantivy-cacm").is_dir():
        return {"read_only": "skipped: needs root (a read-only bind mount) and `quality --sets cacm` first"}
    mount = WORK / "ro-mount"
    mount.mkdir(exist_ok=True)
    script = (f"mount --bind {folder} {mount} && mount -o remount,bind,ro {mount} && "
              f"{sys.executable} {__file__} _readonly --folder {mount}")
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'adapters'}"})
    return {"read_only": json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else done.stderr}


def child_read_only(folder: Path) -> None:
    from book_agent_adapters.bench import SqliteLibraryLexical

    out: dict[str, Any] = {}
    try:
        theirs = Tantivy(folder / "tantivy-cacm", threads=0, fresh=False)
        theirs.commit_reader()
        out["tantivy_hits"] = len(theirs.search("computer programming language", 10))
    except Exception as exc:  # what a user would meet
        out["tantivy_hits"] = f"{type(exc).__name__}: {exc}"
    out["ours_hits"] = len(SqliteLibraryLexical(folder / "ours-cacm" / "lexical.sqlite")
                           .search("computer programming language", 10))
    print(json.dumps(out), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("quality", "speed", "both", "operational", "_writer", "_reader", "_reader_ours",
                                                 "_readonly"))
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--books", type=int, default=4)
    parser.add_argument("--queries", type=int, default=200, help="per query kind (three kinds)")
    args = parser.parse_args()
    if args.what.startswith("_"):
        {"_writer": child_writer, "_reader": child_reader, "_reader_ours": child_reader_ours,
         "_readonly": child_read_only}[args.what](args.folder)
        return
    import tantivy

    print(f"tantivy {getattr(tantivy, '__version__', '?')}; load {load()}", flush=True)
    if args.what in ("quality", "both"):
        for name in args.sets.split(","):
            print(json.dumps(quality(name)), flush=True)
    if args.what == "operational":
        if args.rounds:
            print(json.dumps(kill_during_writes(args.rounds)), flush=True)
        print(json.dumps(rewrite_under_reader(20.0)), flush=True)
        print(json.dumps(read_only_mount()), flush=True)
    if args.what in ("speed", "both"):
        for size in args.sizes.split(","):
            print(json.dumps(speed(int(size), args.books, args.queries)), flush=True)


if __name__ == "__main__":
    main()
