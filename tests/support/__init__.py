"""Helpers shared by the tests (and by some tools/ scripts): package builders, loopback
servers, stdio MCP sessions, hostile archives, tiny models. Data files live in support/data/."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = Path(__file__).resolve().parent / "data"
# The two source roots (contracts/architecture.md): every test or tool that scans the source
# scans both, so a check cannot pass by not looking at the adapters.
SOURCE_ROOTS = (REPO_ROOT / "book_agent", REPO_ROOT / "adapters" / "book_agent_adapters")


def source_files() -> list[Path]:
    """Every .py file of both source roots, sorted."""
    return sorted(p for root in SOURCE_ROOTS for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def published_tool_names(contract: str) -> set[str]:
    """The tool names a published schema file (contracts/mcp-tools.json, mcp-library-tools.json) lists:
    what a server must list, pinned by that file's snapshot test."""
    import json

    document = json.loads((REPO_ROOT / "contracts" / contract).read_text(encoding="utf-8"))
    return {tool["name"] for tool in document["tools"]}
