"""Arguments are checked here, once, before any tool runs: strictly against the published schema.

FastMCP validates arguments with pydantic in lax mode: `top_k: true` became 1 and `"5"` became
5, values the published input schema (contracts/mcp-tools.json) says are wrong. So each call's
arguments are validated against that very schema (the tool's `inputSchema`, JSON Schema
2020-12) first; FastMCP's own validation then only sees values the schema allows. A string
holding a lone UTF-16 surrogate is refused too: it is not text (no UTF-8 form), and would fail
deep inside a tool or when the answer is written. Every refusal is `mcp.bad_arguments` with one
entry per problem (where, what), never echoing the offending value back (it may be huge).

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
from pydantic import ValidationError as PydanticValidationError

from book_agent.domain.unicode_text import scrub_text, surrogate_paths
from book_agent.mcp.arguments.schema_check import schema_problems
from book_agent.mcp.errors import (
    bad_arguments,
    error_result,
    rpc_error,
    unknown_prompt,
    unknown_resource,
    unknown_tool,
)


def _pydantic_problems(exc: BaseException) -> list[dict[str, Any]]:
    cause = exc.__cause__
    if not isinstance(cause, PydanticValidationError):
        return []
    return [
        {"argument": ".".join(str(part) for part in err.get("loc", ())), "problem": err.get("msg"), "type": err.get("type")}
        for err in cause.errors(include_url=False, include_input=False)
    ]


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


def _too_deep(value: Any) -> bool:
    """Whether value nests more than MAX_NESTING arrays/objects (iteratively: no recursion limit)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= MAX_NESTING:
                return True
            # only what can nest goes on the stack: a query vector's numbers are not pushed one by one
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
                         if isinstance(child, dict | list))
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
        schema = await self._input_schema(context)
        if not problems and schema is not None:
            problems = schema_problems(schema, arguments)
        if problems:
            return _refusal(tool, problems)
        try:
            return await call_next(context)
        except ValidationError as exc:
            return _refusal(tool, _pydantic_problems(exc))
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
