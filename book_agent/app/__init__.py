"""Application wiring behind the BookAgent facade (may import adapters; the core may not)."""
