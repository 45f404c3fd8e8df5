"""The CLI's argv parsing: global options anywhere, and the fast search path's own parser."""

from __future__ import annotations

import pytest

from book_agent.cli.argv import ArgvError, split_global_options


@pytest.mark.parametrize(
    ("argv", "data_dir", "json_flag", "rest"),
    [
        (["--json", "search", "b", "q"], None, True, ["search", "b", "q"]),
        (["search", "b", "q", "--json"], None, True, ["search", "b", "q"]),
        (["search", "--data-dir", "/d", "b", "q"], "/d", False, ["search", "b", "q"]),
        (["--data-dir=/d", "list"], "/d", False, ["list"]),
        (["search", "b", "--", "--json"], None, False, ["search", "b", "--", "--json"]),
    ],
)
def test_global_options_are_lifted_from_anywhere(argv, data_dir, json_flag, rest):
    options, remaining = split_global_options(argv)
    assert (options.data_dir, options.json, remaining) == (data_dir, json_flag, rest)


def test_data_dir_without_value_is_a_usage_error():
    with pytest.raises(ArgvError):
        split_global_options(["list", "--data-dir"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["b", "q"], {"book": "b", "query": "q", "top_k": 6, "strict": False, "query_vector": None, "hint": []}),
        (["b", "q", "-k", "3", "--strict", "--hint", "a=1", "--hint=b=2"],
         {"book": "b", "query": "q", "top_k": 3, "strict": True, "query_vector": None, "hint": ["a=1", "b=2"]}),
        (["--top-k=2", "b", "--", "--not-an-option"],
         {"book": "b", "query": "--not-an-option", "top_k": 2, "strict": False, "query_vector": None, "hint": []}),
        (["b", "q", "--help"], None),
        (["b", "q", "--top-k", "many"], None),
        (["b"], None),
        (["b", "q", "--strict=yes"], None),
        (["b", "q", "--colour", "red"], None),
    ],
)
def test_fast_search_parses_exactly_the_search_options(argv, expected):
    from book_agent.cli.search_args import parse_search_argv

    assert parse_search_argv(argv) == expected
