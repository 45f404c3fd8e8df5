"""The MCP server: one book or a library (`a,b`, `@all`) per process, over stdio (`book-agent
mcp`) or streamable HTTP (`book-agent serve`), every book capability as a tool (book_agent/mcp/tools/table.py).

Nothing is imported here on purpose: `book_agent.cli.commands.mcp_cmd` and the start-up path import
`book_agent.mcp.server` only when the server is actually started.
"""
