"""Chinese word boundaries for the lexical channel's queries (jieba), loaded only when needed.

The index stays character bigrams (book_agent.domain.search.lexical_text); a query's CJK run is cut
into words here so that the bigrams inside a word count more than those that straddle two
(`高血压与哪些因素有关`: 高血 血压 因素 有关 inside words, 压与 与哪 些因 素有 across). Chosen on
the dev splits (contracts/search.md, "Word segmentation").

jieba builds its prefix dictionary from a 5 MB word list (~0.6 s), and its own cache file (a
marshalled dict, in the system temp dir) still takes ~0.7 s to read: each cold CLI process paid
it. Here the dictionary is written once to the data dir's cache folder (`use_cache_dir`, set by
the composition root) as a sorted table that opens in milliseconds (cjk_prefix_dict.py), and
cut by a port of jieba's own algorithm (cjk_segmenter.py: jieba itself is imported only to make
the table; the same words); with no cache dir set, or a data dir that does not exist, jieba
builds its dictionary in memory and nothing is written at all. English and vector-only searches
load none of it.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from book_agent_adapters.text.cjk_segmenter import Segmenter

CACHE_FOLDER = "jieba"  # under data_dir/cache
TABLE_FILE = "prefix-dict.v1.bin"  # cjk_prefix_dict.py's table of jieba's dictionary
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
            folder = _cache_dir
            table = _table(folder / TABLE_FILE) if folder is not None and _writable(folder) else None
            _tokenizer = table if table is not None else _in_memory()
    return _tokenizer


def _import_jieba() -> Any:
    with warnings.catch_warnings():  # jieba probes pkg_resources, deprecated in setuptools
        warnings.simplefilter("ignore")
        import jieba

    import logging  # with jieba only

    logging.getLogger("jieba").setLevel(logging.WARNING)  # its progress lines go to stderr
    return jieba


def _in_memory() -> Any:
    """jieba itself, its dictionary built in memory and written nowhere (jieba would use the
    system temp dir)."""
    tokenizer = _import_jieba().Tokenizer()
    tokenizer.FREQ, tokenizer.total = tokenizer.gen_pfdict(tokenizer.get_dict_file())
    tokenizer.initialized = True
    return tokenizer


def _table(path: Path) -> Segmenter | None:
    """The segmenter over the table file at path, made there first (with jieba) when missing or
    stale; None when jieba is not installed where expected or the file cannot be written."""
    from book_agent_adapters.text.cjk_prefix_dict import PrefixDict, source_key, write_table
    from book_agent_adapters.text.cjk_segmenter import Segmenter  # with a CJK query only

    spec = importlib.util.find_spec("jieba")  # finds jieba's folder without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        key = source_key(Path(spec.submodule_search_locations[0]))
    except OSError:
        return None
    for attempt in range(2):
        try:
            table = PrefixDict(path, key)
            return Segmenter(table, table.total, table.hmm_tables)
        except (OSError, ValueError):
            if attempt:
                return None
        jieba = _import_jieba()
        freq, total = jieba.Tokenizer.gen_pfdict(jieba.Tokenizer().get_dict_file())
        hmm = (jieba.finalseg.start_P, jieba.finalseg.trans_P, jieba.finalseg.emit_P)
        try:
            write_table(path, freq, total, key, hmm)
        except OSError:
            return None
    return None


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
