"""The published tool schemas, as a client sees them in `tools/list`.

`python -m book_agent.mcp.published > contracts/mcp-tools.json` regenerates the contract of a
one-book server, `python -m book_agent.mcp.published --library > contracts/mcp-library-tools.json`
that of a library server (`mcp @all`); tests fail when a server and its file drift apart.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from book_agent.agent import BookAgent

KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


async def published_tools(server: Any) -> list[dict[str, Any]]:
    from fastmcp import Client

    async with Client(server) as client:
        tools = await client.list_tools()
    out = []
    for tool in sorted(tools, key=lambda t: t.name):
        data = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
        out.append({key: data[key] for key in KEYS if key in data})
    return out


def document(library: bool = False) -> dict[str, Any]:
    from book_agent.mcp.server import build_server

    # No agent is ever called: listing tools needs none (that is the lazy start-up); the
    # placeholder only keeps the session from building a real one.
    server = build_server("@all" if library else "BOOK_ID", agent=cast("BookAgent", object()))
    return {"version": 1, "server": "book-agent", "tools": asyncio.run(published_tools(server))}


def main() -> None:
    import sys

    print(json.dumps(document(library="--library" in sys.argv[1:]), indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
