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
