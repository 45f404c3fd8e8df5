"""Benches of the servers a host or a team talks to: the MCP round trip over stdio, `serve` under load and under floods."""
