"""Arguments are checked here, once, before any tool's body runs: strictly, as published.

FastMCP validates a tool's arguments with pydantic against the very types its published input
schema (contracts/mcp-tools.json) is made from; the server turns on its strict mode
(`strict_input_validation`: `top_k: true` and `"5"` are refused, not made 1 and 5), and
book_agent/mcp/arguments/strict.py tells its refusals in the schema's words. What pydantic
cannot say is checked here first: a string holding a lone UTF-16 surrogate (it is not text: no
UTF-8 form, and would fail deep inside a tool or when the answer is written) and arrays/objects
nested deeper than any argument needs. Every refusal is `mcp.bad_arguments` with one entry per
problem (where, what), never echoing the offending value back (it may be huge).

A call to a tool the server does not have would come back as a success result with `isError`
and plain text ("Unknown tool: 'x'"); the MCP specification asks for a JSON-RPC error, -32602,
so it becomes one whose message is the JSON of `mcp.unknown_tool` (naming the tools there are).
An unknown resource or prompt, which FastMCP answers -32602 in prose, gets the same treatment
(`mcp.unknown_resource`, `mcp.unknown_prompt`; a resource URI longer than 200 characters is cut).
"""

from __future__ import annotations

from typing import Any

import mcp_types as mt
from fastmcp.exceptions import DisabledError, NotFoundError, ValidationError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import ToolResult

from book_agent.domain.unicode_text import scrub_text, surrogate_paths
from book_agent.mcp.arguments.strict import integral_floats, problems_of
from book_agent.mcp.errors import (
    bad_arguments,
    error_result,
    rpc_error,
    unknown_prompt,
    unknown_resource,
    unknown_tool,
)


def _refusal(tool: str, problems: list[dict[str, Any]]) -> ToolResult:
    summary = "; ".join(f"{p['argument'] or 'arguments'}: {p['problem']}" for p in problems)
    return error_result(bad_arguments(tool, summary or "invalid arguments", problems=problems))


def _surrogate_problems(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"argument": path, "problem": "holds a lone UTF-16 surrogate (e.g. \\ud800), which is not text",
         "type": "lone_surrogate"}
        for path in surrogate_paths(arguments)
    ]


MAX_NESTING = 100  # a hit or locator is 4 or 5 levels deep; deeper input is refused, not walked
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _too_deep(value: Any) -> bool:
    """Whether value nests more than MAX_NESTING arrays/objects (iteratively: no recursion limit)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_NESTING:
                return True
            children = item.values() if isinstance(item, dict) else item
            if _SCALARS.issuperset(map(type, children)):
                continue  # scalars only (a query vector): their types read at C speed, ~0.2 ms less a call
            # only what can nest goes on the stack: a query vector's numbers are not pushed one by one
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _nesting_problems(arguments: Any) -> list[dict[str, Any]]:
    if not _too_deep(arguments):
        return []
    return [{"argument": "", "problem": f"nests arrays/objects more than {MAX_NESTING} levels deep",
             "type": "too_deep"}]


class ArgumentErrors(Middleware):
    def __init__(self) -> None:
        self._schemas: dict[str, dict[str, Any]] = {}

    async def on_call_tool(
        self,
        context: MiddlewareContext[mt.CallToolRequestParams],
        call_next: CallNext[mt.CallToolRequestParams, ToolResult],
    ) -> ToolResult:
        tool = scrub_text(context.message.name)
        arguments = context.message.arguments or {}
        problems = _nesting_problems(arguments) or _surrogate_problems(arguments)
        if problems:
            return _refusal(tool, problems)
        schema = await self._input_schema(context)
        if schema is not None and (whole := integral_floats(schema, arguments)) is not arguments:
            context = context.copy(message=context.message.model_copy(update={"arguments": whole}))
        try:
            return await call_next(context)
        except ValidationError as exc:  # FastMCP's strict validation refused them
            return _refusal(tool, problems_of(exc))
        except (NotFoundError, DisabledError):
            # Raised by the dispatcher only: every tool body turns its own exceptions into results.
            raise rpc_error(unknown_tool(tool, await _tool_names(context)), tool=tool) from None

    async def on_read_resource(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        uri = scrub_text(str(context.message.uri))
        try:
            return await call_next(context)
        except (NotFoundError, DisabledError):
            raise rpc_error(unknown_resource(uri), uri=uri[:200]) from None

    async def on_get_prompt(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any]) -> Any:
        name = scrub_text(str(context.message.name))
        try:
            return await call_next(context)
        except (NotFoundError, DisabledError):
            raise rpc_error(unknown_prompt(name), prompt=name[:200]) from None

    async def _input_schema(self, context: MiddlewareContext[Any]) -> dict[str, Any] | None:
        """The tool's published inputSchema; None for a tool this server does not have."""
        name = context.message.name
        if name not in self._schemas and context.fastmcp_context is not None:
            found = await context.fastmcp_context.fastmcp.get_tool(name)
            if found is None:
                return None
            self._schemas[name] = found.parameters
        return self._schemas.get(name)


async def _tool_names(context: MiddlewareContext[Any]) -> list[str]:
    if context.fastmcp_context is None:
        return []
    tools = await context.fastmcp_context.fastmcp.list_tools(run_middleware=False)
    return sorted({tool.name for tool in tools})
