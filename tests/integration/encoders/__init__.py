"""Integration tests of query encoders and models."""
