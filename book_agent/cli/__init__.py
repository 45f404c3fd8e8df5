"""The `book-agent` command line: one module per command group (typer)."""
