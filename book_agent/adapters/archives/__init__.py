"""archives adapters."""
