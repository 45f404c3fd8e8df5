"""The builder's coded errors (contracts/book-package-0.1.md, "Builder errors")."""

from __future__ import annotations

from typing import Any

from book_agent.domain.errors import BookAgentError

INPUT_INVALID = "build.input_invalid"  # not a file, not .pdf/.epub, a bad --book-id
ORIGINAL_ENCRYPTED = "build.original_encrypted"
ORIGINAL_UNSAFE = "build.original_unsafe"  # a zip bomb, a path outside the book, XML entities, deep nesting
ORIGINAL_CORRUPT = "build.original_corrupt"
NO_TEXT = "build.no_text"  # no page or chapter with text at all
UNREADABLE = "build.unreadable"  # most pages without text or with garbage text
OUTPUT_FAILED = "build.output_failed"
PACKAGE_INVALID = "build.package_invalid"
MODEL_UNAVAILABLE = "build.model_unavailable"  # --model e5 without book-agent[multilingual]
INTERRUPTED = "build.interrupted"


def error(code: str, message: str, remediation: str | None = None, **details: Any) -> BookAgentError:
    return BookAgentError(code, message, details=details, remediation=remediation)


def unsafe(book: str, why: str, **details: Any) -> BookAgentError:
    return error(ORIGINAL_UNSAFE, f"{book}: {why}; refused, nothing was written",
                 "use an intact copy of the book (re-export it from the shop or the tool that made it)",
                 book=book, **details)


def corrupt(book: str, why: str, **details: Any) -> BookAgentError:
    return error(ORIGINAL_CORRUPT, f"{book} cannot be read: {why}",
                 "use an intact copy of the book (re-download it, or re-export it as PDF/EPUB)",
                 book=book, **details)


# the runtime reader's refusals that mean "hostile", not "damaged" (sources' limits, issue 44.1)
UNSAFE_SOURCE_CODES = frozenset({"source.original_too_deep"})


def from_source(book: str, exc: BookAgentError) -> BookAgentError:
    """The runtime reader's refusal of `book` as the builder's code: unsafe or corrupt."""
    if exc.code in UNSAFE_SOURCE_CODES:
        return unsafe(book, exc.message, cause=exc.code)
    return corrupt(book, exc.message, cause=exc.code)
