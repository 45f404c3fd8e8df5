"""serve --token-file: the digest file and the verifier (mcp/auth.py)."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from book_agent.domain.errors import BookAgentError
from book_agent.mcp.auth import DigestTokenVerifier, read_token_file
from book_agent.mcp.http import check_bind


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def test_digests_with_optional_books_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# team\n\n{sha('a')}\n{sha('b').upper()} part-1, part-2  # readers\n")
    entries = read_token_file(path)
    assert [(e.digest, e.books) for e in entries] == [(sha("a"), None), (sha("b"), ("part-1", "part-2"))]
    verifier = DigestTokenVerifier(entries)
    assert asyncio.run(verifier.verify_token("a")).claims == {"books": None}
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
