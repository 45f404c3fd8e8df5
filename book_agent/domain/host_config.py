"""What the AI-host port returns (contracts/hosts.md): detection, caveats, manual steps, and the
server entry book-agent manages in a host's config file.

A server entry is a fragment of the host's own config (Codex TOML, Trae/WorkBuddy/Cherry
Studio JSON): its keys are the host's, so it is typed as JSON, not as a fixed shape.
"""

# No `from __future__ import annotations`: a TypedDict reads Required/NotRequired at class
# creation, and a string annotation would hide them from __required_keys__.
from typing import Required, TypedDict

JsonValue = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]
ConfigEntry = dict[str, JsonValue]  # the keys book-agent manages in one server's entry


class HostNote(TypedDict):
    """A known refusal or caveat of a host: {code, message}."""

    code: str
    message: str


class ManualSteps(TypedDict):
    """How to do an install by hand: the steps, the snippet to paste, a deep link if any."""

    steps: list[str]
    snippet: str
    deeplink: str | None


class HostDetection(TypedDict, total=False):
    """Whether the host seems present: the paths (or binary) that say so."""

    installed: Required[bool]
    evidence: Required[list[str]]
    cli: str | None


class LibraryTarget(TypedDict):
    """What a library install names: its reference, whether it is `@all`, the ids."""

    ref: str
    everything: bool
    books: list[str]


class PlannedChange(TypedDict, total=False):
    """One file a plan writes, deletes or leaves: its hashes and unified diff."""

    path: Required[str]
    kind: str  # mcp_config | skill
    action: Required[str]  # create | modify | delete | unchanged
    sha256_before: str | None
    sha256_after: str | None
    diff: str
    backup: str


class HostPlan(TypedDict, total=False):
    """install / uninstall: the plan (a dry run), or with apply the result of carrying it out."""

    operation: Required[str]
    host: Required[str]
    edition: str | None
    book_id: str
    server_name: str
    skill_names: list[str]
    mcp_command: list[str] | None
    auth_env: str | None
    transport: str  # stdio | http
    url: str | None
    token_env: str | None
    config_path: str | None
    skills_dir: str
    changes: list[PlannedChange]
    changed: bool
    warnings: list[HostNote]
    unconfirmed: list[str]
    manual: ManualSteps
    applied: bool
    library: LibraryTarget
    written: list[str]
    deleted: list[str]
    backups: list[str]


class HostVerification(TypedDict, total=False):
    """verify: our server entry and skill files read back (missing, modified or outdated)."""

    host: Required[str]
    edition: str | None
    book_id: str
    server_name: str
    ok: Required[bool]
    mcp: dict[str, JsonValue]  # {status, ok, path, how, expected, found, problems}
    skills: list[dict[str, JsonValue]]
    unconfirmed: list[str]
    library: LibraryTarget


class HostInspection(TypedDict, total=False):
    """detect: whether the host seems installed, and what book-agent has put into it."""

    host: Required[str]
    edition: str | None
    installed: bool
    evidence: list[str]
    cli: str | None
    config_path: str | None
    skills_dir: str
    unconfirmed: list[str]
    config_exists: bool
    book_servers: list[str]
    book_server_forms: dict[str, dict[str, str | None]]
    book_agent_skills: list[str]
