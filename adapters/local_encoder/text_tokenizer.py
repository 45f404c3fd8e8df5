"""The model's own tokenizer (tokenizer.json via the `tokenizers` library), set up the way
sentence-transformers calls it: truncation at max_seq_length, no padding (we pad per batch).
A plain BERT tokenizer.json is served by wordpiece.FastWordPiece (same ids, faster to load)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from book_agent.domain.errors import QueryRuntimeError

from . import errors
from .st_config import ModelSpec, read_object
from .wordpiece import FastWordPiece

I64 = npt.NDArray[np.int64]


class TextTokenizer:
    def __init__(self, folder: Path, spec: ModelSpec) -> None:
        self.spec = spec
        self._folder = folder
        json_path = next((base / "tokenizer.json" for base in (spec.transformer_dir, folder)
                          if (base / "tokenizer.json").is_file()), None)
        # The plain BERT setup skips building the Rust WordPiece model (wordpiece.py).
        self._fast = FastWordPiece.from_file(json_path) if json_path is not None else None
        self._tok: Any = None
        self.path: Path = json_path if json_path is not None else folder / "tokenizer.json"
        if self._fast is None:
            self._full()

    def _full(self) -> Any:
        """The `tokenizers` Tokenizer, loaded on first need."""
        if self._tok is None:
            self.path, tok = _load(self._folder, self.spec)
            try:
                tok.no_padding()
                tok.enable_truncation(max_length=self.spec.max_seq_length)
            except Exception as exc:
                raise errors.error(
                    errors.MODEL_CORRUPT, f"Cannot configure the tokenizer: {exc}",
                    errors.REMEDIATION_CORRUPT, path=self.path,
                ) from exc
            self._tok = tok
        return self._tok

    def ids(self, texts: list[str]) -> list[list[int]]:
        if self.spec.do_lower_case:
            texts = [t.lower() for t in texts]
        try:
            out = self._encode(texts)
        except QueryRuntimeError:
            raise
        except Exception as exc:
            raise errors.error(
                errors.ENCODE_FAILED, f"The tokenizer failed: {exc}", path=self.path
            ) from exc
        for row in out:
            if row and max(row) >= self.spec.vocab_size:
                raise errors.error(
                    errors.MODEL_CORRUPT, "The tokenizer's vocabulary is larger than the model's.",
                    errors.REMEDIATION_CORRUPT, path=self.path, token_id=max(row),
                )
        return out

    def _encode(self, texts: list[str]) -> list[list[int]]:
        rows: list[list[int] | None] = [None] * len(texts)
        if self._fast is not None:
            rows = [self._fast.ids(t, self.spec.max_seq_length) for t in texts]
        rest = [i for i, row in enumerate(rows) if row is None]
        if rest:
            for i, encoding in zip(rest, self._full().encode_batch([texts[i] for i in rest]), strict=True):
                rows[i] = list(encoding.ids)
        return [row for row in rows if row is not None]

    def pad(self, rows: list[list[int]]) -> tuple[I64, I64]:
        """Right-padded ids and the attention mask, like the tokenizer's padding=True."""
        length = max(len(r) for r in rows)
        ids = np.full((len(rows), length), self.spec.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask


def _load(folder: Path, spec: ModelSpec) -> tuple[Path, Any]:
    from tokenizers import Tokenizer

    for base in (spec.transformer_dir, folder):
        path = base / "tokenizer.json"
        if path.is_file():
            try:
                return path, Tokenizer.from_file(str(path))
            except Exception as exc:
                raise errors.error(
                    errors.MODEL_CORRUPT, f"{path} is not a valid tokenizer: {exc}",
                    errors.REMEDIATION_CORRUPT, path=path,
                ) from exc
    vocab = spec.transformer_dir / "vocab.txt"
    if spec.model_type == "bert" and vocab.is_file():
        # Older exports ship only vocab.txt: rebuild HF's BertTokenizer from it.
        from tokenizers.implementations import BertWordPieceTokenizer  # type: ignore[attr-defined]

        config_path = spec.transformer_dir / "tokenizer_config.json"
        config = read_object(config_path) if config_path.is_file() else {}
        lower = bool(config.get("do_lower_case", True))
        return vocab, BertWordPieceTokenizer(str(vocab), lowercase=lower)
    raise errors.error(
        errors.MODEL_MISSING, f"The model folder {folder} has no tokenizer.json.",
        errors.REMEDIATION_MISSING, model_dir=folder, missing_files=["tokenizer.json"],
    )
