"""BERT WordPiece tokenisation without building `tokenizers`' WordPiece model.

`Tokenizer.from_file` spends most of its ~20-40 ms building the Rust model's 30,000-entry
vocabulary, in every process, for a query of a dozen words. Here tokenizer.json is read with
the json module, normalisation and pre-tokenisation still run in `tokenizers` itself (its
BertNormalizer and BertPreTokenizer, built from the file's own settings: exact), and only
the WordPiece step (greedy longest-match-first, a few lines) runs in Python.

Used only for the plain BERT setup (BertNormalizer, BertPreTokenizer, WordPiece, a
[CLS] A [SEP] template); anything else, and any text that holds an added token such as
"[MASK]" (the Rust tokenizer matches those before normalising), goes to the full tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class FastWordPiece:
    def __init__(self, data: dict[str, Any]) -> None:
        """`data`: a parsed tokenizer.json already checked by `from_file`."""
        from tokenizers import normalizers, pre_tokenizers

        model, norm = data["model"], data["normalizer"]
        self.vocab: dict[str, int] = model["vocab"]
        self.unk_id = self.vocab[model["unk_token"]]
        self.prefix = str(model["continuing_subword_prefix"])
        self.max_chars = int(model["max_input_chars_per_word"])
        self.normalizer = normalizers.BertNormalizer(
            clean_text=norm["clean_text"], handle_chinese_chars=norm["handle_chinese_chars"],
            strip_accents=norm["strip_accents"], lowercase=norm["lowercase"])
        self.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        specials = data["post_processor"]["special_tokens"]
        single = data["post_processor"]["single"]
        self.cls_id = int(specials[single[0]["SpecialToken"]["id"]]["ids"][0])
        self.sep_id = int(specials[single[2]["SpecialToken"]["id"]]["ids"][0])
        self.added = [str(t["content"]) for t in data.get("added_tokens") or []]

    @classmethod
    def from_file(cls, path: Path) -> FastWordPiece | None:
        """None when the file is not the plain BERT setup (the caller uses `tokenizers`)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not _plain_bert(data):
                return None
            return cls(data)
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None  # the full tokenizer will load it, or say what is wrong

    def ids(self, text: str, max_length: int) -> list[int] | None:
        """[CLS] pieces [SEP], truncated to max_length; None when `text` holds an added token."""
        if any(token in text for token in self.added):
            return None
        pieces: list[int] = []
        for word, _ in self.pre_tokenizer.pre_tokenize_str(self.normalizer.normalize_str(text)):
            pieces.extend(self._word(word))
        return [self.cls_id, *pieces[: max(0, max_length - 2)], self.sep_id]

    def _word(self, word: str) -> list[int]:
        """tokenizers' WordPiece.tokenize: longest vocabulary match first, `##` inside words,
        the unknown token for a word that does not split completely or is too long."""
        if len(word) > self.max_chars:
            return [self.unk_id]
        out: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return [self.unk_id]
            out.append(found)
            start = end
        return out


def _plain_bert(data: Any) -> bool:
    model = data.get("model") or {}
    norm = data.get("normalizer") or {}
    post = data.get("post_processor") or {}
    single = post.get("single") or []
    return (
        model.get("type") == "WordPiece" and isinstance(model.get("vocab"), dict)
        and model.get("unk_token") in model["vocab"]
        and norm.get("type") == "BertNormalizer"
        and (data.get("pre_tokenizer") or {}).get("type") == "BertPreTokenizer"
        and post.get("type") == "TemplateProcessing" and len(single) == 3
        and "SpecialToken" in single[0] and "Sequence" in single[1] and "SpecialToken" in single[2]
        and all(t.get("special") for t in data.get("added_tokens") or [])
    )
