"""encoders adapters."""
