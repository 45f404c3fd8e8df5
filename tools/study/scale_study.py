"""Scale study (a spike, not product code): can the lexical and vector channels reach 1M records?

Lexical: SQLite FTS5 (built as adapters/book_agent_adapters/library/local/lexical/library_lexical_index.py builds it)
against a sparse BM25 impact index (bm25s), both fed the product's own tokens (index_text /
query_terms, CJK bigrams, OpenCC t2s fold, porter stemming). Vectors: usearch HNSW and faiss
IVF against exact float32 search, with exact rescoring of the top-C candidates.

Runs in its own venv (not the product's): numpy bm25s usearch faiss-cpu PyStemmer scipy opencc
(+ numba for bm25s's numba backend), with /work/main on PYTHONPATH:

    PYTHONPATH=. /tmp/spike-venv/bin/python tools/study/scale_study.py lexical-synth --sizes 100000 1000000
    PYTHONPATH=. /tmp/spike-venv/bin/python tools/study/scale_study.py lexical-eval
    PYTHONPATH=. /tmp/spike-venv/bin/python tools/study/scale_study.py vectors --sizes 100000 1000000

Results go to .bench/scale_study/*.json (and a line per measurement on stdout).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re
import resource
import sqlite3
import sys
import time
import unicodedata
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the product's default: one BLAS thread per query
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / ".bench" / "scale_study"
WORK = Path(os.environ.get("SCALE_STUDY_WORK", "/tmp/scale_study"))
sys.path.insert(0, str(ROOT))

from book_agent.domain.search.lexical_text import STOPWORDS, index_text, query_terms  # noqa: E402
from book_agent_adapters.bench import HEADINGS_WEIGHT, fold_chinese  # noqa: E402

STOP50 = ["the", "of", "and", "a", "to", "in", "is", "you", "that", "it", "he", "was",
                                   "for", "on", "are", "as", "with", "his", "they", "i", "at", "be", "this",
                                   "have", "from", "or", "had", "by", "not", "but", "what", "all", "were",
                                   "we", "when", "your", "can", "there", "an", "which", "their", "if", "do",
                                   "will", "each", "about", "how", "up", "out", "them"]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def pct(values: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(values), p)) if values else float("nan")


def emit(kind: str, **row: object) -> dict:
    row = {"kind": kind, **row}
    print(json.dumps(row), flush=True)
    return row


# --- the product's tokens, as FTS5's `porter unicode61 remove_diacritics 2` would cut them ----------

_WORD = re.compile(r"[^\W_]+")
_stem_cache: dict[str, str] = {}
_stemmer = None


def _stem(token: str) -> str:
    out = _stem_cache.get(token)
    if out is None:
        global _stemmer
        if _stemmer is None:
            import Stemmer  # PyStemmer; 'porter' is Porter's original algorithm, as FTS5's porter tokenizer

            _stemmer = Stemmer.Stemmer("porter")
        word = token
        if not word.isascii():
            word = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
        out = _stemmer.stemWord(word) if 3 <= len(word) <= 64 and word.isascii() else word
        _stem_cache[token] = out
    return out


def fts_tokens(indexed_text: str) -> list[str]:
    """Tokens of index_text(...) output as FTS5's porter unicode61 tokenizer makes them (approximately)."""
    return [_stem(t) for t in _WORD.findall(indexed_text.lower())]


def query_tokens(query: str) -> list[str]:
    """query_terms() fragments as bag-of-words tokens: a quoted word is its stem; a CJK phrase
    ("ab bc") is dropped (its bigrams are already terms); a prefix "c"* is the token c."""
    out: list[str] = []
    for frag in query_terms(query, fold_chinese):
        if frag.endswith("*"):
            out.append(frag[1:-2])
        elif " " in frag:
            continue
        else:
            out.extend(fts_tokens(frag[1:-1].replace('""', '"')))
    return out


# --- FTS5 exactly as the library index ----------------------------------------------------------

def build_fts(path: Path, records: list[tuple[str, str, str]]) -> dict:
    """records: (record_id, text, headings_text). Same DDL, tokenizer, pragmas, optimize."""
    path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    out = sqlite3.connect(path)
    out.execute("PRAGMA journal_mode=OFF")
    out.execute("PRAGMA synchronous=OFF")
    out.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE ids (rowid INTEGER PRIMARY KEY, book_id TEXT NOT NULL, record_id TEXT NOT NULL);
        CREATE VIRTUAL TABLE fts USING fts5(
            body, headings, content='', tokenize='porter unicode61 remove_diacritics 2');
        """
    )
    batch = 2000
    for s in range(0, len(records), batch):
        rows = records[s:s + batch]
        out.executemany("INSERT INTO ids VALUES (?, ?, ?)",
                        [(s + i + 1, f"book{(s + i) // 250000}", r[0]) for i, r in enumerate(rows)])
        out.executemany("INSERT INTO fts(rowid, body, headings) VALUES (?, ?, ?)",
                        [(s + i + 1, index_text(r[1], fold_chinese), index_text(r[2], fold_chinese))
                         for i, r in enumerate(rows)])
    out.execute("CREATE INDEX ids_book ON ids(book_id)")
    out.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    out.commit()
    out.close()
    return {"build_s": time.perf_counter() - t0, "disk_mb": path.stat().st_size / 1e6}


FTS_SQL = (f"SELECT ids.rowid, bm25(fts, 1.0, {HEADINGS_WEIGHT}) AS rank_score FROM fts "
           "JOIN ids ON ids.rowid = fts.rowid WHERE fts MATCH ? ORDER BY rank_score LIMIT ?")


def fts_search(con: sqlite3.Connection, query: str, k: int) -> list[int]:
    terms = query_terms(query, fold_chinese)
    if not terms:
        return []
    return [int(r[0]) - 1 for r in con.execute(FTS_SQL, (" OR ".join(terms), k)).fetchall()]


# --- sparse BM25 ----------------------------------------------------------------------------------

class Tokenized:
    def __init__(self, records: list[tuple[str, str, str]]) -> None:
        t0 = time.perf_counter()
        self.vocab: dict[str, int] = {}
        body_ids: list[list[int]] = []
        head_ids: list[list[int]] = []
        vocab = self.vocab
        for _, text, head in records:
            body_ids.append([vocab.setdefault(t, len(vocab)) for t in fts_tokens(index_text(text, fold_chinese))])
            head_ids.append([vocab.setdefault(t, len(vocab)) for t in fts_tokens(index_text(head, fold_chinese))])
        self.body = body_ids
        self.head = head_ids
        self.seconds = time.perf_counter() - t0

    def concatenated(self) -> list[list[int]]:
        return [b + h for b, h in zip(self.body, self.head, strict=False)]


def bm25s_index(tok: Tokenized, method: str, backend: str = "numpy"):
    import bm25s

    t0 = time.perf_counter()
    retriever = bm25s.BM25(method=method, k1=1.2, b=0.75, backend=backend)
    retriever.index((tok.concatenated(), tok.vocab), show_progress=False)
    return retriever, time.perf_counter() - t0


def fts5_exact_index(tok: Tokenized, backend: str = "numpy"):
    """FTS5's own bm25(fts, 1.0, 0.4) as a precomputed impact matrix in a bm25s retriever:
    tf = body tf + 0.4 * heading tf, D = body + heading tokens, idf = log((N-n+.5)/(n+.5)) floored at 1e-6."""
    import bm25s

    t0 = time.perf_counter()
    n = len(tok.body)
    rows_l, cols_l, tf_l = [], [], []
    lens = np.zeros(n, dtype=np.float64)
    for d, (b, h) in enumerate(zip(tok.body, tok.head, strict=False)):
        lens[d] = len(b) + len(h)
        ids = np.fromiter(b + h, dtype=np.int64, count=len(b) + len(h))
        w = np.concatenate([np.ones(len(b)), np.full(len(h), HEADINGS_WEIGHT)])
        uniq, inv = np.unique(ids, return_inverse=True)
        rows_l.append(uniq)
        tf_l.append(np.bincount(inv, weights=w))
        cols_l.append(np.full(len(uniq), d, dtype=np.int64))
    terms = np.concatenate(rows_l)
    docs = np.concatenate(cols_l)
    tf = np.concatenate(tf_l)
    del rows_l, cols_l, tf_l
    df = np.bincount(terms, minlength=len(tok.vocab)).astype(np.float64)
    idf = np.log((n - df + 0.5) / (df + 0.5))
    idf[idf <= 0] = 1e-6
    avgdl = lens.sum() / n
    k1, bb = 1.2, 0.75
    score = idf[terms] * (tf * (k1 + 1)) / (tf + k1 * (1 - bb + bb * lens[docs] / avgdl))
    order = np.lexsort((docs, terms))
    indptr = np.zeros(len(tok.vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(tok.vocab)), out=indptr[1:])
    retriever = bm25s.BM25(method="robertson", backend=backend)
    retriever.scores = {"data": score[order].astype(np.float32), "indices": docs[order].astype(np.int32),
                        "indptr": indptr, "num_docs": n}
    retriever.vocab_dict = dict(tok.vocab)
    retriever.nonoccurrence_array = None
    return retriever, time.perf_counter() - t0


class Sparse:
    """Query side over a bm25s impact matrix: bm25s's own scoring, or a np.bincount accumulation."""

    def __init__(self, retriever, vocab: dict[str, int], mode: str) -> None:
        self.r = retriever
        self.vocab = vocab
        self.mode = mode
        s = retriever.scores
        self.data, self.indices, self.indptr, self.n = s["data"], s["indices"], s["indptr"], s["num_docs"]

    def search(self, query: str, k: int) -> list[int]:
        ids = [self.vocab[t] for t in query_tokens(query) if t in self.vocab]
        if not ids:
            return []
        if self.mode == "bm25s":
            scores = self.r.get_scores_from_ids(ids)
        elif self.mode == "numba":  # the loop bm25s's numba backend compiles
            scores = _numba_scores()(self.data, self.indptr, self.indices, self.n, np.asarray(ids, dtype=np.int64))
        else:  # bincount: one pass over the query's posting lists
            parts_i = [self.indices[self.indptr[i]:self.indptr[i + 1]] for i in ids]
            parts_d = [self.data[self.indptr[i]:self.indptr[i + 1]] for i in ids]
            idx = np.concatenate(parts_i)
            scores = np.bincount(idx, weights=np.concatenate(parts_d), minlength=self.n)
        k = min(k, self.n)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[scores[top] > 0]
        return top[np.lexsort((top, -scores[top]))].tolist()


_NUMBA = None


def _numba_scores():
    global _NUMBA
    if _NUMBA is None:
        from numba import njit

        @njit(cache=True)
        def scores_fn(data, indptr, indices, n, ids):
            out = np.zeros(n, dtype=np.float32)
            for t in ids:
                for j in range(indptr[t], indptr[t + 1]):
                    out[indices[j]] += data[j]
            return out

        _NUMBA = scores_fn
    return _NUMBA


def save_sparse(retriever, folder: Path) -> float:
    folder.mkdir(parents=True, exist_ok=True)
    retriever.save(str(folder))
    return sum(f.stat().st_size for f in folder.iterdir()) / 1e6


def load_sparse(folder: Path):
    import bm25s

    t0 = time.perf_counter()
    r = bm25s.BM25.load(str(folder), mmap=True)
    return r, time.perf_counter() - t0


# --- synthetic corpus and queries -------------------------------------------------------------------

def synthetic(count: int, stopwords: bool, seed: int = 7) -> list[tuple[str, str, str]]:
    from tests.support.package_builder import synthetic_records

    recs = synthetic_records(count, seed, cjk_share=0.0, words=40)
    out = []
    rng = np.random.default_rng(seed + 1)
    stop = np.asarray(STOP50)
    for r in recs:
        text = r.text
        if stopwords:
            # 10 stopwords, Zipf-ish (the commonest most often), mixed among the record's words
            words = text.split()
            picks = stop[np.minimum(rng.zipf(1.3, size=10) - 1, len(stop) - 1)]
            pos = rng.integers(0, len(words) + 1, size=10)
            for p, w in sorted(zip(pos.tolist(), picks.tolist(), strict=False), reverse=True):
                words.insert(p, w)
            text = " ".join(words)
        out.append((r.record_id, text, " ".join(r.headings)))
    return out


def synthetic_queries(records: list[tuple[str, str, str]], tok_df: dict[str, int], n: int, seed: int = 11) -> dict[str, list[str]]:
    """random: 3-12 words of one record; stop-mixed: the same with 1-4 stopwords in; common: 3-12 of
    the 60 most frequent non-stopword words; all-stop: 2-5 stopwords only (query_terms keeps them)."""
    rng = np.random.default_rng(seed)
    common = [w for w, _ in sorted(tok_df.items(), key=lambda kv: -kv[1]) if w not in STOPWORDS and w.isalpha()][:60]
    out: dict[str, list[str]] = {"random": [], "stop-mixed": [], "common": [], "all-stop": []}
    for _ in range(n):
        words = [w.strip(".").lower() for w in records[int(rng.integers(len(records)))][1].split()
                 if w.strip(".").lower() not in STOPWORDS]
        size = int(rng.integers(3, 13))
        pick = [words[int(i)] for i in rng.choice(len(words), size=min(size, len(words)), replace=False)]
        out["random"].append(" ".join(pick))
        mixed = pick + [STOP50[int(i)] for i in rng.integers(0, 20, size=int(rng.integers(1, 5)))]
        rng.shuffle(mixed)
        out["stop-mixed"].append(" ".join(mixed))
        out["common"].append(" ".join(common[int(i)] for i in rng.choice(len(common), size=size, replace=False)))
    for _ in range(max(10, n // 10)):
        out["all-stop"].append(" ".join(STOP50[int(i)] for i in rng.integers(0, 20, size=int(rng.integers(2, 6)))))
    return out


def time_queries(fn, queries: list[str], k: int, warm: int = 3) -> tuple[list[list[int]], list[float]]:
    for q in queries[:warm]:
        fn(q, k)
    res, times = [], []
    for q in queries:
        t0 = time.perf_counter()
        res.append(fn(q, k))
        times.append((time.perf_counter() - t0) * 1000)
    return res, times


def overlap(a: list[list[int]], b: list[list[int]], k: int = 10) -> float:
    vals = [len(set(x[:k]) & set(y[:k])) / max(1, min(k, len(x), len(y))) for x, y in zip(a, b, strict=False) if x or y]
    return float(np.mean(vals)) if vals else float("nan")


def cmd_lexical_synth(args: argparse.Namespace) -> None:
    rows = []
    WORK.mkdir(parents=True, exist_ok=True)
    for stop in args.stopwords:
        for size in args.sizes:
            t0 = time.perf_counter()
            records = synthetic(size, bool(stop))
            gen_s = time.perf_counter() - t0
            tag = f"{size}-{'stop' if stop else 'nostop'}"
            fts_path = WORK / f"fts-{tag}.sqlite"
            built = build_fts(fts_path, records)
            rows.append(emit("fts_build", size=size, stopwords=bool(stop), gen_s=gen_s, **built))
            tok = Tokenized(records)
            df: dict[str, int] = {}
            inv = {v: k for k, v in tok.vocab.items()}
            counts = np.bincount(np.fromiter((i for b in tok.body for i in set(b)), dtype=np.int64),
                                 minlength=len(tok.vocab))
            for i in np.argsort(-counts)[:200]:
                df[inv[int(i)]] = int(counts[i])
            queries = synthetic_queries(records, df, args.queries)
            nnz_words = sum(len(b) + len(h) for b, h in zip(tok.body, tok.head, strict=False))
            rows.append(emit("tokenize", size=size, stopwords=bool(stop), seconds=tok.seconds,
                             vocab=len(tok.vocab), tokens=nnz_words))
            del records
            gc.collect()
            con = sqlite3.connect(f"file:{fts_path}?mode=ro", uri=True, check_same_thread=False)
            t0 = time.perf_counter()
            con.execute("SELECT count(*) FROM ids").fetchone()
            fts_results: dict[str, list[list[int]]] = {}
            for qset, qs in queries.items():
                qs_f = qs if size <= 200_000 else qs[: args.fts_queries_1m]
                res, times = time_queries(lambda q, k, con=con: fts_search(con, q, k), qs_f, 50)
                fts_results[qset] = res
                rows.append(emit("query", engine="fts5", size=size, stopwords=bool(stop), qset=qset,
                                 n=len(qs_f), p50_ms=pct(times, 50), p95_ms=pct(times, 95)))
            con.close()
            variants = [(m, None) for m in args.methods] + [("fts5-exact", None)]
            for method, _ in variants:
                if method == "fts5-exact":
                    retr, bsec = fts5_exact_index(tok)
                else:
                    retr, bsec = bm25s_index(tok, method)
                folder = WORK / f"bm25s-{tag}-{method}"
                disk = save_sparse(retr, folder)
                nnz = len(retr.scores["data"])
                del retr
                gc.collect()
                retr, load_s = load_sparse(folder)
                rows.append(emit("bm25s_build", size=size, stopwords=bool(stop), method=method,
                                 build_s=bsec + tok.seconds, index_s=bsec, disk_mb=disk, nnz=nnz,
                                 load_mmap_s=load_s, rss_peak_mb=rss_mb()))
                for mode in args.modes:
                    sp = Sparse(retr, retr.vocab_dict, mode)
                    for qset, qs in queries.items():
                        res, times = time_queries(sp.search, qs, 50)
                        n_cmp = len(fts_results[qset])
                        rows.append(emit("query", engine=f"bm25s-{method}", mode=mode, size=size,
                                         stopwords=bool(stop), qset=qset, n=len(qs), p50_ms=pct(times, 50),
                                         p95_ms=pct(times, 95),
                                         overlap10_vs_fts5=overlap(res[:n_cmp], fts_results[qset], 10)))
                del retr, sp
                gc.collect()
            del tok
            gc.collect()
            for f in WORK.glob(f"bm25s-{tag}-*"):
                for g in f.iterdir():
                    g.unlink()
                f.rmdir()
            if not args.keep:
                fts_path.unlink(missing_ok=True)
    write(f"lexical-synth-{int(time.time())}.json", rows)


# --- eval-set quality ------------------------------------------------------------------------------

def ndcg10(ranked: list[str], judged: dict[str, float]) -> float:
    dcg = sum(judged.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(judged.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def cmd_lexical_eval(args: argparse.Namespace) -> None:
    from tools.eval.eval_sets import SET_NAMES, load_set

    rows = []
    WORK.mkdir(parents=True, exist_ok=True)
    for name in SET_NAMES:
        es = load_set(name)
        split = "test"
        docs = es.book_docs(split)
        records = [(d["_id"], d["text"], d["title"]) for d in docs]  # headings_text([title]) == title
        questions = es.questions(split)
        fts_path = WORK / f"eval-{name}.sqlite"
        build_fts(fts_path, records)
        con = sqlite3.connect(f"file:{fts_path}?mode=ro", uri=True)
        runs: dict[str, list[list[int]]] = {"fts5": [fts_search(con, q, 10) for _, q, _ in questions]}
        con.close()
        tok = Tokenized(records)
        for method in args.methods:
            retr, _ = bm25s_index(tok, method)
            sp = Sparse(retr, retr.vocab_dict, "bincount")
            runs[f"bm25s-{method}"] = [sp.search(q, 10) for _, q, _ in questions]
        retr, _ = fts5_exact_index(tok)
        sp = Sparse(retr, retr.vocab_dict, "bincount")
        runs["fts5-exact-impacts"] = [sp.search(q, 10) for _, q, _ in questions]
        for engine, res in runs.items():
            score = float(np.mean([ndcg10([docs[i]["_id"] for i in r], judged)
                                   for r, (_, _, judged) in zip(res, questions, strict=False)]))
            rows.append(emit("eval", set=name, split=split, docs=len(docs), queries=len(questions), engine=engine,
                             ndcg10=score, overlap10_vs_fts5=overlap(res, runs["fts5"], 10)))
    summary: dict[str, list[float]] = {}
    for r in rows:
        summary.setdefault(r["engine"], []).append(r["ndcg10"])
    for engine, vals in summary.items():
        rows.append(emit("eval_mean", engine=engine, mean_ndcg10=float(np.mean(vals))))
    write(f"lexical-eval-{int(time.time())}.json", rows)


# --- vectors ----------------------------------------------------------------------------------------

def real_vectors(per_set: int) -> tuple[np.ndarray, list[tuple[str, str]], np.ndarray, list[tuple[str, dict]]]:
    """The eval sets' real MiniLM document vectors (row -> (set, doc id)) and up to per_set test
    queries per set from the query-vector cache (vector, (set, qrels))."""
    import hashlib

    from tools.eval.eval_sets import BENCH_VECTOR_SETS, doc_texts, load_set

    key = lambda t: hashlib.sha256(t.encode("utf-8")).hexdigest()  # noqa: E731 (eval_vectors._text_key)
    rng = np.random.default_rng(5)
    base, owners, qv, qinfo = [], [], [], []
    for name in BENCH_VECTOR_SETS:
        es = load_set(name)
        with np.load(ROOT / "eval" / "vectors" / f"{name}.npz") as d:
            dkeys = d["keys"].tolist()
            dvec = np.asarray(d["vectors"], dtype=np.float32)
        by_key = {key(t): doc["_id"] for t, doc in zip(doc_texts(es.docs), es.docs, strict=False)}
        base.append(dvec)
        owners += [(name, by_key.get(k, "?")) for k in dkeys]
        with np.load(ROOT / ".eval" / "cache" / f"{name}-test-queries.npz") as d:
            qpos = {k: i for i, k in enumerate(d["keys"].tolist())}
            qvec = np.asarray(d["vectors"], dtype=np.float32)
        questions = [(qpos[key(text)], judged) for _, text, judged in es.questions("test") if key(text) in qpos]
        for i in rng.choice(len(questions), size=min(per_set, len(questions)), replace=False):
            qv.append(qvec[questions[int(i)][0]])
            qinfo.append((name, questions[int(i)][1]))
    b = np.concatenate(base)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    q = np.stack(qv)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return b, owners, q, qinfo


def vec_ndcg(found: list[np.ndarray], owners: list[tuple[str, str]], qinfo: list[tuple[str, dict]]) -> float:
    """nDCG@10 of the real eval documents inside the synthetic haystack (synthetic rows never relevant)."""
    vals = []
    for f, (name, judged) in zip(found, qinfo, strict=False):
        ranked = [owners[i][1] if i < len(owners) and owners[i][0] == name else "-" for i in f[:10].tolist()]
        vals.append(ndcg10(ranked, judged))
    return float(np.mean(vals))


def synth_vectors(base: np.ndarray, n: int, seed: int = 3, sigma: float = 0.02, mix: str = "pairs") -> np.ndarray:
    """n vectors, each a mix of two real document vectors (weight 0.6-1.0 on the first) plus
    Gaussian noise of sigma per dimension (norm ~0.39), renormalized. The first len(base) are the
    real vectors themselves. mix="triples": Dirichlet(1,1,1) weights over three random real
    vectors (no dominant parent: far less clustered)."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, base.shape[1]), dtype=np.float32)
    m = min(n, len(base))
    out[:m] = base[:m]
    step = 100_000
    for s in range(m, n, step):
        e = min(n, s + step)
        i = rng.integers(0, len(base), size=e - s)
        j = rng.integers(0, len(base), size=e - s)
        a = rng.uniform(0.6, 1.0, size=(e - s, 1)).astype(np.float32)
        if mix == "triples":
            w = rng.dirichlet([1.0, 1.0, 1.0], size=e - s).astype(np.float32)
            k = rng.integers(0, len(base), size=e - s)
            v = w[:, :1] * base[i] + w[:, 1:2] * base[j] + w[:, 2:] * base[k]
        else:
            v = a * base[i] + (1 - a) * base[j]
        v += rng.normal(0, sigma, size=(e - s, base.shape[1])).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        out[s:e] = v
    return out


def exact_topk(x: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(q), k), dtype=np.int64)
    for s in range(0, len(q), 64):
        sims = q[s:s + 64] @ x.T
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(sims, part, 1), axis=1)
        out[s:s + 64] = np.take_along_axis(part, order, 1)
    return out


def rescore(x: np.ndarray, q: np.ndarray, cands: np.ndarray, k: int = 10) -> np.ndarray:
    cands = cands[cands >= 0]
    sims = x[cands] @ q
    top = np.argsort(-sims)[:k]
    return cands[top]


def recall(found: list[np.ndarray], truth: np.ndarray, k: int = 10) -> float:
    return float(np.mean([len(set(f[:k].tolist()) & set(t[:k].tolist())) / k for f, t in zip(found, truth, strict=False)]))


def dir_mb(path: Path) -> float:
    return path.stat().st_size / 1e6


def cmd_vectors(args: argparse.Namespace) -> None:
    import faiss
    from usearch.index import Index

    rows = []
    WORK.mkdir(parents=True, exist_ok=True)
    base, owners, qv, qinfo = real_vectors(args.queries // 5)
    rows.append(emit("vector_data", real_docs=len(base), used_queries=len(qv), mix=args.mix))
    for size in args.sizes:
        x = synth_vectors(base, size, mix=args.mix, sigma=args.sigma)
        raw_mb = x.nbytes / 1e6
        truth = exact_topk(x, qv, 10)
        exact_ndcg = vec_ndcg(list(truth), owners, qinfo)
        times = []
        for q in qv[:200]:
            t0 = time.perf_counter()
            sims = x @ q
            top = np.argpartition(-sims, 9)[:10]
            top[np.argsort(-sims[top])]
            times.append((time.perf_counter() - t0) * 1000)
        rows.append(emit("vector_query", engine="exact-numpy", size=size, p50_ms=pct(times, 50),
                         p95_ms=pct(times, 95), recall10=1.0, ndcg10=exact_ndcg, raw_mb=raw_mb))
        for cfg in args.usearch:
            dtype, conn, ea = cfg.split(":")
            if size > args.hnsw_max and cfg not in args.usearch_big:
                continue
            idx = Index(ndim=x.shape[1], metric="cos", dtype=dtype, connectivity=int(conn), expansion_add=int(ea))
            t0 = time.perf_counter()
            idx.add(np.arange(size, dtype=np.uint64), x, threads=2, log=False)
            build_s = time.perf_counter() - t0
            mem_mb = idx.memory_usage / 1e6
            path = WORK / f"usearch-{size}-{dtype}-{conn}-{ea}.usearch"
            idx.save(str(path))
            disk = dir_mb(path)
            del idx
            gc.collect()
            t0 = time.perf_counter()
            idx = Index.restore(str(path), view=True)
            load_s = time.perf_counter() - t0
            rows.append(emit("vector_build", engine="usearch", size=size, dtype=dtype, connectivity=int(conn),
                             expansion_add=int(ea), build_s=build_s, index_mem_mb=mem_mb, disk_mb=disk,
                             load_view_s=load_s, raw_mb=raw_mb))
            for es in args.expansion_search:
                idx.expansion_search = es
                for c in args.candidates:
                    if c > es:
                        continue
                    found, times, returned = [], [], []
                    for q in qv:
                        t0 = time.perf_counter()
                        m = idx.search(q, c, threads=1, exact=False)
                        returned.append(len(m.keys))
                        found.append(rescore(x, q, np.asarray(m.keys, dtype=np.int64)))
                        times.append((time.perf_counter() - t0) * 1000)
                    rows.append(emit("vector_query", engine="usearch", size=size, dtype=dtype,
                                     connectivity=int(conn), expansion_add=int(ea), expansion_search=es,
                                     candidates=c, p50_ms=pct(times[3:], 50), p95_ms=pct(times[3:], 95),
                                     returned=float(np.mean(returned)), recall10=recall(found, truth),
                                     ndcg10_delta=vec_ndcg(found, owners, qinfo) - exact_ndcg))
            del idx
            path.unlink(missing_ok=True)
            gc.collect()
        for cfg in args.faiss:
            kind, nlist = cfg.split(":")
            nlist = int(nlist)
            faiss.omp_set_num_threads(2)
            quant = faiss.IndexFlatIP(x.shape[1])
            if kind == "ivfflat":
                idx = faiss.IndexIVFFlat(quant, x.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
            else:
                idx = faiss.IndexIVFScalarQuantizer(quant, x.shape[1], nlist, faiss.ScalarQuantizer.QT_8bit,
                                                    faiss.METRIC_INNER_PRODUCT)
            t0 = time.perf_counter()
            train = x[np.random.default_rng(1).choice(size, size=min(size, nlist * 64), replace=False)]
            idx.train(train)
            idx.add(x)
            build_s = time.perf_counter() - t0
            path = WORK / f"faiss-{size}-{kind}-{nlist}.index"
            faiss.write_index(idx, str(path))
            disk = dir_mb(path)
            del idx
            gc.collect()
            t0 = time.perf_counter()
            idx = faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
            load_s = time.perf_counter() - t0
            rows.append(emit("vector_build", engine="faiss", size=size, ivf=kind, nlist=nlist, build_s=build_s,
                             disk_mb=disk, load_mmap_s=load_s, raw_mb=raw_mb))
            faiss.omp_set_num_threads(1)
            for nprobe in args.nprobe:
                idx.nprobe = nprobe
                for c in (args.candidates if kind != "ivfflat" else [10] + args.candidates[:1]):
                    found, times = [], []
                    for q in qv:
                        t0 = time.perf_counter()
                        _, ii = idx.search(q[None, :], c)
                        found.append(rescore(x, q, ii[0].astype(np.int64)) if kind != "ivfflat" or c > 10
                                     else ii[0].astype(np.int64))
                        times.append((time.perf_counter() - t0) * 1000)
                    rows.append(emit("vector_query", engine="faiss", size=size, ivf=kind, nlist=nlist,
                                     nprobe=nprobe, candidates=c, p50_ms=pct(times[3:], 50),
                                     p95_ms=pct(times[3:], 95), recall10=recall(found, truth),
                                     ndcg10_delta=vec_ndcg(found, owners, qinfo) - exact_ndcg))
            del idx
            path.unlink(missing_ok=True)
            gc.collect()
        del x
        gc.collect()
    for r in rows:
        r.setdefault("mix", args.mix if args.sigma == 0.02 else f"{args.mix} sigma={args.sigma}")
    write(f"vectors-{args.mix}-{args.sigma}-{int(time.time())}.json", rows)


def cmd_report(args: argparse.Namespace) -> None:
    """Markdown tables from every .bench/scale_study/*.json."""
    rows = [r for f in sorted(OUT.glob("*.json")) for r in json.loads(f.read_text(encoding="utf-8"))]
    print("| size | stop | engine | mode | random | stop-mixed | common | all-stop | overlap@10 random/common/all-stop |")
    print("|---|---|---|---|---|---|---|---|---|")
    groups: dict[tuple, dict[str, dict]] = {}
    for r in rows:
        if r["kind"] == "query":
            groups.setdefault((r["size"], r["stopwords"], r["engine"], r.get("mode", "")), {})[r["qset"]] = r
    for (size, stop, engine, mode), g in groups.items():
        cell = lambda q, g=g: f"{g[q]['p50_ms']:.1f} / {g[q]['p95_ms']:.1f}" if q in g else "-"  # noqa: E731
        ov = "/".join(f"{g[q].get('overlap10_vs_fts5') or 1:.3f}" for q in ("random", "common", "all-stop") if q in g)
        print(f"| {size} | {int(stop)} | {engine} | {mode} | {cell('random')} | {cell('stop-mixed')} | "
              f"{cell('common')} | {cell('all-stop')} | {ov} |")
    print()
    for r in rows:
        if r["kind"] in ("fts_build", "bm25s_build", "tokenize", "vector_build", "eval_mean", "vector_data"):
            print("-", json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}))
    print()
    print("| size | data | engine | config | search | C | p50 ms | p95 ms | recall@10 | nDCG@10 delta |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if r["kind"] == "vector_query":
            if r["engine"] == "usearch":
                cfg, srch = f"{r['dtype']} M={r['connectivity']} ef_add={r['expansion_add']}", f"ef={r['expansion_search']}"
            elif r["engine"] == "faiss":
                cfg, srch = f"{r['ivf']} nlist={r['nlist']}", f"nprobe={r['nprobe']}"
            else:
                cfg, srch = "float32 matvec, 1 BLAS thread", ""
            print(f"| {r['size']} | {r.get('mix', 'pairs')} | {r['engine']} | {cfg} | {srch} | {r.get('candidates', '')} | {r['p50_ms']:.2f} | "
                  f"{r['p95_ms']:.2f} | {r['recall10']:.4f} | {r.get('ndcg10_delta', 0):+.4f} |")


def write(name: str, rows: list[dict]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT / name}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("lexical-synth")
    a.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    a.add_argument("--stopwords", type=int, nargs="+", default=[1, 0], help="1: 10 stopwords mixed into each record")
    a.add_argument("--queries", type=int, default=200)
    a.add_argument("--fts-queries-1m", type=int, default=60, help="FTS5 queries per set above 200k records")
    a.add_argument("--methods", nargs="+", default=["lucene", "robertson", "bm25+"])
    a.add_argument("--modes", nargs="+", default=["bm25s", "bincount", "numba"])
    a.add_argument("--keep", action="store_true")
    b = sub.add_parser("lexical-eval")
    b.add_argument("--methods", nargs="+", default=["lucene", "robertson", "bm25+"])
    c = sub.add_parser("vectors")
    c.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    c.add_argument("--queries", type=int, default=500)
    c.add_argument("--mix", choices=["pairs", "triples"], default="pairs", help="how real vectors are replicated")
    c.add_argument("--sigma", type=float, default=0.02, help="Gaussian noise per dimension added to each replica")
    c.add_argument("--usearch", nargs="*", default=["f32:16:128", "f16:16:128", "i8:16:128", "i8:32:128", "i8:16:64"],
                   help="dtype:connectivity:expansion_add")
    c.add_argument("--usearch-big", nargs="*", default=["i8:16:64"], help="configs also built above --hnsw-max")
    c.add_argument("--hnsw-max", type=int, default=300_000)
    c.add_argument("--expansion-search", type=int, nargs="+", default=[64, 128, 200])
    c.add_argument("--candidates", type=int, nargs="+", default=[50, 100, 200])
    c.add_argument("--faiss", nargs="*", default=["ivfflat:1024", "ivfsq8:1024"], help="kind:nlist")
    c.add_argument("--nprobe", type=int, nargs="+", default=[8, 16, 32, 64])
    sub.add_parser("report")
    args = ap.parse_args()
    {"lexical-synth": cmd_lexical_synth, "lexical-eval": cmd_lexical_eval, "vectors": cmd_vectors,
     "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
