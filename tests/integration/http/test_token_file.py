"""serve --token-file: the digest file and the verifier (mcp/auth.py)."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.auth import DigestTokenVerifier, read_token_file
from book_agent.mcp.http.serve import check_bind


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def test_digests_with_optional_books_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# team\n\n{sha('a')}\n{sha('b').upper()} part-1, part-2  # readers\n")
    entries = read_token_file(path)
    assert [(e.digest, e.books) for e in entries] == [(sha("a"), None), (sha("b"), ("part-1", "part-2"))]
    verifier = DigestTokenVerifier(entries)
    assert asyncio.run(verifier.verify_token("a")).claims == {}  # no books claim: every book
    limited = asyncio.run(verifier.verify_token("b"))
    assert limited.claims == {"books": ["part-1", "part-2"]} and limited.token == "(withheld)"
    assert asyncio.run(verifier.verify_token("c")) is None
    assert asyncio.run(verifier.verify_token(sha("a"))) is None  # the digest itself is not a token


@pytest.mark.parametrize("content", ["plain-token\n", f"{sha('a')[:60]}\n", f"{sha('a')} Bad_Book\n", "# none\n", ""])
def test_a_bad_file_names_the_line_never_its_content(tmp_path: Path, content: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(content)
    with pytest.raises(BookAgentError) as info:
        read_token_file(path)
    assert info.value.code == "http.bad_token_file"
    assert "plain-token" not in info.value.message and "Bad_Book" not in info.value.message


def test_only_authentication_opens_other_addresses() -> None:
    with pytest.raises(BookAgentError) as info:
        check_bind("0.0.0.0", 8765)
    assert info.value.code == "http.auth_required"
    check_bind("0.0.0.0", 8765, authenticated=True)
    check_bind("127.0.0.1", 8765)
    with pytest.raises(BookAgentError) as info:
        check_bind("127.0.0.1", 70000)
    assert info.value.code == "http.bad_port"


# --- one digest, one line ---------------------------------------------------------------------

@pytest.mark.parametrize(("first", "second"), [
    ("", ""),                      # the same digest twice, both unlimited
    ("part-1", "part-1"),          # the same scope twice: still refused (which line is meant?)
    ("part-1", "part-2"),          # different scopes: the last would have won
    ("", "part-1"),                # unlimited, then limited
    ("part-1, part-2", "part-2 part-1"),
])
def test_a_digest_on_two_lines_is_refused_naming_both(tmp_path: Path, first: str, second: str) -> None:
    path = tmp_path / "tokens"
    digest = sha("shared")
    path.write_text(f"# team\n{digest} {first}\n{sha('other')}\n\n{digest.upper()} {second}  # again\n")
    with pytest.raises(BookAgentError) as info:
        read_token_file(path)
    assert info.value.code == "http.bad_token_file"
    assert info.value.details["lines"] == [2, 5] and "lines 2 and 5" in info.value.message
    assert digest not in info.value.message and digest not in str(info.value.details)


@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=2, max_size=8),
       st.lists(st.sampled_from(["", "part-1", "part-2", "part-1,part-2"]), min_size=8, max_size=8),
       st.lists(st.sampled_from(["", "# note", "  "]), min_size=8, max_size=8))
@settings(max_examples=60, deadline=None)
def test_any_repeated_token_is_found_at_its_first_repeat(tokens: list[str], scopes: list[str],
                                                         fillers: list[str]) -> None:
    import tempfile

    lines, where = [], {}
    for i, token in enumerate(tokens):
        if fillers[i]:
            lines.append(fillers[i])
        lines.append(f"{sha(token)} {scopes[i]}".strip())
        where.setdefault(token, []).append(len(lines))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tokens"
        path.write_text("\n".join(lines) + "\n")
        repeats = [(spots[0], spots[1]) for spots in where.values() if len(spots) > 1]
        if not repeats:
            assert len(read_token_file(path)) == len(tokens)
            return
        with pytest.raises(BookAgentError) as info:
            read_token_file(path)
    first_repeat = min(repeats, key=lambda pair: pair[1])
    assert info.value.details["lines"] == list(first_repeat)


def test_serve_refuses_a_repeated_digest_at_start(tmp_path: Path) -> None:
    from tests.support.cli_support import run_cli
    from tests.support.http_serve import free_port

    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{sha('t')} part-1\n{sha('t')} part-2\n")
    out = run_cli("--data-dir", str(tmp_path / "data"), "--json", "serve", "--token-file", str(tokens),
                  "--port", str(free_port()))
    assert out.code == 1 and out.error_code == "http.bad_token_file"
    assert out.json["error"]["details"]["lines"] == [1, 2]


def test_a_static_token_without_books_has_no_books_claim_and_a_limited_one_a_list(tmp_path: Path) -> None:
    from book_agent.mcp.auth import token_books

    path = tmp_path / "tokens"
    path.write_text(f"{sha('all')}\n{sha('one')} part-1\n")
    verifier = DigestTokenVerifier(read_token_file(path))
    assert token_books(asyncio.run(verifier.verify_token("all")).claims) is None
    assert token_books(asyncio.run(verifier.verify_token("one")).claims) == ["part-1"]
