"""Integration tests of packages, archives and registration."""
