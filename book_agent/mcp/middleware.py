"""Bad arguments and unknown tools get the same error shape as every other tool error.

FastMCP validates arguments against the input schema before a tool runs and would answer
with pydantic's prose; this turns that into `mcp.bad_arguments` with one entry per problem
(where, what), never echoing the offending value back (it may be huge). A call to a tool
the server does not have would come back as plain text ("Unknown tool: 'x'"); it becomes
`mcp.unknown_tool`, naming the tools there are.
"""

from __future__ import annotations

from typing import Any

import mcp_types as mt
from fastmcp.exceptions import DisabledError, NotFoundError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult
from pydantic import ValidationError as PydanticValidationError

from book_agent.mcp.errors import bad_arguments, error_result, unknown_tool


def _problems(exc: BaseException) -> list[dict[str, Any]]:
    cause = exc.__cause__
    if not isinstance(cause, PydanticValidationError):
        return []
    return [
        {"argument": ".".join(str(part) for part in err.get("loc", ())), "problem": err.get("msg"), "type": err.get("type")}
        for err in cause.errors(include_url=False, include_input=False)
    ]


class ArgumentErrors(Middleware):
    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        try:
            return await call_next(context)
        except ValidationError as exc:
            tool = context.message.name
            problems = _problems(exc)
            summary = "; ".join(f"{p['argument'] or 'arguments'}: {p['problem']}" for p in problems)
            return error_result(bad_arguments(tool, summary or "invalid arguments", problems=problems))
        except (NotFoundError, DisabledError):
            # Raised by the dispatcher only: every tool body turns its own exceptions into results.
            return error_result(unknown_tool(context.message.name, await _tool_names(context)))


async def _tool_names(context: MiddlewareContext[Any]) -> list[str]:
    if context.fastmcp_context is None:
        return []
    tools = await context.fastmcp_context.fastmcp.list_tools(run_middleware=False)
    return sorted({tool.name for tool in tools})
