"""Checks of the two manifests' contents: book-package.json and vectors.json.

Pure rules over parsed JSON (no file access): schema and version, book_id, the shape of
the `files` entries, and the vector manifest's fields. Unknown keys are kept in the
manifest and reported as info, so a newer pipeline's additions never break a package.
"""

from __future__ import annotations

import re
from typing import Any

from book_agent.domain.book.package import PACKAGE_SCHEMA, SUPPORTED_SCHEMA_VERSIONS, VECTORS_SCHEMA
from book_agent.domain.diagnostics import Diagnostic
from book_agent.domain.network import endpoint_problem
from book_agent.domain.providers import METRICS, PROVIDERS

BOOK_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")
REQUIRED_FILES = ("original", "markdown", "skill", "database")
OPTIONAL_FILES = ("vector_manifest",)
PACKAGE_KEYS = frozenset(
    {"schema", "schema_version", "book_id", "title", "authors", "language", "created_at",
     "generator", "files", "extra_files"}
)
VECTOR_KEYS = frozenset(
    {"schema", "schema_version", "provider", "model", "dimensions", "dtype", "normalized",
     "metric", "query_instruction", "languages", "record_count", "endpoint"}
)


def check_schema(data: dict[str, Any], expected: str, rel: str) -> list[Diagnostic]:
    """schema and schema_version; a version is supported when its major.minor is."""
    out: list[Diagnostic] = []
    schema = data.get("schema")
    if schema != expected:
        out.append(Diagnostic(
            "package.schema_unsupported",
            f"{rel}: schema is {schema!r}, expected {expected!r}",
            "error", {"path": rel, "schema": schema, "expected": expected},
        ))
    version = data.get("schema_version")
    if not version_supported(version):
        supported = ", ".join(SUPPORTED_SCHEMA_VERSIONS)
        out.append(Diagnostic(
            "package.schema_version_unsupported",
            f"{rel}: schema_version {version!r} is not supported (supported: {supported})",
            "error",
            {"path": rel, "schema_version": version, "supported": list(SUPPORTED_SCHEMA_VERSIONS)},
        ))
    return out


def version_supported(version: Any) -> bool:
    """A "major.minor" string (a ".patch" suffix allowed) whose major.minor we read."""
    match = _VERSION.fullmatch(version) if isinstance(version, str) else None
    return match is not None and f"{match[1]}.{match[2]}" in SUPPORTED_SCHEMA_VERSIONS


def valid_book_id(value: Any) -> bool:
    return isinstance(value, str) and BOOK_ID.fullmatch(value) is not None


def unknown_keys(data: dict[str, Any], known: frozenset[str], rel: str, prefix: str = "") -> list[Diagnostic]:
    return [
        Diagnostic(
            "package.unknown_key",
            f"{rel}: unknown key {prefix}{key!r} is kept but not used",
            "info", {"path": rel, "key": f"{prefix}{key}"},
        )
        for key in sorted(data, key=str)
        if key not in known
    ]


def check_archive_manifest(manifest: dict[str, Any], rel: str) -> list[Diagnostic]:
    """Everything about book-package.json that needs no file: see contracts/package-inspection.md."""
    out = check_schema(manifest, PACKAGE_SCHEMA, rel)
    book_id = manifest.get("book_id")
    if not valid_book_id(book_id):
        out.append(Diagnostic(
            "package.bad_book_id",
            f"{rel}: book_id {book_id!r} must be 1-64 characters of [a-z0-9][a-z0-9._-]*",
            "error", {"path": rel, "book_id": book_id},
        ))
    out.extend(unknown_keys(manifest, PACKAGE_KEYS, rel))
    files = manifest.get("files")
    if not isinstance(files, dict):
        out.append(_entry_invalid(rel, "files", "files must be an object of file entries"))
        files = {}
    for name in REQUIRED_FILES:
        if name not in files:
            out.append(Diagnostic(
                "package.manifest_entry_missing",
                f"{rel}: files.{name} is required but missing",
                "error", {"path": rel, "entry": f"files.{name}"},
            ))
    out.extend(unknown_keys(files, frozenset(REQUIRED_FILES + OPTIONAL_FILES), rel, "files."))
    extra = manifest.get("extra_files", [])
    if not isinstance(extra, list):
        out.append(_entry_invalid(rel, "extra_files", "extra_files must be a list of file entries"))
    return out


def file_entries(manifest: dict[str, Any]) -> list[tuple[str, Any]]:
    """(entry name, raw entry) for every file the manifest lists, in a stable order."""
    files = manifest.get("files")
    entries = [(f"files.{k}", v) for k, v in files.items()] if isinstance(files, dict) else []
    extra = manifest.get("extra_files")
    if isinstance(extra, list):
        entries += [(f"extra_files[{i}]", v) for i, v in enumerate(extra)]
    return entries


def _has_credentials(url: str) -> bool:
    problem = endpoint_problem(url)
    return problem is not None and problem[0] == "config.endpoint_credentials"


def check_vector_manifest(vectors: dict[str, Any], rel: str) -> list[Diagnostic]:
    """Fields of vectors.json: the model and its vector shape that queries must match."""
    out = check_schema(vectors, VECTORS_SCHEMA, rel)
    problems: list[tuple[str, str]] = []

    def need(key: str, ok: bool, rule: str) -> None:
        if not ok:
            problems.append((key, rule))

    v = vectors.get
    need("provider", v("provider") in PROVIDERS, f"one of {', '.join(PROVIDERS)}")
    model = v("model")
    need("model", isinstance(model, str) and bool(model.strip()), "a non-empty string")
    need("dimensions", _positive_int(v("dimensions")), "a positive integer")
    need("dtype", v("dtype") == "float32", "'float32'")
    need("metric", v("metric") in METRICS, f"one of {', '.join(METRICS)}")
    need("record_count", _count(v("record_count")), "a non-negative integer")
    need("normalized", "normalized" not in vectors or isinstance(v("normalized"), bool), "true or false")
    need("query_instruction", isinstance(v("query_instruction", ""), str), "a string")
    endpoint = v("endpoint")
    need("endpoint", endpoint is None or (isinstance(endpoint, str) and not _has_credentials(endpoint)),
         "a string URL without credentials (no user:password@, no key parameter)")
    languages = v("languages")
    need("languages", languages is None or (isinstance(languages, list) and all(isinstance(x, str) for x in languages)),
         "a list of BCP-47 strings")
    for key, rule in problems:
        value = "(withheld)" if key == "endpoint" else vectors.get(key)  # it may hold a secret
        out.append(Diagnostic(
            "package.vectors_manifest_invalid",
            f"{rel}: {key} is {value!r}; it must be {rule}",
            "error", {"path": rel, "key": key, "value": value, "rule": rule},
        ))
    out.extend(unknown_keys(vectors, VECTOR_KEYS, rel))
    return out


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry_invalid(rel: str, entry: str, reason: str) -> Diagnostic:
    return Diagnostic("package.manifest_entry_invalid", f"{rel}: {reason}", "error",
                      {"path": rel, "entry": entry, "reason": reason})
