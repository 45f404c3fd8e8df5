"""storage adapters."""
