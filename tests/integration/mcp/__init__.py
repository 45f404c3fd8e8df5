"""Integration tests of the MCP server: tools, lanes, arguments, book scope."""
