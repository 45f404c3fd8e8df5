"""Human renderings of `status`, `prepare` and `configure`: short labelled lines, one table.

The same data as `--json` (contracts/cli-json.md), laid out for a person: what is fine in a
word, what is not with the reason and the command that fixes it. Nothing here prints JSON.
"""

from __future__ import annotations

from typing import Any

from book_agent.cli.output import plain_text

INDENT = "  "


def _yes(flag: Any) -> str:
    return "yes" if flag else "no"


def _or_none(value: Any) -> str:
    if value is None or value == [] or value == {}:
        return "none"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _lines(lines: list[str]) -> None:  # plain print: rich would re-wrap long paths
    print(plain_text("\n".join(lines)))


def lexical_line(state: dict[str, Any]) -> str:
    if not state.get("present"):
        return "missing (`book-agent prepare BOOK` builds it)"
    if state.get("fresh"):
        count = state.get("record_count")
        return "fresh" + (f", {count} records" if count is not None else "")
    return f"stale: {state.get('reason') or 'out of date'} (`book-agent prepare BOOK` rebuilds it)"


def evidence_line(evidence: dict[str, Any] | None) -> str:
    if not evidence:
        return "not measured (no query encoder for the book's model)"
    status = evidence.get("status")
    if status == "ok":
        reads = evidence.get("reads") or {}
        read = [k for k, v in sorted(reads.items()) if v]
        unread = [k for k, v in sorted(reads.items()) if not v]
        basis = evidence.get("basis", "model")
        if unread:  # not "ok": the vector channel cannot serve these scripts' queries
            return f"partly: reads {', '.join(read) or 'none'}, not {', '.join(unread)} (from the {basis})"
        return f"ok (from the {basis}: reads {', '.join(read) or 'every script checked'})"
    reason = evidence.get("reason") or evidence.get("code") or ""
    return f"{status}" + (f": {reason}" if reason else "")


def capability_lines(capabilities: dict[str, Any]) -> list[str]:
    """One line per capability, then indented detail lines (a path is never cut)."""
    out = ["capabilities"]
    for name, cap in capabilities.items():
        details = _capability_details(name, cap)
        head = f"{INDENT}{name.replace('_', ' '):15} {_yes(cap.get('available')):3}"
        out.append((head + "  " + details[0]) if details else head)
        out.extend(f"{INDENT}{'':15} {'':3}  {line}" for line in details[1:])
    return out


def _capability_details(name: str, cap: dict[str, Any]) -> list[str]:
    if not cap.get("available"):
        lines = [str(cap["reason"])] if cap.get("reason") else []
        lines.append(f"needs {cap.get('needs', '?')}")
        encoding = cap.get("query_encoding") or {}
        if encoding and not encoding.get("available"):
            lines.append(f"query encoding: {encoding.get('reason')}")
            if encoding.get("remediation"):
                lines.append(f"fix: {encoding['remediation']}")
        return lines
    if name == "vector_search":
        lines = [f"{cap.get('model')} (languages {_or_none(cap.get('languages'))}, {cap.get('languages_source')})"]
        lines += [f"query encoding: {route}" for route in (cap.get("query_encoding") or {}).get("routes") or []]
        if "language_evidence" in cap:
            lines.append(f"reads the book's scripts: {evidence_line(cap['language_evidence'])}")
        return lines
    if name == "sources":
        return [f"the original {str(cap.get('kind') or '').upper()}"]
    return []


def render_status(status: dict[str, Any]) -> None:
    package = status["package"]
    health = "healthy" if package.get("healthy") else "NOT healthy"
    hashes = "every file re-hashed" if package.get("hashes_verified") else "sizes checked (--verify re-hashes)"
    lines = [f"{status['book_id']}: {status.get('title')}",
             f"{INDENT}package   {status['package_root']}",
             f"{INDENT}          {health}, {hashes}",
             f"{INDENT}runtime   {status['runtime_dir']}",
             f"{INDENT}lexical   {lexical_line(status['sidecars']['lexical'])}"]
    for changed in package.get("changed_files") or []:
        lines.append(f"{INDENT}changed   {changed}")
    for diag in package.get("diagnostics") or []:
        lines.append(f"{INDENT}{diag.get('severity', 'note'):9} [{diag.get('code')}] {diag.get('message')}")
    config = status["config"]
    _lines([*lines, *capability_lines(status["capabilities"]), *config_lines(config, config.get("auth_env_set"))])


def config_lines(config: dict[str, Any], auth_env_set: bool | None = None) -> list[str]:
    network = config.get("network") or {}
    query = config.get("query") or {}
    reranker = config.get("reranker") or {}
    remote = "allowed" if network.get("allow_remote_requests") else "not allowed (offline)"
    auth = network.get("auth_env")
    if auth and auth_env_set is not None:
        auth += " (set)" if auth_env_set else " (NOT set in this environment)"
    provider = str(reranker.get("provider") or "none")
    details = [f"{k} {reranker[k]}" for k in ("model", "endpoint", "factory") if reranker.get(k)]
    return ["config",
            f"{INDENT}remote requests     {remote}",
            f"{INDENT}allowed endpoints   {_or_none(network.get('allowed_endpoints'))}",
            f"{INDENT}API key variable    {_or_none(auth)}",
            f"{INDENT}query endpoint      {_or_none(query.get('endpoint'))}",
            f"{INDENT}model dir           {_or_none(query.get('model_dir'))}",
            f"{INDENT}reranker            {provider}" + (f" ({', '.join(details)})" if details else "")]


def book_prepare_lines(result: dict[str, Any]) -> list[str]:
    lexical = result.get("lexical") or {}
    if lexical.get("built"):
        was = lexical.get("was") or {}
        why = "missing" if not was.get("present") else (was.get("reason") or "stale")
        state = f"rebuilt ({why}): {lexical.get('record_count')} records"
    else:
        state = "already " + lexical_line(lexical.get("was") or {})
    return [f"{result['book_id']}",
            f"{INDENT}lexical index   {state}",
            f"{INDENT}model reads the book's scripts: {evidence_line(result.get('language_evidence'))}"]


def render_prepare(result: dict[str, Any]) -> None:
    if "library" not in result:
        _lines(book_prepare_lines(result))
        return
    lines: list[str] = []
    for book in result.get("books") or []:
        lines.extend(book_prepare_lines(book))
    index = result.get("lexical_index") or {}
    state = "rebuilt" if index.get("rebuilt") else "already fresh"
    lines += [f"library {result['library']}",
              f"{INDENT}lexical index   {state}, {index.get('records')} records"]
    for group in result.get("vector_indexes") or []:
        lines.append(f"{INDENT}vector index    {group.get('model')} ({group.get('dimensions')} dims): "
                     f"{group.get('vectors')} vectors, {group.get('search')} search")
    for skipped in result.get("skipped") or []:
        lines.append(f"{INDENT}skipped         {_skipped(skipped)}")
    _lines(lines)


def _skipped(item: Any) -> str:
    if isinstance(item, dict):
        return f"{item.get('book_id')}: {item.get('reason') or item.get('code') or 'skipped'}"
    return str(item)


def render_configure(result: dict[str, Any]) -> None:
    lines = [f"configured {result['book_id']}", *config_lines(result["config"])]
    lines += [f"note: {note}" for note in result.get("notes") or []]
    _lines(lines)
