"""Finding a page by its printed label: exact, then case and spaces aside; duplicates; the
nearest labels of an unknown one (numerically for a number); bad labels."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent.domain.sources.page_labels import NEAREST, find_label

LABELS = ["Cover", None, "i", "ii", "iii", "iv", "1", "2", "3", "10", "11", "1", "A-1"]


def test_an_exact_label_wins_then_one_ignoring_case() -> None:
    assert find_label("iv", LABELS).page_index == 5
    assert find_label("IV", LABELS).page_index == 5 and find_label(" cover ", LABELS).page_index == 0
    assert find_label("A-1", LABELS).page_label == "A-1"


def test_a_repeated_label_names_its_first_page_and_lists_all() -> None:
    match = find_label("1", LABELS)
    assert match.page_index == 6 and match.pages == [6, 11]


def test_an_unknown_number_lists_the_numerically_nearest() -> None:
    with pytest.raises(BookAgentError) as err:
        find_label("9", LABELS)
    assert err.value.code == "source.page_label_unknown"
    nearest = err.value.details["nearest"]
    assert {n["page_label"] for n in nearest} == {"1", "2", "3", "10", "11"}  # never "iv" or "A-1"
    assert [n["page_index"] for n in nearest] == sorted(n["page_index"] for n in nearest)  # in page order
    assert "10 (page_index 9)" in err.value.message


def test_an_unknown_word_lists_similar_labels() -> None:
    with pytest.raises(BookAgentError) as err:
        find_label("vi", LABELS)
    nearest = err.value.details["nearest"]
    assert 0 < len(nearest) <= NEAREST and any(n["page_label"] in ("iv", "ii", "iii", "i") for n in nearest)


def test_a_book_without_labels_says_so() -> None:
    with pytest.raises(BookAgentError) as err:
        find_label("5", [None, None])
    assert err.value.details["nearest"] == [] and "no page labels" in err.value.message


@pytest.mark.parametrize("label", ["", "   ", None, 55, "x" * 65, ["1"]])
def test_a_label_that_is_not_one_is_refused(label: object) -> None:
    with pytest.raises(BookAgentError) as err:
        find_label(label, LABELS)
    assert err.value.code == "source.page_label_invalid"


@example(["1", "2"], "²")  # a digit int() refuses
@example(["²", "٣"], "٣")  # a decimal digit of another script
@given(st.lists(st.one_of(st.none(), st.text(min_size=1, max_size=6)), min_size=1, max_size=40),
       st.text(min_size=1, max_size=8))
def test_any_label_is_found_or_a_coded_error_listing_real_labels(labels: list[str | None], label: str) -> None:
    try:
        match = find_label(label, labels)
    except BookAgentError as exc:
        assert exc.code in ("source.page_label_unknown", "source.page_label_invalid")
        for near in (exc.details or {}).get("nearest", []):
            assert labels[near["page_index"]] == near["page_label"]
        return
    assert labels[match.page_index] is not None and match.page_index == match.pages[0]
    assert labels[match.page_index].strip().casefold() == label.strip().casefold()
