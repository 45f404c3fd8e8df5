"""The model's own tokenizer (tokenizer.json via the `tokenizers` library), set up the way
sentence-transformers calls it: truncation at max_seq_length, no padding (we pad per batch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from . import errors
from .st_config import ModelSpec, read_object

I64 = npt.NDArray[np.int64]


class TextTokenizer:
    def __init__(self, folder: Path, spec: ModelSpec, cache_dir: Path | None = None) -> None:
        """`cache_dir`: where a faster-loading form of tokenizer.json is kept (tokenizer_cache.py)."""
        self.spec = spec
        self.path, self._tok = _load(folder, spec, cache_dir)
        try:
            self._tok.no_padding()
            self._tok.enable_truncation(max_length=spec.max_seq_length)
        except Exception as exc:
            raise errors.error(
                errors.MODEL_CORRUPT, f"Cannot configure the tokenizer: {exc}",
                errors.REMEDIATION_CORRUPT, path=self.path,
            ) from exc

    def ids(self, texts: list[str]) -> list[list[int]]:
        if self.spec.do_lower_case:
            texts = [t.lower() for t in texts]
        try:
            encodings = self._tok.encode_batch(texts)
        except Exception as exc:
            raise errors.error(
                errors.ENCODE_FAILED, f"The tokenizer failed: {exc}", path=self.path
            ) from exc
        out = [list(e.ids) for e in encodings]
        for row in out:
            if row and max(row) >= self.spec.vocab_size:
                raise errors.error(
                    errors.MODEL_CORRUPT, "The tokenizer's vocabulary is larger than the model's.",
                    errors.REMEDIATION_CORRUPT, path=self.path, token_id=max(row),
                )
        return out

    def vocabulary(self) -> list[str]:
        return list(self._tok.get_vocab())

    def pad(self, rows: list[list[int]]) -> tuple[I64, I64]:
        """Right-padded ids and the attention mask, like the tokenizer's padding=True."""
        length = max(len(r) for r in rows)
        ids = np.full((len(rows), length), self.spec.pad_token_id, dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return ids, mask


def _load(folder: Path, spec: ModelSpec, cache_dir: Path | None = None) -> tuple[Path, Any]:
    from .tokenizer_cache import load_tokenizer

    for base in (spec.transformer_dir, folder):
        path = base / "tokenizer.json"
        if path.is_file():
            try:
                return path, load_tokenizer(path, cache_dir)
            except Exception as exc:
                raise errors.error(
                    errors.MODEL_CORRUPT, f"{path} is not a valid tokenizer: {exc}",
                    errors.REMEDIATION_CORRUPT, path=path,
                ) from exc
    vocab = spec.transformer_dir / "vocab.txt"
    if spec.model_type == "bert" and vocab.is_file():
        # Older exports ship only vocab.txt: rebuild HF's BertTokenizer from it.
        from tokenizers.implementations import BertWordPieceTokenizer  # type: ignore[attr-defined]
        from tokenizers.models import WordPiece

        config_path = spec.transformer_dir / "tokenizer_config.json"
        config = read_object(config_path) if config_path.is_file() else {}
        lower = bool(config.get("do_lower_case", True))
        # the vocabulary read first: a file path given to WordPiece is deprecated (a warning
        # before tokenizers 0.23)
        return vocab, BertWordPieceTokenizer(WordPiece.read_file(str(vocab)), lowercase=lower)
    raise errors.error(
        errors.MODEL_MISSING, f"The model folder {folder} has no tokenizer.json.",
        errors.REMEDIATION_MISSING, model_dir=folder, missing_files=["tokenizer.json"],
    )
