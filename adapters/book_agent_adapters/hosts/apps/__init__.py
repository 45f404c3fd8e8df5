"""One module per AI host: where its config and skills live, and how an MCP server entry is written.
"""
