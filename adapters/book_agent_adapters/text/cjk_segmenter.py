"""jieba's accurate mode with its HMM, run over the prefix table without importing jieba.

Importing jieba costs ~40-50 ms in a cold process (its logging set-up, its regexes, the HMM's
1.3 MB emission table as Python source), a third of a cold CLI search. Once the data dir holds
the table (cjk_prefix_dict.py, which also carries the HMM's three tables), this module cuts a
query with the same algorithm: a port of jieba 0.42.1's `Tokenizer.cut(HMM=True)` and
`finalseg.cut` (MIT, (c) 2013 Sun Junyi), line for line so their results stay the same
(tests/integration/test_cjk_words.py compares every eval-set question word for word).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from math import log
from typing import Any

# jieba/__init__.py and jieba/finalseg/__init__.py, 0.42.1
RE_HAN_DEFAULT = re.compile("([\u4E00-\u9FD5a-zA-Z0-9+#&\\._%\\-]+)", re.U)
RE_SKIP_DEFAULT = re.compile("(\r\n|\\s)", re.U)
RE_HAN_HMM = re.compile("([\u4E00-\u9FD5]+)")
RE_SKIP_HMM = re.compile("([a-zA-Z0-9]+(?:\\.\\d+)?%?)")
MIN_FLOAT = -3.14e100
PREV_STATUS = {"B": "ES", "M": "MB", "S": "SE", "E": "BM"}

HmmTables = tuple[dict[str, float], dict[str, dict[str, float]], dict[str, dict[str, float]]]


class Segmenter:
    """freq: the prefix dictionary (word or prefix -> count, 0 for a prefix only); hmm: loads
    (start, trans, emit) when a run of unknown characters first needs them."""

    def __init__(self, freq: Any, total: int, hmm: Callable[[], HmmTables]) -> None:
        self.freq, self.total, self._hmm_loader = freq, total, hmm
        self._hmm: HmmTables | None = None

    def lcut(self, sentence: str) -> list[str]:
        return list(self.cut(sentence))

    def cut(self, sentence: str) -> Iterator[str]:
        for blk in RE_HAN_DEFAULT.split(sentence):
            if not blk:
                continue
            if RE_HAN_DEFAULT.match(blk):
                yield from self._cut_dag(blk)
            else:
                for x in RE_SKIP_DEFAULT.split(blk):
                    if RE_SKIP_DEFAULT.match(x):
                        yield x
                    else:
                        yield from x

    def _dag(self, sentence: str) -> dict[int, list[int]]:
        freq, n, dag = self.freq, len(sentence), {}
        for k in range(n):
            ends, i, frag = [], k, sentence[k]
            while i < n and frag in freq:
                if freq[frag]:
                    ends.append(i)
                i += 1
                frag = sentence[k:i + 1]
            dag[k] = ends or [k]
        return dag

    def _route(self, sentence: str, dag: dict[int, list[int]]) -> dict[int, tuple[float, int]]:
        n, freq, logtotal = len(sentence), self.freq, log(self.total)
        route: dict[int, tuple[float, int]] = {n: (0, 0)}
        for idx in range(n - 1, -1, -1):
            route[idx] = max((log(freq.get(sentence[idx:x + 1]) or 1) - logtotal + route[x + 1][0], x)
                             for x in dag[idx])
        return route

    def _cut_dag(self, sentence: str) -> Iterator[str]:
        route = self._route(sentence, self._dag(sentence))
        x, buf, n = 0, "", len(sentence)
        while x < n:
            y = route[x][1] + 1
            word = sentence[x:y]
            if y - x == 1:
                buf += word
            else:
                if buf:
                    yield from self._flush(buf)
                    buf = ""
                yield word
            x = y
        if buf:
            yield from self._flush(buf)

    def _flush(self, buf: str) -> Iterator[str]:
        """A run of single characters: the HMM guesses words the dictionary does not know."""
        if len(buf) == 1:
            yield buf
        elif not self.freq.get(buf):
            yield from self._hmm_cut(buf)
        else:
            yield from buf

    def _hmm_cut(self, sentence: str) -> Iterator[str]:
        for blk in RE_HAN_HMM.split(sentence):
            if RE_HAN_HMM.match(blk):
                yield from self._viterbi_cut(blk)
            else:
                yield from (x for x in RE_SKIP_HMM.split(blk) if x)

    def _viterbi_cut(self, sentence: str) -> Iterator[str]:
        if self._hmm is None:
            self._hmm = self._hmm_loader()
        _, pos_list = viterbi(sentence, "BMES", *self._hmm)
        begin, nexti = 0, 0
        for i, char in enumerate(sentence):
            pos = pos_list[i]
            if pos == "B":
                begin = i
            elif pos == "E":
                yield sentence[begin:i + 1]
                nexti = i + 1
            elif pos == "S":
                yield char
                nexti = i + 1
        if nexti < len(sentence):
            yield sentence[nexti:]


def viterbi(obs: str, states: str, start_p: dict[str, float], trans_p: dict[str, dict[str, float]],
            emit_p: dict[str, dict[str, float]]) -> tuple[float, list[str]]:
    v: list[dict[str, float]] = [{}]
    path: dict[str, list[str]] = {}
    for y in states:
        v[0][y] = start_p[y] + emit_p[y].get(obs[0], MIN_FLOAT)
        path[y] = [y]
    for t in range(1, len(obs)):
        v.append({})
        newpath = {}
        for y in states:
            em_p = emit_p[y].get(obs[t], MIN_FLOAT)
            prob, state = max((v[t - 1][y0] + trans_p[y0].get(y, MIN_FLOAT) + em_p, y0) for y0 in PREV_STATUS[y])
            v[t][y] = prob
            newpath[y] = path[state] + [y]
        path = newpath
    prob, state = max((v[len(obs) - 1][y], y) for y in "ES")
    return prob, path[state]
