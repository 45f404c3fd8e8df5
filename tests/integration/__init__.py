"""Integration tests: real SQLite files, generated PDFs/EPUBs and archives, loopback HTTP
servers, the CLI in-process through its entry function."""
