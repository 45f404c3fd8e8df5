"""Kept for older instructions: the builder ships as the `book-agent-build` command now
(adapters/book_agent_adapters/builder/, contracts/book-package-0.1.md).

    python tools/build/build_package.py BOOK.pdf|BOOK.epub OUT_DIR [options]  ==  book-agent-build ...
"""

from __future__ import annotations

from book_agent_adapters.bench import builder_main as main

if __name__ == "__main__":
    raise SystemExit(main())
