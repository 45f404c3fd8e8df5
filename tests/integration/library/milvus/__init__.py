"""Integration tests of the Milvus library backend."""
