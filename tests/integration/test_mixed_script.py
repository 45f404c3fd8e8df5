"""Mixed-script text: CJK runs written against Latin words and digits, in records and in queries.

About one real Chinese question in eight has digits or Latin letters next to Chinese
("2008年北京奥运会在哪里", "iPhone手机多少钱"). Query and index tokenisation must split the CJK
run from the Latin or digit run, or the two glue into one term that matches nothing.
Properties over a real FTS5 sidecar: any two-character CJK substring of a record, and any
Latin word or number written against CJK text, finds that record.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from book_agent.domain.book.package import DATABASE_SCHEMA_SQL
from book_agent.domain.search.lexical_text import CJK_RUN, STOPWORDS, query_terms
from book_agent_adapters.book.lexical.fts_lexical_index import FtsLexicalIndex, build_sidecar
from book_agent_adapters.text.cjk_fold import fold_chinese

# Common simplified characters, kept only where the traditional->simplified fold leaves them
# alone, so a substring of the folded record is the fold of the substring.
_COMMON = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说"
           "产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使"
           "点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明")
CJK_ALPHABET = "".join(c for c in dict.fromkeys(_COMMON) if fold_chinese(c) == c)
DISTRACTORS = ["与此无关的文字内容", "plain english words only here", "数字 123 和 abc 分开写"]

cjk_runs = st.text(alphabet=CJK_ALPHABET, min_size=2, max_size=12)
latin_words = st.from_regex(r"[A-Za-z]{2,10}", fullmatch=True).filter(lambda w: w.lower() not in STOPWORDS)
numbers = st.from_regex(r"[0-9]{1,6}", fullmatch=True)
glued_text = st.lists(st.one_of(cjk_runs, latin_words, numbers), min_size=2, max_size=6).map("".join)


def _index(tmp: Path, text: str) -> FtsLexicalIndex:
    database = tmp / "index.sqlite"
    database.unlink(missing_ok=True)
    con = sqlite3.connect(database)
    con.executescript(DATABASE_SCHEMA_SQL)
    rows = [("target", 0, text)] + [(f"other{i}", i + 1, t) for i, t in enumerate(DISTRACTORS)]
    con.executemany("INSERT INTO records VALUES (?, ?, ?, '[]', NULL, NULL, ?)",
                    [(rid, seq, body, json.dumps({"kind": "pdf", "page_index": 0})) for rid, seq, body in rows])
    con.commit()
    con.close()
    sidecar = tmp / "lexical.sqlite"
    build_sidecar(database, sidecar, {"tokenizer_version": "test"})
    return FtsLexicalIndex(sidecar)


def _finds(tmp: Path, text: str, query: str) -> bool:
    index = _index(tmp, text)
    try:
        return "target" in [h.record_id for h in index.search(query, 10)]
    finally:
        index.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=glued_text, data=st.data())
def test_any_two_character_cjk_substring_finds_its_record(tmp_path: Path, text: str, data: st.DataObject):
    runs = [m.group() for m in CJK_RUN.finditer(text) if len(m.group()) >= 2]
    if not runs:
        return
    run = data.draw(st.sampled_from(runs))
    start = data.draw(st.integers(0, len(run) - 2))
    assert _finds(tmp_path, text, run[start : start + 2])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=cjk_runs, token=st.one_of(latin_words, numbers), after=cjk_runs, glue_query=st.booleans())
def test_a_latin_word_or_number_written_against_cjk_finds_its_record(
    tmp_path: Path, before: str, token: str, after: str, glue_query: bool
):
    text = before + token + after
    # the question may be glued too: "iPhone手机多少钱" asks for the word and the run
    query = token + after if glue_query else token
    assert _finds(tmp_path, text, query)


@pytest.mark.parametrize(("query", "latin"), [
    ("2008年北京奥运会在哪里", '"2008"'),
    ("iPhone手机多少钱", '"iphone"'),
    ("GDP增长了多少", '"gdp"'),
    ("COVID-19疫苗", '"19"'),
])
def test_query_terms_split_latin_and_digit_runs_from_cjk(query: str, latin: str):
    terms = query_terms(query)
    assert latin in terms
    assert not any(ch.isascii() and ch.isalnum() for t in terms if CJK_RUN.search(t) for ch in t)
