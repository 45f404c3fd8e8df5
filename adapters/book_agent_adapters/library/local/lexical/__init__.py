"""lexical."""
