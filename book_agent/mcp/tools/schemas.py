"""Output schemas the tools publish (the success shapes; errors are described in errors.py).

Deliberately open (`additionalProperties: true`, few `required` keys): strict clients validate
structuredContent against these, and the core may add fields without breaking a session. The
keys listed are the contract the descriptions promise; contracts/mcp-tools.json pins them.
"""

from __future__ import annotations

from typing import Any

OBJ: dict[str, Any] = {"type": "object", "additionalProperties": True}
STR: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
BOOL: dict[str, Any] = {"type": "boolean"}
NULL_STR: dict[str, Any] = {"type": ["string", "null"]}
NULL_INT: dict[str, Any] = {"type": ["integer", "null"]}
NULL_OBJ: dict[str, Any] = {"type": ["object", "null"], "additionalProperties": True}
STR_LIST: dict[str, Any] = {"type": "array", "items": STR}


def obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": True}


HIT = obj(
    {
        "rank": INT,
        "evidence_id": STR,
        "record_id": STR,
        "text": STR,
        "headings": STR_LIST,
        "source_locator": NULL_OBJ,
        "markdown_span": NULL_OBJ,
        "scores": OBJ,
        "channels": {"type": ["array", "object"]},
    },
    ["rank", "evidence_id", "record_id", "text"],
)

SEARCH = obj(
    {
        "book_id": STR,
        "query": STR,
        "hits": {"type": "array", "items": HIT},
        "channels": OBJ,
        "query_representation": NULL_OBJ,
        "visual_fallback": obj({"recommended": BOOL, "reasons": {"type": "array"}}, ["recommended"]),
        "rerank": NULL_OBJ,
        "warnings": {"type": "array"},
    },
    ["book_id", "query", "hits"],
)

RECORD = obj(
    {
        "record_id": STR,
        "seq": NULL_INT,
        "text": STR,
        "headings": STR_LIST,
        "source": OBJ,
        "markdown_span": NULL_OBJ,
    },
    ["record_id", "text"],
)

MARKDOWN = obj({"text": STR, "start": NULL_INT, "end": NULL_INT, "truncated": BOOL}, ["text"])

SKILL = obj({"name": NULL_STR, "description": NULL_STR, "text": STR, "path": NULL_STR}, ["text"])

LOCATOR = obj(
    {
        "book_id": NULL_STR,
        "kind": NULL_STR,
        "page_index": NULL_INT,
        "href": NULL_STR,
        "fragment": NULL_STR,
        "char_start": NULL_INT,
        "char_end": NULL_INT,
        "markdown_span": NULL_OBJ,
        "verification": OBJ,
    },
    [],
)

SOURCE_TEXT = obj({"text": STR, "truncated": BOOL}, ["text"])

RENDER = obj(
    {
        "path": STR,
        "width_px": INT,
        "height_px": INT,
        "page_size": {"type": ["array", "object", "null"]},
        "scale": {"type": ["number", "null"]},
        "host_image_support": STR,
        "image_included": BOOL,
        "image_bytes": NULL_INT,
        "warnings": {"type": "array"},
        "highlights": {"type": "array", "items": obj({"record_id": NULL_STR, "boxes": {"type": "array"}}, ["boxes"])},
        "highlights_elsewhere": {"type": "array"},
    },
    ["path", "width_px", "height_px"],
)

TOC = obj(
    {
        "book_id": STR,
        "kind": STR,
        "source": STR,
        "entries": {"type": "array", "items": obj({"level": INT, "title": STR, "target": STR,
                                                    "first_record_id": NULL_STR}, ["level", "title", "target"])},
        "note": STR,
    },
    ["book_id", "source", "entries"],
)

AROUND = obj(
    {
        "book_id": STR,
        "record_id": STR,
        "records": {"type": "array", "items": obj({"record_id": STR, "offset": INT, "text": STR,
                                                    "source_locator": NULL_OBJ}, ["record_id", "offset"])},
    },
    ["book_id", "record_id", "records"],
)

STATUS = obj({"book_id": STR}, [])
