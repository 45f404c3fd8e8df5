"""Integration tests of the CLI, in-process."""
