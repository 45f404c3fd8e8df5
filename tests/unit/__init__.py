"""Unit tests: pure logic and fakes; no subprocess, no network, no package on disk."""
