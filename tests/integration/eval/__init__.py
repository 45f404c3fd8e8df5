"""Integration tests of evaluation sets and the eval suite."""
