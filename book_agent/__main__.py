"""`python -m book_agent ...` runs the CLI (the MCP hosts start servers this way)."""

from book_agent.cli.entry import main

if __name__ == "__main__":
    main()
