"""Text preparation for the lexical channel: CJK bigrams, English stemming, safe queries.

SQLite's unicode61 tokenizer does not segment Chinese or Japanese: a whole run of
ideographs becomes one token, so a two-character word inside a sentence is never found,
and a `\\w+` regex has the same flaw. We segment CJK ourselves before FTS5 sees the text:

- a run of CJK characters c1 c2 ... cn becomes the overlapping bigrams c1c2 c2c3 ...
  c(n-1)cn plus the last character alone (so every character starts some token);
- a one-character query term becomes the prefix query `"c"*`, which matches every bigram
  starting with c and the trailing unigram: a single-character search still finds it;
- a longer query run becomes its bigrams, OR-ed (see `_cjk_fragments`).

Bigrams over a dictionary segmenter: no dictionary to ship or get wrong for classical or
technical text, recall for any word length (a longer word is the AND of its bigrams, and
a phrase query keeps them adjacent), and the same code for Chinese, Japanese kana/kanji
and Korean. Trigram tokenizers miss two-character words, the most common Chinese word
length. A dictionary segmenter does weigh the *query* (`query_terms(..., segment=)`: a bigram
inside one of its words counts twice), where a wrong cut costs a weight, never a match.
Non-CJK text goes to FTS5's `porter unicode61` tokenizer, which stems English
(running -> run) and folds case and diacritics.

Index and queries may go through the same `fold` (the adapter folds traditional Chinese to
simplified with OpenCC), so 用间 finds 用間 and 战争 finds 戰爭.

Queries are never parsed as FTS5 syntax: terms are extracted here and each is quoted, so
quotes, `*`, NEAR, AND, `-`, `:` and parentheses in user text are just text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

from book_agent.lazy import LazyPattern

TOKENIZER_VERSION = "cjk-bigram-porter-t2s-v2"

Fold = Callable[[str], str]  # e.g. traditional -> simplified Chinese, applied to index and query alike
Segment = Callable[[str], list[str]]  # a CJK run -> its words, in order (a word segmenter, e.g. jieba)
# Distinct fragments kept, the first in the query. 64 cut real questions (2 of cacm's 52
# requests, 174 of cmdd-im's 400 Chinese questions have more): 256 gained cmdd-im dev
# 0.2686 -> 0.2801 nDCG@10 and changed nothing elsewhere; a 4,000-character query stays
# ~0.2 s on a 2k-record book (contracts/search.md).
MAX_QUERY_TERMS = 256
# How often a repeated content word counts. Chosen on dev: repeats (8 or 2) raised the
# lexical channel on the long requests (cacm 0.4845 -> 0.4915, cfc 0.5743 -> 0.5773) but
# lowered the hybrid (cacm 0.5716 -> 0.5486), and still do with the rank votes of issue 28
# (cacm dev 0.5740 -> 0.5615 / 0.5619, below plain RRF; contracts/search.md). The counting
# itself (library index = FTS5) is in place for a fusion that can use it.
MAX_TERM_REPEATS = 1
# How often a query bigram that lies inside one of the segmenter's words counts (a bigram
# that straddles two words counts once): `高血压与哪些因素有关` sends 高血 血压 因素 有关 twice,
# 压与 与哪 些因 素有 once. Chosen on dev (issue 28): 2 raised cmdd-im dev 0.2801 -> 0.2997 and
# drcd dev 0.9549 -> 0.9565 nDCG@10; 3 lost on drcd (0.9539). The index is unchanged: only
# the query's weights move, so the library index and Milvus rank as the book does.
IN_WORD_BIGRAM_REPEATS = 2
# Language tags (their first subtag) of books whose queries the word segmenter reads: a
# served Chinese book loads its dictionary in the warm-up, before the first query.
CHINESE_LANGUAGES = frozenset({"zh", "zho", "chi", "cmn", "yue", "lzh"})

_CJK_RANGES = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0003134f"  # CJK Extensions B-H
)
_CJK_FIRST = "\u3040"  # the lowest character of _CJK_RANGES
# Compiled on first use (~1.5 ms a CJK class): an ASCII query or text, most of them, needs none.
CJK_RUN = LazyPattern(f"[{_CJK_RANGES}]+")
# Han characters only (no kana, no hangul): the runs a Chinese word segmenter can cut
_HAN_RUN = LazyPattern("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]+")
# A CJK run, or a run of other letters and digits. `\w` also matches CJK, so the second
# branch must exclude it: "2008年北京" is the number 2008 and the run 年北京, never one term.
_TOKEN = LazyPattern(f"[{_CJK_RANGES}]+|(?:(?![{_CJK_RANGES}])[^\\W_])+", re.UNICODE)
# `_TOKEN`'s matches in an ASCII text: no CJK there, and `[^\W_]` is [A-Za-z0-9]
_ASCII_TOKEN = re.compile("[A-Za-z0-9]+")

# Common English words: they carry no topic, and their long posting lists slow queries.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves""".split()
)


def normalize(text: str) -> str:
    """NFKC folds full-width Latin and digits (Ｆｕｌｌ -> Full) and compatibility forms."""
    return unicodedata.normalize("NFKC", text)


def is_chinese_language(tag: object) -> bool:
    """A book's language tag names Chinese (`zh`, `zh-Hant`, `zh_CN`, `yue` ...)."""
    return isinstance(tag, str) and tag.replace("_", "-").split("-")[0].strip().lower() in CHINESE_LANGUAGES


def is_cjk(text: str) -> bool:
    return not text.isascii() and bool(CJK_RUN.fullmatch(text))


def cjk_tokens(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)] + [run[-1]]


def index_text(text: str, fold: Fold | None = None) -> str:
    """The form of a record's text that goes into the FTS5 table."""
    text = normalize(text)
    if fold is not None:
        text = fold(text)
    if not may_hold_cjk(text):  # most English text: CJK_RUN (a large class, compiled on first use) finds nothing
        return text
    return CJK_RUN.sub(lambda m: " " + " ".join(cjk_tokens(m.group())) + " ", text)


def may_hold_cjk(text: str) -> bool:
    """False when no character of the text is in a CJK range (all below U+3040, the first),
    found without the CJK regexes: a search's first passage read compiles none for English."""
    return not text.isascii() and max(text) >= _CJK_FIRST


def script_letters(text: str) -> dict[str, int]:
    """The letters of a text per script: {"latin": n, "cjk": m}. "latin" is every non-CJK
    letter (Cyrillic, Greek... too: the scripts an English-vocabulary model spells); digits
    carry no script, so "2008年" is all CJK."""
    cjk = sum(len(run) for run in CJK_RUN.findall(text)) if not text.isascii() else 0  # no CJK in ASCII
    letters = sum(map(str.isalpha, text))
    return {"latin": letters - cjk, "cjk": cjk}


def cjk_share(text: str) -> float:
    """Share of a text's letters that are CJK (0.0 for pure Latin, 1.0 for pure Chinese)."""
    letters = [ch for ch in text if ch.isalnum()]
    if not letters:
        return 0.0
    return sum(1 for ch in letters if CJK_RUN.match(ch)) / len(letters)


def has_query_terms(query: str) -> bool:
    """Whether `query_terms(query)` finds anything: a word or a CJK run is always kept (a query
    of stopwords alone keeps them), so one token is enough, and no list need be built."""
    text = normalize(query)
    return _token_pattern(text).search(text) is not None


def _token_pattern(text: str) -> re.Pattern[str]:
    """The query-term pattern for this text: `_TOKEN`, or for ASCII text its ASCII equivalent."""
    return _ASCII_TOKEN if text.isascii() else _TOKEN.compiled


def query_terms(query: str, fold: Fold | None = None, segment: Segment | None = None) -> list[str]:
    """FTS5 query fragments, each safe to OR together. Empty when nothing is searchable
    (see `_query_terms`). A list of one's own: the caller may change it."""
    return list(_query_terms(query, fold, segment, (MAX_QUERY_TERMS, MAX_TERM_REPEATS, IN_WORD_BIGRAM_REPEATS)))


# The last query's fragments: a search parses its query twice, in its lexical channel and in
# its passage reader (book_agent/services/search/passage_reading.py), with the same fold and segmenter. `limits`
# only keys the cache: the constants the parse reads (a study or a test may change them).
@functools.lru_cache(maxsize=1)
def _query_terms(query: str, fold: Fold | None, segment: Segment | None, limits: tuple[int, ...]) -> tuple[str, ...]:
    """FTS5 query fragments, each safe to OR together. Empty when nothing is searchable.

    A content word the query repeats is repeated here up to MAX_TERM_REPEATS times: FTS5's
    bm25() and the library index sum each fragment, so a repeated word weighs as in BM25 with
    query-side term frequency. A CJK fragment counts once, or IN_WORD_BIGRAM_REPEATS times
    when `segment` says it lies inside a word. At most MAX_QUERY_TERMS distinct fragments are
    kept, the first ones in the query."""
    counts: dict[str, int] = {}
    cjk_counts: dict[str, int] = {}
    words: list[str] = []
    text = normalize(query)
    if fold is not None:
        text = fold(text)
    for match in _token_pattern(text).finditer(text):
        token = match.group()
        if not is_cjk(token):  # an ASCII token is answered without the regex (is_cjk)
            words.append(token.lower())
            continue
        for fragment, weight in _cjk_fragments(token, segment):
            counts.setdefault(fragment, 0)  # keeps the fragment's place in the query
            cjk_counts[fragment] = max(cjk_counts.get(fragment, 1), weight)
    content_words = [w for w in words if w not in STOPWORDS] or words
    for word in content_words:
        fragment = _quote(word)
        counts[fragment] = counts.get(fragment, 0) + 1
    kept = list(counts)[:MAX_QUERY_TERMS]
    return tuple(fragment for fragment in kept
                 for _ in range(cjk_counts.get(fragment) or min(counts[fragment], MAX_TERM_REPEATS)))


def _cjk_fragments(run: str, segment: Segment | None = None) -> list[tuple[str, int]]:
    """A CJK run as OR-able fragments with their weights: each bigram, plus the whole run as a
    phrase when short.

    Chinese questions have no spaces, so a long run is a sentence, not a word: requiring
    all of its bigrams would find nothing. Each bigram is its own term (BM25 rewards records
    holding more of them) and a short run (a word or name) also counts as a phrase, which
    rewards records holding it intact. With a segmenter, a bigram inside one of its words
    weighs IN_WORD_BIGRAM_REPEATS (kana and hangul runs are left to the bigrams alone).
    """
    if len(run) == 1:
        return [(_quote(run) + "*", 1)]
    inside = _in_word_starts(run, segment) if segment is not None and _HAN_RUN.fullmatch(run) else set()
    fragments = [(_quote(run[i : i + 2]), IN_WORD_BIGRAM_REPEATS if i in inside else 1) for i in range(len(run) - 1)]
    if 3 <= len(run) <= 6:
        fragments.append((_phrase(run), 1))
    return fragments


def _in_word_starts(run: str, segment: Segment) -> set[int]:
    """Offsets i where the bigram run[i:i+2] lies inside one of the segmenter's words."""
    starts: set[int] = set()
    at = 0
    for word in segment(run):
        starts.update(range(at, at + len(word) - 1))
        at += len(word)
    return starts if at == len(run) else set()  # a segmenter that lost characters is ignored


def _phrase(run: str) -> str:
    """A CJK word as the adjacent sequence of its bigrams (`"ab" + "bc"` is a phrase)."""
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    return '"' + " ".join(b.replace('"', '""') for b in bigrams) + '"'


def _quote(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'
