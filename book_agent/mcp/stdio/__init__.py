"""stdio."""
