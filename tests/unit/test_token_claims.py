"""A token's books and lifetime, read from its claims (mcp/auth.py), and what the scope takes out of
an answer (mcp/book_scope.py): property tests over the shapes an identity provider may send."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from book_agent.mcp.auth import (
    BOOK_ID,
    DEFAULT_JWT_MAX_LIFETIME_S,
    JwtSettings,
    lifetime_problem,
    token_books,
)
from book_agent.mcp.book_scope import WITHHELD, foreign_book_ids, named_books, scrubbed, uri_book

book_ids = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,12}", fullmatch=True)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def understood(claim: Any) -> bool:
    return isinstance(claim, list) and all(isinstance(b, str) and BOOK_ID.match(b) for b in claim)


@given(json_values)
def test_a_books_claim_of_any_shape_never_widens_the_token(claim: Any) -> None:
    books = token_books({"books": claim, "sub": "reader"})
    assert books is not None  # a books claim, whatever it holds, is a limit: never "every book"
    if understood(claim):
        assert books == list(dict.fromkeys(claim))
    else:
        assert books == []  # a shape this server does not understand: no book at all


@given(st.lists(book_ids, max_size=6))
def test_a_list_of_book_ids_is_exactly_those_books(claim: list[str]) -> None:
    assert token_books({"books": claim}) == list(dict.fromkeys(claim))


@given(st.sampled_from(["part-1", "part-1 part-2", "part-1,part-2", "*", "", "all", "@all"])
       | st.text(max_size=30))
def test_a_string_claim_is_no_book_even_one_that_names_a_book(claim: str) -> None:
    assert token_books({"books": claim}) == []


@given(st.sampled_from([None, {}, {"part-1": True}, {"books": ["part-1"]}, 1, 0, 1.5, True, False,
                        ["part-1", None], ["part-1", 1], ["part-1", ["part-2"]], ["part-1", {"id": "x"}],
                        ["Part-1"], ["*"], ["../etc"], [""]]))
def test_null_objects_numbers_and_mixed_lists_are_no_book(claim: Any) -> None:
    assert token_books({"books": claim}) == []


def test_no_books_claim_is_every_book_and_claims_that_are_not_an_object_are_too() -> None:
    assert token_books({"sub": "x"}) is None
    assert token_books({}) is None
    assert token_books(None) is None  # no claims at all: a token without a books claim


# --- lifetime --------------------------------------------------------------------------------

NOW = 1_800_000_000.0
times = st.integers(min_value=0, max_value=4_000_000_000)
limits = st.none() | st.integers(min_value=1, max_value=366 * 24 * 3600)


@given(exp=st.none() | times, iat=st.none() | times, limit=limits, allow=st.booleans())
def test_the_lifetime_rule(exp: int | None, iat: int | None, limit: int | None, allow: bool) -> None:
    settings = JwtSettings("i", "a", max_lifetime_s=limit, allow_no_exp=allow and limit is not None)
    claims = {k: v for k, v in (("exp", exp), ("iat", iat)) if v is not None}
    problem = lifetime_problem(claims, settings, NOW)
    if iat is not None and iat > NOW + 60:
        accepted = False  # an iat in the future is refused: exp - iat would not bound the time left
    elif exp is None:
        accepted = settings.allow_no_exp and iat is not None and limit is not None and NOW - iat <= limit
    else:
        # without a maximum of its own a JWT gets the default one (a day: issue 44 item 7)
        accepted = exp - (iat if iat is not None else NOW) <= (limit if limit is not None else DEFAULT_JWT_MAX_LIFETIME_S)
    assert (problem is None) == accepted, (claims, settings, problem)


@given(st.sampled_from(["3600", None, True, float("nan"), [1], {"t": 1}]))
def test_an_exp_or_iat_that_is_not_a_number_is_refused(value: Any) -> None:
    settings = JwtSettings("i", "a", max_lifetime_s=3600, allow_no_exp=True)
    if value is not None:
        assert lifetime_problem({"exp": value, "iat": NOW}, settings, NOW) is not None
    assert lifetime_problem({"exp": NOW + 60, "iat": value if value is not None else "x"}, settings, NOW) is not None


@given(ahead=st.integers(min_value=61, max_value=10**9), lifetime=st.integers(min_value=1, max_value=3600))
def test_a_future_iat_cannot_stretch_the_lifetime(ahead: int, lifetime: int) -> None:
    settings = JwtSettings("i", "a", max_lifetime_s=3600, allow_no_exp=True)
    assert lifetime_problem({"iat": NOW + ahead, "exp": NOW + ahead + lifetime}, settings, NOW) is not None
    assert lifetime_problem({"iat": NOW + ahead}, settings, NOW) is not None
    assert lifetime_problem({"iat": NOW + 30, "exp": NOW + 30 + lifetime}, settings, NOW) is None  # clock skew


def test_a_jwt_without_exp_is_refused_by_default() -> None:
    assert lifetime_problem({"iat": NOW}, JwtSettings("i", "a"), NOW) is not None
    assert lifetime_problem({"iat": NOW, "exp": None}, JwtSettings("i", "a"), NOW) is not None  # null: no exp
    # without --jwt-max-lifetime the default maximum (a day, issue 44 item 7) holds; a set one replaces it
    assert "maximum lifetime (86400 s)" in str(lifetime_problem({"iat": NOW, "exp": NOW + 1e9}, JwtSettings("i", "a"), NOW))
    assert lifetime_problem({"iat": NOW, "exp": NOW + 3600}, JwtSettings("i", "a"), NOW) is None
    assert lifetime_problem({"iat": NOW, "exp": NOW + 1e9}, JwtSettings("i", "a", max_lifetime_s=2e9), NOW) is None


# --- what an answer may say ------------------------------------------------------------------

# Ids other than "book", which the "book://" separator itself spells.
named_ids = book_ids.filter(lambda b: b != "book")


@given(st.sets(named_ids, min_size=1, max_size=5), st.sets(named_ids, max_size=3),
       st.lists(st.sampled_from([" ", ", ", "/", "'", ". ", ": ", "#", "\n", "book://"]), min_size=1, max_size=8))
def test_scrubbed_text_names_no_foreign_book_and_keeps_the_allowed(foreign: set[str], allowed: set[str],
                                                                  seps: list[str]) -> None:
    allowed -= foreign
    words = [*sorted(foreign), *sorted(allowed)]
    text = "".join(w + seps[i % len(seps)] for i, w in enumerate(words))
    doc = {"message": text, "details": {"served": words, "by_book": {w: 1 for w in words}, "book_id": words[0]}}
    clean = scrubbed(doc, foreign, allowed)
    # The words of what the answer says (its strings, not repr(): an escaped "\\n" would read as "n").
    details = clean["details"]
    said = [clean["message"], *details["served"], *details["by_book"], details["book_id"]]
    found = set(re.findall(r"[A-Za-z0-9_.-]+", " ".join(said).replace(WITHHELD, " ")))
    found |= {w.rstrip(".") for w in found}
    assert not foreign & found - allowed, clean
    assert set(clean["details"]["served"]) == allowed and set(clean["details"]["by_book"]) == allowed


def test_a_longer_id_is_not_cut_by_a_shorter_one() -> None:
    assert scrubbed("part-1 part-10 part-1.", {"part-1"}) == f"{WITHHELD} part-10 {WITHHELD}."
    # a dot followed by more of an id continues it; an allowed id is kept whole where a foreign
    # one spells its start (found by hypothesis: foreign "0", allowed "0.")
    assert scrubbed("0.5 and 0. then 0.", {"0"}) == f"0.5 and {WITHHELD}. then {WITHHELD}."
    assert scrubbed("0. then 0 and 0.x", {"0"}, keep=["0.", "0.x"]) == f"0. then {WITHHELD} and 0.x"


@given(st.lists(book_ids, min_size=1, max_size=4), st.integers(min_value=0, max_value=5))
def test_a_book_id_field_at_any_depth_is_found(ids: list[str], depth: int) -> None:
    answer: Any = {"book_id": ids[-1]}
    for _ in range(depth):
        answer = {"hits": [answer, {"text": ids[-1]}]}  # text is the book's words: not a field
    assert foreign_book_ids(answer, ids[:-1]) == ({ids[-1]} - set(ids[:-1]))


def test_named_books_and_uri_books() -> None:
    assert named_books({"book_id": "a", "books": ["b", 3, None, "c"]}) == ["a", "b", "c"]
    assert named_books({"books": "a"}) == [] and named_books(None) == []
    assert uri_book("book://part-1/skill") == "part-1" and uri_book("book://library/books") == "library"
    assert uri_book("book://{book_id}/skill") is None and uri_book("file:///etc/passwd") is None
    assert uri_book("book://part%2D1/skill") == "part-1"  # decoded: an encoding is no side door
