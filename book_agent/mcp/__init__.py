"""The MCP server: one book per process, every book capability as a tool.

Nothing is imported here on purpose: `book_agent.cli.mcp_cmd` and the start-up path import
`book_agent.mcp.server` only when the server is actually started.
"""
