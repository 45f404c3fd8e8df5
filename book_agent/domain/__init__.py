"""Pure data and rules of book-agent: no I/O libraries live here."""
