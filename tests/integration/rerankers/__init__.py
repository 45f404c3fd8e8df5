"""Integration tests of rerankers and their plug-ins."""
