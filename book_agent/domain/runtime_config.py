"""The per-book runtime config: one versioned JSON document in the book's runtime dir.

    {"version": 1,
     "network": {"allow_remote_requests": false, "allowed_endpoints": [], "auth_env": null},
     "query": {"endpoint": null, "model_dir": null},
     "reranker": {"provider": "none", "model": null, "endpoint": null, "factory": null}}

The embedding model is never here: it comes from the package (vectors.json).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CONFIG_VERSION = 1


class NetworkSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow_remote_requests: bool = False
    allowed_endpoints: list[str] = Field(default_factory=list)
    auth_env: str | None = None


class QuerySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    endpoint: str | None = None
    model_dir: str | None = None


class RerankerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provider: str = "none"
    model: str | None = None
    endpoint: str | None = None
    factory: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class RuntimeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Literal[1] = 1
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    query: QuerySettings = Field(default_factory=QuerySettings)
    reranker: RerankerSettings = Field(default_factory=RerankerSettings)
