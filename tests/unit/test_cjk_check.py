"""lexical_text.may_hold_cjk: the cheap test that lets English text skip the CJK regexes must
never say no to a text the CJK regex would find something in."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.search.lexical_text import CJK_RUN, index_text, may_hold_cjk

near_the_edge = st.characters(min_codepoint=0x2FF0, max_codepoint=0x3100)


@given(st.text(alphabet=st.one_of(st.characters(), near_the_edge), max_size=60))
def test_a_text_said_to_hold_no_cjk_holds_none(text: str):
    if not may_hold_cjk(text):
        assert CJK_RUN.search(text) is None


def test_english_text_is_indexed_as_it_is_and_chinese_is_cut():
    assert not may_hold_cjk("Sun Tzǔ’s “Art of War”: café")
    assert index_text("Sun Tzǔ’s “Art of War”") == "Sun Tzǔ’s “Art of War”"
    assert may_hold_cjk("know 知己知彼") and "知己" in index_text("know 知己知彼")
    assert may_hold_cjk("\u3040") and not may_hold_cjk("\u303f")
