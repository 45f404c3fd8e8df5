"""A tool's answer made into its MCP result once: one JSON serialisation, not four.

FastMCP turns a returned dict into a result by serialising it to JSON and parsing it back (the
structuredContent), serialising that again (the text block), then, building the ToolResult,
serialising and parsing the structuredContent a third time: about 28% of a warm search's time
in the server (issue 29). `ready_result` builds the same result from one serialisation: the
JSON text is the text block, its parse the structuredContent, exactly what FastMCP's
`convert_result` gives (tests/integration/mcp/test_mcp_ready_results.py holds the two equal).

It also replaces the lone-surrogate walk over every answer: the serialiser refuses a string
that has no UTF-8 form, so an answer it accepts needs no scrub. Anything it does not take as
it is (a lone surrogate, a NaN or infinity, which FastMCP refuses with its own message, a value
that is not an object) goes the usual way, by FastMCP's conversion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pydantic_core
from pydantic_core import core_schema

if TYPE_CHECKING:
    from fastmcp.tools.base import ToolResult

# FastMCP's serialiser for a tool whose return type is Any (all of ours): any value, NaN and
# infinity written as the tokens JSON lacks, so they can be found and refused.
_SERIALIZER = pydantic_core.SchemaSerializer(core_schema.any_schema(), config={"ser_json_inf_nan": "constants"})


def ready_result(value: Any) -> ToolResult | None:
    """The ToolResult FastMCP would make of `value` (text block + structuredContent), or None
    when `value` must take FastMCP's own way (see the module's docstring)."""
    if not isinstance(value, dict):
        return None
    try:
        payload = _SERIALIZER.to_json(value)
    except (pydantic_core.PydanticSerializationError, ValueError, RecursionError):
        return None
    if b"NaN" in payload or b"Infinity" in payload:  # maybe a non-finite number: FastMCP decides
        return None
    from fastmcp.tools.base import ToolResult
    from mcp_types import TextContent

    # model_construct: the fields are what ToolResult.__init__ would have made of them, without
    # its second serialisation of the structured content
    # pydantic_core's parser: half json.loads' time on a search's ~20 KB, the same values (every
    # double read back to its bits: tests/integration/mcp/test_mcp_ready_results.py)
    return ToolResult.model_construct(content=[TextContent(type="text", text=payload.decode())],
                                      structured_content=pydantic_core.from_json(payload), meta=None, is_error=False)
