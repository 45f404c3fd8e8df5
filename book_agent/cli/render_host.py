"""Human renderings of `host detect` and `host verify` (the same data as `--json`)."""

from __future__ import annotations

from typing import Any

from book_agent.cli.output import plain_text

INDENT = "  "


def _host_name(data: dict[str, Any]) -> str:
    return str(data["host"]) + (f" ({data['edition']})" if data.get("edition") else "")


def render_detect(data: dict[str, Any]) -> None:
    found = "found" if data.get("installed") else "not found"
    lines = [f"{_host_name(data)}: {found}" + (f" (cli {data['cli']})" if data.get("cli") else ""),
             f"{INDENT}config   {data.get('config_path') or 'none (set up in the app)'}"
             + ("" if data.get("config_exists") else "  (not there yet)"),
             f"{INDENT}skills   {data.get('skills_dir') or 'none'}"]
    lines += [f"{INDENT}evidence {path}" for path in data.get("evidence") or []]
    forms = data.get("book_server_forms") or {}
    for server in data.get("book_servers") or []:
        lines.append(f"{INDENT}server   {server}" + (f" ({forms[server]})" if server in forms else ""))
    lines += [f"{INDENT}skill    {skill}" for skill in data.get("book_agent_skills") or []]
    lines += [f"{INDENT}unconfirmed: {item}" for item in data.get("unconfirmed") or []]
    print(plain_text("\n".join(lines)))


def render_verify(data: dict[str, Any]) -> None:
    verdict = "ok" if data.get("ok") else "NOT ok"
    lines = [f"{data['book_id']} in {_host_name(data)} (server {data['server_name']}): {verdict}"]
    mcp = data.get("mcp") or {}
    where = mcp.get("path") or mcp.get("how") or ""
    lines.append(f"{INDENT}server entry  {mcp.get('status')}  {where}")
    lines += [f"{INDENT}  problem: {problem}" for problem in mcp.get("problems") or []]
    for skill in data.get("skills") or []:
        state = "ok" if skill.get("ok") else ("missing" if not skill.get("installed") else "differs")
        lines.append(f"{INDENT}skill {skill['name']:12} {state}  {skill.get('folder')}")
        for kind in ("missing", "modified", "outdated"):
            lines += [f"{INDENT}  {kind}: {name}" for name in skill.get(kind) or []]
    if not data.get("ok"):
        edition = f" --edition {data['edition']}" if data.get("edition") else ""
        url = f" --url {data['url']}" if data.get("url") else ""
        lines.append(f"fix: book-agent host install {data['host']} {data['book_id']}{edition}{url} --apply")
    lines += [f"{INDENT}unconfirmed: {item}" for item in data.get("unconfirmed") or []]
    print(plain_text("\n".join(lines)))
