"""Argument bounds and defaults every entry point shares (CLI, MCP, services, adapters).

Defined once here so a driver (cli/, mcp/) states the same bounds as the code that enforces
them without importing an adapter or a service for a number.
"""

from __future__ import annotations

# search: hits per query
MAX_TOP_K = 100
DEFAULT_TOP_K = 6

# render_page: resolution of a page render
DPI_RANGE: tuple[int, int] = (18, 1200)
DEFAULT_DPI = 150

# read_source: characters returned per read
MAX_CHARS_LIMIT = 200_000
DEFAULT_MAX_CHARS = 12_000

# read_around: records on each side of the one asked for (CLI --around, MCP `around`)
MAX_AROUND = 50
DEFAULT_AROUND = 2

# search: a query's text and a caller's query vector (every entry point refuses past these)
MAX_QUERY_CHARS = 4000
MAX_QUERY_DIMENSIONS = 16_384  # past any embedding model's width; a longer vector is a mistake

# search: the hints the core reads, by type (others pass through, echoed in the result);
# the CLI's `--hint key=value` strings are read as these types
HINT_KINDS: dict[str, type] = {"visual": bool, "page_index": int, "page_text_chars": int, "href": str}
