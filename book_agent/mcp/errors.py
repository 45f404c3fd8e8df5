"""Errors become tool results (or JSON-RPC errors) here, in one place.

A BookAgentError becomes an MCP tool error (`isError: true`) whose one text block is the JSON
document `{"error": {code, message, details, remediation}}`, the same shape as the CLI's
`--json` errors. No structuredContent is sent with an error: strict clients validate
structuredContent against the tool's output schema, which describes success only.

A request the protocol itself cannot serve (a tool, resource or prompt this server does not
have, a book outside the caller's token where no tool runs) is a JSON-RPC error instead, as the
MCP specification asks (-32602, invalid params, for an unknown tool, resource or prompt): its
message is the same JSON text, and its `data` the error's fields (`rpc_error`).

Any other exception is a bug: its traceback goes to stderr (the log), and the client gets a
masked `mcp.internal_error` that names the tool but leaks nothing of the internals.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from book_agent.domain.errors import BookAgentError
from book_agent.domain.unicode_text import scrub_text

if TYPE_CHECKING:
    from fastmcp.tools.base import ToolResult
    from mcp.shared.exceptions import MCPError

INVALID_PARAMS = -32602  # JSON-RPC: what MCP answers for a tool, resource or prompt it does not have
INTERNAL_ERROR = -32603

log = logging.getLogger("book_agent.mcp")


def error_payload(error: BookAgentError) -> dict[str, Any]:
    return {"error": error.to_dict()}


def error_text(error: BookAgentError) -> str:
    """The error as JSON text that can always be written (this is the path of last resort)."""
    try:
        text = json.dumps(error_payload(error), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):  # details that are not JSON: keep what says what happened
        text = json.dumps({"error": {"code": str(error.code), "message": str(error.message), "details": {},
                                     "remediation": error.remediation}}, ensure_ascii=False, default=str)
    return scrub_text(text)  # a caller's lone surrogate echoed in a message must not stop the answer


def error_result(error: BookAgentError) -> ToolResult:
    from fastmcp.tools.base import ToolResult
    from mcp_types import TextContent

    return ToolResult(content=[TextContent(type="text", text=error_text(error))], is_error=True)


def internal_error(tool: str, exc: BaseException) -> BookAgentError:
    """Log the real failure to stderr; return the masked error the client sees."""
    log.error("unexpected error in tool %s", tool, exc_info=exc)
    return BookAgentError(
        "mcp.internal_error",
        f"the {tool} tool failed unexpectedly; details are in the server's log (stderr)",
        details={"tool": tool},
        remediation="retry once; if it fails again, run `book-agent status BOOK_ID` and report the server log",
    )


def bad_arguments(tool: str, message: str, **details: Any) -> BookAgentError:
    return BookAgentError(
        "mcp.bad_arguments",
        f"{tool}: {message}",
        details={"tool": tool, **details},
        remediation="check the tool's input schema (tools/list) and call again",
    )


def unknown_tool(tool: str, available: list[str]) -> BookAgentError:
    return BookAgentError(
        "mcp.unknown_tool",
        f"there is no tool {tool!r} on this server",
        details={"tool": tool, "available": available},
        remediation="call tools/list and use one of the tools it names",
    )



def rpc_error(error: BookAgentError, code: int = INVALID_PARAMS, **data: Any) -> MCPError:
    """The error as a JSON-RPC error: the JSON text as its message, its fields (and `data`) as data."""
    from mcp.shared.exceptions import MCPError

    return MCPError(code, error_text(error), data={**data, "error": json.loads(error_text(error))["error"]})


def unknown_resource(uri: str) -> BookAgentError:
    return BookAgentError(
        "mcp.unknown_resource",
        f"there is no resource {scrub_text(uri)[:200]!r} on this server",
        details={"uri": scrub_text(uri)[:200]},
        remediation="call resources/list and read one of the resources it names",
    )


def unknown_prompt(name: str) -> BookAgentError:
    return BookAgentError(
        "mcp.unknown_prompt",
        f"there is no prompt {scrub_text(name)[:200]!r} on this server",
        details={"prompt": scrub_text(name)[:200]},
        remediation="call prompts/list and use one of the prompts it names",
    )
