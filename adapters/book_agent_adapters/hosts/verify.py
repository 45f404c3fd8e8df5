"""Read back what an install wrote, and render the manual route as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from book_agent.domain.host_config import HostNote, ManualSteps
from book_agent.ports import HostPort
from book_agent_adapters.hosts import skills
from book_agent_adapters.hosts.base import entry_transport, read_config
from book_agent_adapters.hosts.naming import BOOK_AGENT_SKILL
from book_agent_adapters.hosts.targets import InstallTarget


def verify_mcp(port: HostPort, name: str, expected: dict[str, Any]) -> dict[str, Any]:
    """Read back our entry and compare it with `expected` (the stdio or the HTTP form's keys)."""
    path = port.config_path()
    if path is None:
        return {"status": "manual", "ok": None, "how": "no file to read: check the host's MCP settings",
                "path": None}
    text = read_config(path, port.host)
    found = port.read_server(text, path, name)
    result: dict[str, Any] = {"path": str(path), "how": "config file parsed and read back",
                              "expected": expected, "found": found, "problems": []}
    if found is None:
        result.update(status="missing", ok=False)
        return result
    for key, value in expected.items():
        if found.get(key) != value:
            result["problems"].append(f"{key} is {found.get(key)!r}, expected {value!r}")
    was, wanted = entry_transport(found), entry_transport(expected)
    if was != wanted:
        result["problems"].append(f"the entry is the {was or 'unknown'} form, expected the {wanted} form")
    if found.get("env"):
        # Not ours (we never write `env`), but a literal there may be a credential.
        result["problems"].append("the entry has a literal `env` map: keep credentials out of host configs")
    result["status"] = "ok" if not result["problems"] else "different"
    result["ok"] = not result["problems"]
    return result


def verify(port: HostPort, target: InstallTarget, expected: dict[str, Any], skills_dir: Path) -> dict[str, Any]:
    name = target.name
    mcp = verify_mcp(port, name, expected)
    skill_results = [
        skills.verify_skill(name, skills_dir, target.bundle()),
        skills.verify_skill(BOOK_AGENT_SKILL, skills_dir, skills.shipped_bundle(BOOK_AGENT_SKILL)),
    ]
    ok = mcp["ok"] is not False and all(s["ok"] for s in skill_results)
    return {"host": port.host, "edition": port.edition, "book_id": target.book_id, "server_name": name,
            "ok": ok, "mcp": mcp, "skills": skill_results, "unconfirmed": list(port.unconfirmed), **target.extra}


def render_manual(host: str, manual: ManualSteps, warnings: list[HostNote],
                  unconfirmed: tuple[str, ...]) -> str:
    lines = [f"# Install by hand: {host}", ""]
    lines += [f"{i}. {step}" for i, step in enumerate(manual["steps"], 1)]
    lines += ["", "```", manual["snippet"].rstrip("\n"), "```"]
    deeplink = manual.get("deeplink")
    if deeplink:
        lines += ["", "Deep link:", "", deeplink]
    if warnings:
        lines += ["", "Notes:"] + [f"- {w['message']}" for w in warnings]
    if unconfirmed:
        lines += ["", "Unconfirmed (design assumptions):"] + [f"- {u}" for u in unconfirmed]
    return "\n".join(lines) + "\n"
