"""A query as the vector channel sees it: the vector (or why there is none) and its route."""

from __future__ import annotations

from dataclasses import dataclass, field

from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.errors import ErrorInfo
from book_agent.domain.records import Vector
from book_agent.domain.search.search_results import QueryRepresentation

OK, UNAVAILABLE, USER_SUPPLIED = "ok", "unavailable", "user-supplied-unverified"


@dataclass
class QueryEncoding:
    """A query's vector (or why there is none), the route that made it, and what was noticed."""

    status: str  # ok | unavailable | user-supplied-unverified
    vector: Vector | None
    route: str | None
    model: str | None
    dimensions: int | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: ErrorInfo | None = None  # BookAgentError.to_dict() when unavailable

    def to_dict(self, include_vector: bool = True) -> QueryRepresentation:
        data: QueryRepresentation = {
            "status": self.status, "route": self.route, "model": self.model,
            "dimensions": self.dimensions,
            "diagnostics": [d.to_dict() for d in self.diagnostics], "error": self.error,
        }
        if include_vector:
            data["vector"] = [float(x) for x in self.vector] if self.vector is not None else None
        return data
