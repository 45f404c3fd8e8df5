"""Checks of a package's index.sqlite: schema, meta table, counts, and (via
package_vectors) every vector blob.

The file is only ever opened through `connect_readonly` (mode=ro&immutable=1): SQLite takes
no lock and writes no -wal/-shm/-journal file beside it, and a package's bytes never change.
No SQL from the package is run; only our own fixed queries read it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from book_agent.domain.book.package import SUPPORTED_SCHEMA_VERSIONS
from book_agent.domain.diagnostics import Diagnostic
from book_agent_adapters.files.sqlite_readonly import connect_readonly
from book_agent_adapters.package.manifest_checks import version_supported
from book_agent_adapters.package.record_checks import check_records, duplicates
from book_agent_adapters.package.vector_blob_checks import check_vectors

REL = "index.sqlite"
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "meta": ("key", "value"),
    "records": ("record_id", "seq", "text", "headings", "md_start", "md_end", "source"),
    "vectors": ("record_id", "embedding"),
}
REQUIRED_META = ("schema_version", "book_id", "record_count")


def check_database(
    database_path: Path, vector_manifest: dict[str, Any] | None, book_id: str | None,
    original_kind: str | None = None,
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The meta table (key -> text value) and every diagnostic about the database.

    `vector_manifest` is the parsed vectors.json (None when absent or unusable); `book_id`
    the manifest's (None to skip that comparison); `original_kind` pdf/epub, which every
    record's source.kind must match (None: not compared). Never raises for a bad database: an
    unreadable file is a `package.database_unreadable` diagnostic.
    """
    try:
        con = connect_readonly(Path(database_path))
    except sqlite3.Error as exc:
        return {}, [_unreadable(exc)]
    try:
        con.execute("PRAGMA trusted_schema = OFF")  # no side-effect functions from the schema
        return _check(con, vector_manifest, book_id, original_kind)
    except sqlite3.Error as exc:  # "file is not a database", "database disk image is malformed"
        return {}, [_unreadable(exc)]
    finally:
        con.close()


def _check(
    con: sqlite3.Connection, vm: dict[str, Any] | None, book_id: str | None, kind: str | None
) -> tuple[dict[str, Any], list[Diagnostic]]:
    out = _check_schema(con)
    bad_tables = {d.details["table"] for d in out}
    meta: dict[str, Any] = {}
    if "meta" not in bad_tables:
        meta = {str(k): str(v) for k, v in con.execute("SELECT key, value FROM meta")}
        out += _check_meta(meta, book_id)
    n_records: int | None = None
    if "records" not in bad_tables:
        n_records = int(con.execute("SELECT count(*) FROM records").fetchone()[0])
        out += _check_counts(meta, vm, n_records)
        out += check_records(con, kind)
    if "vectors" in bad_tables:
        return meta, out
    dims = _int(vm.get("dimensions")) if vm is not None else None
    out += _check_vector_meta(meta, vm)
    if dims is None or dims <= 0:
        dims = _int(meta.get("embedding_dimensions"))
    out += check_vectors(con, dims, records_ok=n_records is not None, has_manifest=vm is not None)
    out += duplicates(con, "vectors", "record_id", "package.record_id_duplicate")
    return meta, out


def _check_schema(con: sqlite3.Connection) -> list[Diagnostic]:
    # Only plain tables: a view or virtual table would run the package's own SQL (or an
    # extension module) on every read, and a recursive view could loop for ever.
    kinds = {
        str(name): "virtual table" if str(sql or "").lstrip().upper().startswith("CREATE VIRTUAL") else str(kind)
        for name, kind, sql in con.execute("SELECT name, type, sql FROM sqlite_master")
    }
    out: list[Diagnostic] = []
    for table, columns in REQUIRED_COLUMNS.items():
        kind = kinds.get(table)
        if kind != "table":
            what = f"has no {table} table" if kind is None else f"has {table} as a {kind}, not a table"
            out.append(_schema(table, f"{REL} {what}", missing_columns=list(columns)))
            continue
        present = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
        missing = [c for c in columns if c not in present]
        if missing:
            out.append(_schema(table, f"{REL}: table {table} lacks column(s) {', '.join(missing)}",
                               missing_columns=missing))
    return out


def _check_meta(meta: dict[str, Any], book_id: str | None) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        out.append(Diagnostic("package.database_schema_invalid",
                              f"{REL}: meta lacks required key(s) {', '.join(missing)}", "error",
                              {"path": REL, "table": "meta", "missing_keys": missing}))
    version = meta.get("schema_version")
    if version is not None and not version_supported(version):
        out.append(Diagnostic("package.schema_version_unsupported",
                              f"{REL}: meta schema_version {version!r} is not supported "
                              f"(supported: {', '.join(SUPPORTED_SCHEMA_VERSIONS)})", "error",
                              {"path": REL, "schema_version": version,
                               "supported": list(SUPPORTED_SCHEMA_VERSIONS)}))
    if book_id is not None and "book_id" in meta and meta["book_id"] != book_id:
        out.append(_mismatch("book_id", meta["book_id"], book_id, "book-package.json"))
    if "record_count" in meta and (_int(meta["record_count"]) is None or int(meta["record_count"]) < 0):
        out.append(Diagnostic("package.database_schema_invalid",
                              f"{REL}: meta record_count {meta['record_count']!r} is not a non-negative integer",
                              "error", {"path": REL, "table": "meta", "key": "record_count"}))
    return out


def _check_counts(meta: dict[str, Any], vm: dict[str, Any] | None, n_records: int) -> list[Diagnostic]:
    claims = [(f"{REL} meta record_count", _int(meta.get("record_count")))]
    if vm is not None:
        claims.append(("vectors.json record_count", _int(vm.get("record_count"))))
    return [
        Diagnostic("package.record_count_mismatch",
                   f"{where} is {claimed} but the records table has {n_records} rows", "error",
                   {"source": where, "claimed": claimed, "actual": n_records})
        for where, claimed in claims
        if claimed is not None and claimed != n_records
    ]


def _check_vector_meta(meta: dict[str, Any], vm: dict[str, Any] | None) -> list[Diagnostic]:
    if vm is None:
        return []
    out: list[Diagnostic] = []
    if "embedding_model" in meta and meta["embedding_model"] != vm.get("model"):
        out.append(_mismatch("embedding_model", meta["embedding_model"], vm.get("model"), "vectors.json model"))
    if "embedding_dimensions" in meta and _int(meta["embedding_dimensions"]) != _int(vm.get("dimensions")):
        out.append(_mismatch("embedding_dimensions", meta["embedding_dimensions"], vm.get("dimensions"),
                             "vectors.json dimensions"))
    return out


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _mismatch(key: str, in_meta: Any, other: Any, where: str) -> Diagnostic:
    return Diagnostic("package.meta_mismatch", f"{REL}: meta {key} is {in_meta!r} but {where} is {other!r}",
                      "error", {"path": REL, "key": key, "meta": in_meta, "expected": other, "source": where})


def _schema(table: str, message: str, **details: Any) -> Diagnostic:
    return Diagnostic("package.database_schema_invalid", message, "error", {"path": REL, "table": table, **details})


def _unreadable(exc: sqlite3.Error) -> Diagnostic:
    return Diagnostic("package.database_unreadable", f"{REL} cannot be read as SQLite: {exc}", "error",
                      {"path": REL, "reason": str(exc)})
