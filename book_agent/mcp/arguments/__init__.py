"""arguments."""
