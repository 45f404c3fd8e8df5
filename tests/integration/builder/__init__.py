"""Integration tests of the package builder (`book-agent-build`)."""
