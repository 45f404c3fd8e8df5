"""The two eval test books (tests/support/data/eval_books/*.json) as real packages with real MiniLM vectors.

Each JSON book holds chapters of short records of prose written for these tests (English;
Chinese in simplified and some traditional characters); `<name>.questions.jsonl` beside it
holds questions with the ids of the records that answer them: exact-keyword questions and
paraphrases that share few words with their record, so the vector channel matters.

`build_eval_book(name, dest)` writes the package with tests.support.package_builder.build_package,
encoding the records with the local numpy all-MiniLM-L6-v2 (LocalQueryEncoder), exactly as
a pipeline would. `eval_packages` is a session fixture that builds each book once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from .package_builder import RecordSpec, build_package

BOOKS_DIR = Path(__file__).resolve().parent / "data" / "eval_books"
BOOKS = ("english", "chinese")
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIMS = 384


def load_book(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((BOOKS_DIR / f"{name}.json").read_text(encoding="utf-8"))
    return data


def questions_path(name: str) -> Path:
    return BOOKS_DIR / f"{name}.questions.jsonl"


def records_of(book: dict[str, object]) -> list[RecordSpec]:
    out = []
    chapters = book["chapters"]
    assert isinstance(chapters, list)
    for index, chapter in enumerate(chapters):
        for rec in chapter["records"]:
            out.append(RecordSpec(rec["id"], rec["text"], [chapter["title"]], index))
    return out


def minilm_available() -> bool:
    from book_agent.domain.errors import BookAgentError
    from book_agent_adapters.encoders.local import find_model

    try:
        find_model(MODEL)
    except BookAgentError:
        return False
    return True


def minilm_encoder() -> Callable[[list[str]], np.ndarray]:
    from book_agent_adapters.encoders.local import LocalQueryEncoder

    encoder = LocalQueryEncoder(MODEL, DIMS, normalize=True)

    def encode(texts: list[str]) -> np.ndarray:
        # one text a call, as the example-package builder does: no padding effects
        return np.vstack([encoder.encode_batch([t]) for t in texts])

    return encode


def build_eval_book(name: str, dest: Path, encode: Callable[[list[str]], np.ndarray] | None = None,
                    languages: tuple[str, ...] | None = ("en",)) -> Path:
    """languages=None: the package declares none (the model's reach is then measured)."""
    book = load_book(name)
    return Path(build_package(
        dest,
        book_id=str(book["book_id"]),
        title=str(book["title"]),
        kind="epub",
        records=records_of(book),
        dims=DIMS,
        vectors=encode or minilm_encoder(),
        model=MODEL,
        provider="local",
        languages=list(languages) if languages is not None else None,
        language=str(book["language"]),
    ))


@pytest.fixture(scope="session")
def eval_packages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> package root, built once per session (needs the real MiniLM weights)."""
    from .parts import require_real_part

    require_real_part(minilm_available(), f"the {MODEL} weights")
    encode = minilm_encoder()
    root = tmp_path_factory.mktemp("eval-books")
    return {name: build_eval_book(name, root / name, encode) for name in BOOKS}
