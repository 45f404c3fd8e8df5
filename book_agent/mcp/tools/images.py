"""render_page with include_image: the PNG as MCP image content next to its JSON description.

The renderer already caps pixels per render; this caps what one MCP message may carry, since
hosts choke on multi-megabyte frames. Over the cap the image is left out, with a warning that
says how to get a smaller one. The base64 never appears twice (not in the JSON as well).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastmcp.tools.base import ToolResult

MAX_IMAGE_BYTES = 8 * 1024 * 1024
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_bytes(data: Mapping[str, Any]) -> bytes | None:
    encoded = data.get("image_base64")
    if isinstance(encoded, str) and encoded:
        try:
            return base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return None
    path = data.get("path")
    if isinstance(path, str) and path:
        try:
            return Path(path).read_bytes()
        except OSError:
            return None
    return None


def with_image(data: Mapping[str, Any]) -> ToolResult:
    from fastmcp.tools.base import ToolResult
    from mcp_types import ImageContent, TextContent

    described = {k: v for k, v in data.items() if k != "image_base64"}
    warnings = list(described.get("warnings") or [])
    png = _png_bytes(data)
    blocks: list[Any] = []
    if png is None or not png.startswith(PNG_MAGIC):
        warnings.append("the rendered PNG could not be read back; use the path instead")
    elif len(png) > MAX_IMAGE_BYTES:
        warnings.append(
            f"image of {len(png)} bytes left out (limit {MAX_IMAGE_BYTES}): pass a clip or a lower dpi"
        )
    else:
        blocks.append(ImageContent(type="image", data=base64.b64encode(png).decode("ascii"), mime_type="image/png"))
    described["image_included"] = bool(blocks)
    described["image_bytes"] = len(png) if png is not None else None
    described["warnings"] = warnings
    text = TextContent(type="text", text=json.dumps(described, ensure_ascii=False, default=str))
    return ToolResult(content=[text, *blocks], structured_content=described)
