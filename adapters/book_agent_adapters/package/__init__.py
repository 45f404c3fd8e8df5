"""package adapters."""
