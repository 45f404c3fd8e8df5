"""http adapters."""
