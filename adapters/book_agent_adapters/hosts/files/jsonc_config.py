"""JSON with comments (JSONC: VS Code's settings files, Trae's `mcp.json`): read, and edited in place.

Parsed by json-five (a JSON5 parser whose model keeps every token's offsets and round-trips
comments); never re-serialised. An edit is a splice of the original text at our entry's
offsets: replace the value of `mcpServers.<name>`, insert a new entry before the closing
brace (with the comma it needs, in the file's indentation and line ends), or cut our entry
out (with its comma, and its line when nothing else is on it). Every other byte of the
file, comments, trailing commas and other servers included, stays as the user wrote it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

KEY = "mcpServers"


@dataclass
class JsoncText:
    text: str
    data: dict[str, Any]


def _key_name(key: Any) -> str:
    return str(getattr(key, "characters", None) or getattr(key, "name", None) or key)


def _check_duplicates(node: Any) -> None:
    from json5 import model

    for item in model.walk(node):
        if isinstance(item, model.JSONObject):
            names = [_key_name(k) for k in item.keys]
            if len(names) != len(set(names)):
                raise ValueError(f"duplicate key {next(n for n in names if names.count(n) > 1)!r}")


def parse(text: str) -> tuple[JsoncText, Any]:
    """(the text and its plain data, json-five's model). ValueError when it is not JSONC."""
    import json5
    from json5.loader import ModelLoader
    from json5.loader import loads as model_loads

    try:
        tree = model_loads(text, loader=ModelLoader())
        data = json5.loads(text)
    except RecursionError:
        raise
    except Exception as exc:  # json-five raises its own JSON5DecodeError family (a ValueError or not)
        raise ValueError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    _check_duplicates(tree)
    return JsoncText(text, data if isinstance(data, dict) else {}), tree


def _span(node: Any) -> tuple[int, int]:
    end = node._end_tok or node._tok
    return int(node._tok.index), int(end.end)


def _find(obj: Any, name: str) -> int | None:
    for index, key in enumerate(obj.keys):
        if _key_name(key) == name:
            return index
    return None


def _indent_unit(text: str) -> str:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return "\t" if line.startswith("\t") else " " * (len(line) - len(stripped))
    return "  "


def _value_text(value: Any, unit: str, depth: int, newline: str) -> str:
    dumped = json.dumps(value, indent=unit, ensure_ascii=False)
    return dumped.replace("\n", newline + unit * depth)


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _splice(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def set_server(doc: JsoncText, tree: Any, name: str, entry: dict[str, Any]) -> str:
    """The text with `mcpServers.<name>` set to `entry`."""
    text, unit, nl = doc.text, _indent_unit(doc.text), _newline(doc.text)
    root = tree.value
    servers_at = _find(root, KEY)
    if servers_at is None:
        block = f'"{KEY}": {{{nl}{unit * 2}{json.dumps(name)}: {_value_text(entry, unit, 2, nl)}{nl}{unit}}}'
        return _insert(text, root, block, unit, nl)
    servers = root.values[servers_at]
    index = _find(servers, name)
    if index is not None:
        start, end = _span(servers.values[index])
        return _splice(text, start, end, _value_text(entry, unit, 2, nl))
    return _insert(text, servers, f"{json.dumps(name)}: {_value_text(entry, unit, 2, nl)}", unit * 2, nl)


def _insert(text: str, obj: Any, member: str, indent: str, nl: str) -> str:
    """`member` as the object's last member: a comma after the one before when it has none,
    on its own line before the closing brace (or inline when the object is on one line)."""
    close = int(obj._end_tok.index)
    line_start = text.rfind("\n", 0, close) + 1
    trailing = obj.trailing_comma is not None
    comma_after_last = ""
    if obj.values and not trailing:
        comma_after_last = ","
    own_line = not text[line_start:close].strip() and (obj.values or "\n" in text[int(obj._tok.index):close])
    if own_line:
        piece = f"{indent}{member}{',' if trailing else ''}{nl}"
        new = _splice(text, line_start, line_start, piece)
    else:
        new = _splice(text, close, close, f"{' ' if obj.values else ''}{member}{' ' if obj.values else ''}")
    if comma_after_last:
        _, last_end = _span(obj.values[-1])
        new = _splice(new, last_end, last_end, ",")
    return new


def remove_server(doc: JsoncText, tree: Any, name: str) -> str | None:
    """The text without `mcpServers.<name>` (None when it is not there)."""
    servers_at = _find(tree.value, KEY)
    if servers_at is None:
        return None
    servers = tree.value.values[servers_at]
    index = _find(servers, name)
    if index is None:
        return None
    text = doc.text
    start, _ = _span(servers.keys[index])
    _, end = _span(servers.values[index])
    after = _skip_blank(text, end)
    if after < len(text) and text[after] == ",":
        end = after + 1
    elif index > 0:  # the last member: the comma before it goes
        _, prev_end = _span(servers.values[index - 1])
        comma = _skip_blank(text, prev_end)
        if comma < start and text[comma] == ",":
            text, start, end = _splice(text, comma, comma + 1, ""), start - 1, end - 1
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    if not text[line_start:start].strip() and line_end != -1 and not text[end:line_end].strip():
        start, end = line_start, line_end + 1  # our entry had its own lines: they go
    return _splice(text, start, end, "")


def _skip_blank(text: str, pos: int) -> int:
    """The first position at or after `pos` that is not whitespace or a comment."""
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
        elif text.startswith("//", pos):
            newline = text.find("\n", pos)
            pos = len(text) if newline == -1 else newline
        elif text.startswith("/*", pos):
            close = text.find("*/", pos + 2)
            pos = len(text) if close == -1 else close + 2
        else:
            break
    return pos
