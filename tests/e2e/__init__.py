"""End-to-end tests: real processes (the CLI, a stdio MCP session, host CLIs)."""
