"""What a book needs to encode a query: the package's model, never one the user picks.

`resolve_query_runtime(package, sqlite_metadata=None)` reads the vector manifest
(vectors.json) and returns `QueryRuntimeSpec(...).to_dict()`: provider, model, dimensions,
metric, normalisation, query instruction, languages (declared, else known for the model,
else unknown) and an endpoint hint, with diagnostics for anything that disagrees. It does
no I/O: the caller passes the database's meta table when it has read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.providers import DEFAULT_ENDPOINTS, METRICS, PROVIDERS, REMOTE_PROVIDERS

# BCP-47 "mul" marks a multilingual model; the codes after it are the ones we can vouch for.
MULTILINGUAL: tuple[str, ...] = (
    "mul", "zh", "en", "ja", "ko", "fr", "de", "es", "pt", "it", "ru", "ar", "hi", "vi", "th",
)
# Bare model name (lower case, without the organisation prefix) -> languages it handles well.
KNOWN_MODEL_LANGUAGES: dict[str, tuple[str, ...]] = {
    "all-minilm-l6-v2": ("en",),
    "bge-small-en-v1.5": ("en",),
    "bge-base-en-v1.5": ("en",),
    "bge-large-en-v1.5": ("en",),
    "bge-small-zh-v1.5": ("zh",),
    "bge-base-zh-v1.5": ("zh",),
    "bge-large-zh-v1.5": ("zh",),
    "bge-m3": MULTILINGUAL,
    "text-embedding-3-small": MULTILINGUAL,
    "text-embedding-3-large": MULTILINGUAL,
}


def known_languages(model: str | None) -> list[str] | None:
    """Languages of a known model, matched on its last path part ("Pro/BAAI/bge-m3" too)."""
    if not model:
        return None
    bare = model.strip().rstrip("/").rsplit("/", 1)[-1].lower()
    found = KNOWN_MODEL_LANGUAGES.get(bare)
    return list(found) if found is not None else None


class QueryRuntimeSpecDict(TypedDict):
    """QueryRuntimeSpec.to_dict(): what `resolve_query_runtime` returns."""

    provider: str | None
    model: str | None
    dimensions: int | None
    metric: str
    normalized: bool
    query_instruction: str
    languages: list[str] | None
    language_coverage: str
    endpoint_hint: str | None
    endpoint_source: str | None
    vector_channel_available: bool
    diagnostics: list[dict[str, Any]]


@dataclass
class QueryRuntimeSpec:
    """The query side of a book, as the package dictates it (the model is not a setting)."""

    provider: str | None
    model: str | None
    dimensions: int | None
    metric: str = "cosine"
    normalized: bool = True
    query_instruction: str = ""
    languages: list[str] | None = None
    language_coverage: str = "unknown"  # declared | known-model | unknown
    endpoint_hint: str | None = None
    endpoint_source: str | None = None  # manifest | provider-default
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def vector_channel_available(self) -> bool:
        return self.provider is not None and self.model is not None and bool(self.dimensions)

    @property
    def is_remote(self) -> bool:
        return self.provider in REMOTE_PROVIDERS

    def to_dict(self) -> QueryRuntimeSpecDict:
        return {
            "provider": self.provider,
            "model": self.model,
            "dimensions": self.dimensions,
            "metric": self.metric,
            "normalized": self.normalized,
            "query_instruction": self.query_instruction,
            "languages": list(self.languages) if self.languages is not None else None,
            "language_coverage": self.language_coverage,
            "endpoint_hint": self.endpoint_hint,
            "endpoint_source": self.endpoint_source,
            "vector_channel_available": self.vector_channel_available,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryRuntimeSpec:
        languages = data.get("languages")
        dims = data.get("dimensions")
        return cls(
            provider=data.get("provider"),
            model=data.get("model"),
            dimensions=int(dims) if dims is not None else None,
            metric=str(data.get("metric") or "cosine"),
            normalized=bool(data.get("normalized", True)),
            query_instruction=str(data.get("query_instruction") or ""),
            languages=[str(x) for x in languages] if languages is not None else None,
            language_coverage=str(data.get("language_coverage") or "unknown"),
            endpoint_hint=data.get("endpoint_hint"),
            endpoint_source=data.get("endpoint_source"),
            diagnostics=[Diagnostic.from_dict(d) for d in data.get("diagnostics") or []],
        )


def _vector_manifest(package: PackageInfo | Mapping[str, Any]) -> Mapping[str, Any] | None:
    if isinstance(package, PackageInfo):
        return package.vector_manifest
    if isinstance(package, Mapping):
        if package.get("schema") == "book-agent.vectors":  # the manifest itself
            return package
        manifest = package.get("vector_manifest")
        return manifest if isinstance(manifest, Mapping) else None
    raise TypeError(f"package must be a PackageInfo or a dict, not {type(package).__name__}")


def resolve_query_runtime(
    package: PackageInfo | Mapping[str, Any],
    sqlite_metadata: Mapping[str, Any] | None = None,
) -> QueryRuntimeSpecDict:
    """The book's query runtime as a dict (see QueryRuntimeSpec.to_dict)."""
    manifest = _vector_manifest(package)
    if manifest is None:
        return QueryRuntimeSpec(
            provider=None, model=None, dimensions=None,
            diagnostics=[Diagnostic(
                "query.no_vector_manifest",
                "The package has no vector manifest (vectors.json): the vector channel cannot run; "
                "lexical search still works.",
                "warning",
            )],
        ).to_dict()
    return _spec_from_manifest(manifest, sqlite_metadata or {}).to_dict()


def _spec_from_manifest(manifest: Mapping[str, Any], meta: Mapping[str, Any]) -> QueryRuntimeSpec:
    diagnostics: list[Diagnostic] = []
    provider = manifest.get("provider")
    model = manifest.get("model")
    dimensions = _int_or_none(manifest.get("dimensions"))
    metric = str(manifest.get("metric") or "cosine")
    if provider not in PROVIDERS:
        diagnostics.append(Diagnostic(
            "query.unknown_provider", f"vectors.json names an unknown provider {provider!r}.",
            details={"provider": provider, "supported": list(PROVIDERS)},
        ))
    if not isinstance(model, str) or not model.strip() or not dimensions or dimensions <= 0:
        diagnostics.append(Diagnostic(
            "query.manifest_invalid", "vectors.json must name a model and positive dimensions.",
            details={"model": model, "dimensions": manifest.get("dimensions")},
        ))
    if metric not in METRICS:
        diagnostics.append(Diagnostic(
            "query.manifest_invalid", f"vectors.json names an unknown metric {metric!r}.",
            details={"metric": metric, "supported": list(METRICS)},
        ))
    diagnostics.extend(_meta_disagreements(model, dimensions, meta))

    languages, coverage = _languages(manifest.get("languages"), model)
    if coverage == "unknown":
        diagnostics.append(Diagnostic(
            "query.language_coverage_unknown",
            f"Which languages the model {model!r} handles is unknown; results for queries in "
            "another language than the book may be poor.", "info",
        ))
    endpoint = manifest.get("endpoint")
    endpoint_source: str | None = "manifest" if endpoint else None
    if not endpoint and isinstance(provider, str) and provider in DEFAULT_ENDPOINTS:
        endpoint, endpoint_source = DEFAULT_ENDPOINTS[provider], "provider-default"
    return QueryRuntimeSpec(
        provider=provider if isinstance(provider, str) else None,
        model=model.strip() if isinstance(model, str) else None,
        dimensions=dimensions,
        metric=metric,
        normalized=bool(manifest.get("normalized", True)),
        query_instruction=str(manifest.get("query_instruction") or ""),
        languages=languages,
        language_coverage=coverage,
        endpoint_hint=str(endpoint) if endpoint else None,
        endpoint_source=endpoint_source,
        diagnostics=diagnostics,
    )


def _meta_disagreements(
    model: Any, dimensions: int | None, meta: Mapping[str, Any]
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    meta_model = meta.get("embedding_model")
    if meta_model is not None and str(meta_model) != model:
        out.append(Diagnostic(
            "query.model_disagrees",
            f"vectors.json says model {model!r} but the database says {meta_model!r}.",
            details={"vectors_json": model, "database": meta_model},
        ))
    meta_dims = meta.get("embedding_dimensions")
    if meta_dims is not None and _int_or_none(meta_dims) != dimensions:
        out.append(Diagnostic(
            "query.dimensions_disagree",
            f"vectors.json says {dimensions} dimensions but the database says {meta_dims}.",
            details={"vectors_json": dimensions, "database": meta_dims},
        ))
    return out


def _languages(declared: Any, model: Any) -> tuple[list[str] | None, str]:
    if isinstance(declared, list) and declared:
        return [str(x) for x in declared], "declared"
    known = known_languages(model if isinstance(model, str) else None)
    if known is not None:
        return known, "known-model"
    return None, "unknown"


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
