"""Chinese word boundaries for the lexical channel's queries (jieba), loaded only when needed.

The index stays character bigrams (book_agent.domain.search.lexical_text); a query's CJK run is cut
into words here so that the bigrams inside a word count more than those that straddle two
(`高血压与哪些因素有关`: 高血 血压 因素 有关 inside words, 压与 与哪 些因 素有 across). Chosen on
the dev splits (contracts/search.md, "Word segmentation").

jieba builds its prefix dictionary from a 5 MB word list on first use (~1-3 s), then keeps it
as a cache file; by default that file goes to the system temp dir. Here it goes to the data
dir's cache folder (`use_cache_dir`, set by the composition root); with no cache dir set, or a
data dir that does not exist, nothing is written at all. jieba is imported on the first query that holds a CJK run: English
and vector-only searches never load it.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

CACHE_FOLDER = "jieba"  # under data_dir/cache
_lock = threading.Lock()
_tokenizer: Any = None
_cache_dir: Path | None = None


def use_cache_dir(cache_dir: Path | None) -> None:
    """Where jieba's dictionary cache lives (data_dir/cache/jieba), for a load still to come."""
    global _cache_dir
    _cache_dir = None if cache_dir is None else Path(cache_dir) / CACHE_FOLDER


def _load() -> Any:
    global _tokenizer
    with _lock:
        if _tokenizer is None:
            with warnings.catch_warnings():  # jieba probes pkg_resources, deprecated in setuptools
                warnings.simplefilter("ignore")
                import jieba

            import logging  # with jieba only

            logging.getLogger("jieba").setLevel(logging.WARNING)  # its progress lines go to stderr
            tokenizer = jieba.Tokenizer()
            if _cache_dir is not None and _writable(_cache_dir):
                tokenizer.tmp_dir = str(_cache_dir)
                tokenizer.initialize()
            else:  # no cache dir: build in memory, write nowhere (jieba would use the temp dir)
                tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
                tokenizer.initialized = True
            _tokenizer = tokenizer
    return _tokenizer


def _writable(folder: Path) -> bool:
    # folder is data_dir/cache/jieba: a cache may add its own folders to a data dir, never make
    # the data dir itself (an agent over a data dir that does not exist, as a test's, writes nothing)
    if not folder.parent.parent.is_dir():
        return False
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return folder.is_dir() and os.access(folder, os.W_OK)  # else jieba logs a failed dump on stderr


def segment_chinese(run: str) -> list[str]:
    """A run of CJK characters (already folded to simplified) as jieba's words, in order;
    their lengths add up to the run's. jieba's accurate mode with its HMM for unknown words."""
    words: list[str] = _load().lcut(run)
    return words
