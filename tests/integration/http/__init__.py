"""Integration tests of `serve`'s HTTP hardening, tokens and loopback HTTP."""
