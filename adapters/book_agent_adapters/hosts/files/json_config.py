"""Round trip of an `{"mcpServers": {...}}` JSON file (Trae, WorkBuddy).

Only our one key under `mcpServers` changes: every other server and every unknown key
(Trae's `fromGalleryId`, top-level settings) survives in order. The text style is kept:
indentation (tabs or N spaces, detected from the first indented line; a one-line file
stays on one line), CRLF or LF line ends, the final newline. A UTF-8 BOM is never added;
an existing BOM is kept (we do not own the file's encoding) and reported in the plan.
A file with comments or trailing commas (JSONC: Trae is a VS Code fork) is parsed by
json-five and edited in place, so its comments survive (adapters/book_agent_adapters/hosts/files/jsonc_config.py). Duplicate
keys or a non-object root are refused as malformed: writing such a file back would
silently drop what the user wrote.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from book_agent_adapters.hosts.errors import config_malformed
from book_agent_adapters.hosts.files import jsonc_config
from book_agent_adapters.hosts.files.jsonc_config import JsoncText

BOM = "\ufeff"
KEY = "mcpServers"
_INDENTED = re.compile(r"^([ \t]+)\S", re.MULTILINE)


@dataclass
class JsonStyle:
    indent: str | int | None = 2
    newline: str = "\n"
    final_newline: bool = True
    bom: bool = False


@dataclass
class JsonDoc:
    data: dict[str, Any] = field(default_factory=dict)
    style: JsonStyle = field(default_factory=JsonStyle)
    jsonc: JsoncText | None = None  # set for a JSONC file: edits splice its text
    tree: Any = None  # json-five's model of that text


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def detect_style(text: str) -> JsonStyle:
    style = JsonStyle(bom=text.startswith(BOM))
    body = text[1:] if style.bom else text
    style.newline = "\r\n" if "\r\n" in body else "\n"
    style.final_newline = body.endswith("\n") or not body.strip()
    match = _INDENTED.search(body)
    if match:
        lead = match.group(1)
        style.indent = "\t" if lead.startswith("\t") else len(lead)
    elif body.strip():
        style.indent = None  # a one-line file stays one line
    return style


def parse(text: str | None, path: Path, host: str) -> JsonDoc:
    """Parse a config; absent or blank text is an empty document. Malformed -> refuse."""
    if text is None or not text.lstrip(BOM).strip():
        return JsonDoc(style=detect_style(text or ""))
    style = detect_style(text)
    doc = JsonDoc(style=style)
    try:
        data = json.loads(text.lstrip(BOM), object_pairs_hook=_reject_duplicates)
    except RecursionError as exc:
        raise config_malformed(path, "not valid JSON (nested too deeply)", host) from exc
    except ValueError as exc:
        if "duplicate key" in str(exc):
            raise config_malformed(path, f"not valid JSON ({exc})", host) from exc
        data = _jsonc(doc, text, path, host, exc)
    if not isinstance(data, dict):
        raise config_malformed(path, "the top level is not a JSON object", host)
    servers = data.get(KEY)
    if servers is not None and not isinstance(servers, dict):
        raise config_malformed(path, f'"{KEY}" is not a JSON object', host)
    doc.data = data
    return doc


def _jsonc(doc: JsonDoc, text: str, path: Path, host: str, plain_error: ValueError) -> Any:
    """Not plain JSON: JSON with comments (and trailing commas), or refused."""
    body = text[1:] if doc.style.bom else text
    try:
        doc.jsonc, doc.tree = jsonc_config.parse(body)
    except RecursionError as exc:
        raise config_malformed(path, "not valid JSON (nested too deeply)", host) from exc
    except ValueError as exc:
        reason = str(exc) if "duplicate key" in str(exc) else str(plain_error)
        raise config_malformed(path, f"not valid JSON or JSONC ({reason})", host) from exc
    if not isinstance(doc.tree.value, _object_type()):
        raise config_malformed(path, "the top level is not a JSON object", host)
    return doc.jsonc.data


def _object_type() -> type:
    from json5.model import JSONObject

    return JSONObject


def render(doc: JsonDoc) -> str:
    if doc.jsonc is not None:  # edited in place: every comment where the user put it
        return (BOM if doc.style.bom else "") + doc.jsonc.text
    text = json.dumps(doc.data, indent=doc.style.indent, ensure_ascii=False)
    if doc.style.newline != "\n":
        text = text.replace("\n", doc.style.newline)
    if doc.style.final_newline:
        text += doc.style.newline
    return (BOM if doc.style.bom else "") + text


def get_server(doc: JsonDoc, name: str) -> dict[str, Any] | None:
    entry = (doc.data.get(KEY) or {}).get(name)
    return entry if isinstance(entry, dict) else None


def set_server(doc: JsonDoc, name: str, entry: dict[str, Any]) -> None:
    servers = doc.data.setdefault(KEY, {})
    servers[name] = entry
    if doc.jsonc is not None:
        doc.jsonc = JsoncText(jsonc_config.set_server(doc.jsonc, doc.tree, name, entry), doc.data)
        doc.tree = None  # the model describes the old text: parse again before another edit


def remove_server(doc: JsonDoc, name: str) -> bool:
    """Drop our entry (an emptied `mcpServers` stays: the file keeps its shape)."""
    servers = doc.data.get(KEY)
    if not isinstance(servers, dict) or name not in servers:
        return False
    del servers[name]
    if doc.jsonc is not None:
        doc.jsonc = JsoncText(jsonc_config.remove_server(doc.jsonc, doc.tree, name) or doc.jsonc.text, doc.data)
        doc.tree = None
    return True


def is_empty(doc: JsonDoc) -> bool:
    return all(k == KEY and not v for k, v in doc.data.items())
