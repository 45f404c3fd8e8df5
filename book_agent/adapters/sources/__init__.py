"""sources adapters."""
