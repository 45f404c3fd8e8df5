"""Integration tests of the library across backends."""
