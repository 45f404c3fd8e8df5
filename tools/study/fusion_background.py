"""Issue 41: the vector channel's scale from the book's background, for MiniLM and multilingual-e5.

    .venv/bin/python tools/study/fusion_background.py --split dev --sets cmdd-im,pubmedqa,fairytaleqa,drcd

Reads the channel runs of `fusion_study.py collect` (MiniLM) and `fusion_study.py e5-runs` (the
same lexical runs, e5's vector channel), measures each query's background against the book's own
vectors exactly as the product does (book_agent_adapters/book/vectors/vector_background.py: the
query's cosines with an evenly spaced sample of the book's records), and scores the baselines and
the background-scaled fusion over a grid of its constants (nDCG@10). Choose on dev; report test.
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
import numpy as np

from book_agent.domain.search.fusion import (
    RAGFLOW_KEYWORD_SHARE,
    ChannelRanking,
    ScoredChannel,
    fuse,
    fuse_minmax,
    fuse_scores,
)
from book_agent.domain.search.metrics import ndcg_at_k
from book_agent.domain.search.vector_background import Background, z_confidence
from book_agent_adapters.bench import background_sample, query_background
from tools.eval.eval_sets import WORK_DIR, document_vectors, load_set, query_vectors

DEPTH = 100
Run = dict[str, Any]
Method = Callable[[Run], list[str]]


def _vectors(name: str, split: str, model: str) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    eval_set = load_set(name)
    docs = eval_set.book_docs(split)
    if model == "e5":
        from tools.eval.eval_vectors_e5 import e5_document_vectors, e5_query_vectors

        matrix, queries = e5_document_vectors(eval_set, docs, False), e5_query_vectors(eval_set, split, False)
    else:
        matrix, queries = document_vectors(eval_set, docs, False), query_vectors(eval_set, split, progress=False)
    by_qid = {qid: i for i, (qid, _, _) in enumerate(eval_set.questions(split))}
    return np.asarray(matrix, np.float32), np.asarray(queries, np.float32), by_qid


def load_runs(name: str, split: str, model: str) -> list[Run]:
    """The runs of a set, split and model, each with its query's background."""
    label = f"{name}-e5-{split}" if model == "e5" else f"{name}-{split}"
    runs: list[Run] = json.loads((WORK_DIR / "runs" / f"{label}.json").read_text(encoding="utf-8"))
    matrix, queries, by_qid = _vectors(name, split, model)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms > 0, norms, 1)
    sample = background_sample(matrix)
    for run in runs:
        query = queries[by_qid[run["qid"]]]
        query = query / (np.linalg.norm(query) or 1.0)
        run["background"] = query_background(sample, query.astype(np.float32), matrix.shape[0])
        run["sample_min"] = float((sample @ query).min())
        if model == "e5":
            run["gate"] = 1.0
    return runs


def _pairs(run: Run, channel: str) -> list[tuple[str, float]]:
    return [(r, float(x)) for r, x in run[channel][:DEPTH]]


def p_confidence(best: float, background: Background) -> float:
    """Tried, not chosen: the chance that the best of `records` normal background draws scores
    below the best hit, Phi(z_best) ** records (saturates: noisy per query; lost on e5's dev set)."""
    import math

    upper = 0.5 * math.erfc((best - background.mean) / background.sd / math.sqrt(2.0))
    return math.exp(background.records * math.log1p(-upper)) if upper < 1.0 else 0.0


def hybrid(share: float = 0.5, floor: str | float = 3.0, weigh: str = "none", agreement: float = 0.1) -> Method:
    """The product's fusion, its vector channel measured from `floor` ("zero": the constant of
    before; a number k: the background's mean - k sd; "min": the sample's lowest) and weighted by
    `weigh` ("none"; "pvalue": Phi(z_best) ** records; "zratio": min(1, z_best / z_noise(records)))."""
    def method(run: Run) -> list[str]:
        lexical, vector = _pairs(run, "lexical"), _pairs(run, "vector")
        bg: Background | None = run.get("background")
        weight, low = share * run["gate"], 0.0
        if bg is not None and floor != "zero":
            low = run["sample_min"] if floor == "min" else bg.mean - float(floor) * bg.sd
        if bg is not None and vector and weigh == "pvalue":
            weight *= p_confidence(vector[0][1], bg)
        if bg is not None and vector and weigh == "zratio":
            weight *= z_confidence(vector[0][1], bg)
        return [h.record_id for h in fuse_scores([
            ScoredChannel("lexical", lexical, 1 - share, complete=len(run["lexical"]) < DEPTH),
            ScoredChannel("vector", vector, weight, floor=low, complete=len(run["vector"]) < DEPTH)],
            agreement=agreement)]
    return method


def plain_rrf(run: Run) -> list[str]:
    return [h.record_id for h in fuse([ChannelRanking("lexical", [r for r, _ in run["lexical"]]),
                                       ChannelRanking("vector", [r for r, _ in run["vector"]])])]


def ragflow(run: Run) -> list[str]:
    return [h.record_id for h in fuse_minmax([
        ScoredChannel("lexical", _pairs(run, "lexical"), RAGFLOW_KEYWORD_SHARE),
        ScoredChannel("vector", _pairs(run, "vector"), 1 - RAGFLOW_KEYWORD_SHARE)])]


def methods() -> dict[str, Method]:
    out: dict[str, Method] = {
        "lexical": lambda run: [r for r, _ in run["lexical"]],
        "vector": lambda run: [r for r, _ in run["vector"]],
        "plain-rrf k=60": plain_rrf, "ragflow-rule": ragflow,
        "before (floor 0, share 0.5)": hybrid(0.5, "zero", "none"),
    }
    for share in (0.4, 0.5, 0.55, 0.6):
        for floor in (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0):
            for weigh in ("none", "zratio", "pvalue"):
                if weigh == "pvalue" and (share != 0.5 or floor not in (0.0, 2.0, 3.0)):
                    continue
                out[f"bg k={floor} {weigh} share {share}"] = hybrid(share, floor, weigh)
    for agreement in (0.0, 0.2):
        out[f"bg k=2.0 zratio share 0.5 votes {agreement}"] = hybrid(0.5, 2.0, "zratio", agreement)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="cmdd-im,pubmedqa,fairytaleqa,drcd")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--models", default="minilm,e5")
    parser.add_argument("--only", default="", help="label prefixes to score besides the baselines")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table: dict[str, dict[str, float]] = {}
    columns: list[str] = []
    chosen = {k: m for k, m in methods().items()
              if not args.only or not k.startswith("bg") or k.startswith(tuple(args.only.split(",")))}
    for model in args.models.split(","):
        for name in args.sets.split(","):
            try:
                runs = load_runs(name, args.split, model)
            except (FileNotFoundError, SystemExit) as exc:
                print(f"{name} {args.split} {model}: no runs ({exc})", file=sys.stderr)
                continue
            column = f"{name}/{model}"
            columns.append(column)
            for label, method in chosen.items():
                scores = [ndcg_at_k(method(run), run["relevant"], 10) for run in runs]
                table.setdefault(label, {})[column] = round(statistics.fmean(scores), 4)
    if args.json:
        print(json.dumps(table, indent=1))
        return
    print(f"{'method':40s} " + " ".join(f"{c:>18s}" for c in columns) + f" {'mean':>8s}")
    for label, row in table.items():
        print(f"{label:40s} " + " ".join(f"{row.get(c, float('nan')):18.4f}" for c in columns)
              + f" {statistics.fmean(row.values()):8.4f}")


if __name__ == "__main__":
    main()
