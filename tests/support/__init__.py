"""Helpers shared by the tests (and by some tools/ scripts): package builders, loopback
servers, stdio MCP sessions, hostile archives, tiny models. Data files live in support/data/."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = Path(__file__).resolve().parent / "data"
