"""The collections the Milvus backend makes, and the filter expressions it sends.

Milvus wants a vector field in every collection and an index on it before loading: the
catalog's and the term table's is a constant 2-d vector under a FLAT index, never searched.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from book_agent.domain.errors import BookAgentError
from book_agent_adapters.library.milvus.engine import MilvusEngine, import_pymilvus

CATALOG_VECTOR = [0.0, 1.0]  # the constant vector of the catalog's (and term table's) rows
PAGE = 1000  # rows per page of a query iterator, per batch of writes
QUERY_LIMIT = 16384  # rows one query returns at most (the server's limit on offset + limit)
KEY_MAX = 1024
BODY_MAX = 65535
BOOK_MAX = 512
EVIDENCE_MAX = 2048
# A record's upsert is a delete and an insert: a read between the two finds no row (milvus-lite: a
# third of the reads racing an upsert of the same key), so an absent record is believed only when
# this many reads, this far apart, agree (its writers upsert it at most every few seconds)
EMPTY_READS = 3
EMPTY_READ_GAP_S = 0.05


def expression(template: str, **values: object) -> str:
    """A filter with its string values quoted as JSON (Milvus's string literals read the same
    escapes), so a book id can never change the expression's meaning."""
    return template.format(**{k: json.dumps(v, ensure_ascii=False) for k, v in values.items()})


def read_catalog_record(engine: MilvusEngine, collection: str, key: str, what: str) -> tuple[list[Any], float]:
    """The rows (at most one) of catalog record `key` with their `body`, read Strong; and when the
    read that decided started (monotonic). No rows only when EMPTY_READS reads agree."""
    rows: list[Any] = []
    started = time.monotonic()
    for attempt in range(EMPTY_READS):
        if attempt:
            time.sleep(EMPTY_READ_GAP_S)
        started = time.monotonic()
        rows = engine.call(what, lambda c: c.query(collection, filter=expression("key == {k}", k=key),
                                                   output_fields=["body"], consistency_level="Strong",
                                                   timeout=engine.settings.timeout_s))
        if rows:
            break
    return rows, started


def create_catalog(engine: MilvusEngine, name: str) -> None:
    """The prefix's catalog (pointer and member records), unless it is there."""
    if engine.call("has_collection", lambda c: c.has_collection(name)):
        return
    data_type = import_pymilvus().DataType

    def create(client: Any) -> None:
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("key", data_type.VARCHAR, is_primary=True, max_length=KEY_MAX)
        schema.add_field("channel", data_type.VARCHAR, max_length=KEY_MAX)
        schema.add_field("kind", data_type.VARCHAR, max_length=16)
        schema.add_field("body", data_type.VARCHAR, max_length=BODY_MAX)
        schema.add_field("v", data_type.FLOAT_VECTOR, dim=len(CATALOG_VECTOR))
        index = client.prepare_index_params()
        index.add_index("v", index_type="FLAT", metric_type="L2")
        scalar_indexes(index, "channel", "kind")
        client.create_collection(name, schema=schema, index_params=index,  # made, indexed and loaded: slow
                                 consistency_level="Strong", timeout=max(60.0, engine.settings.timeout_s))
    try:
        engine.call("create catalog", create)
    except BookAgentError:  # two writers' first builds race to create it: the loser finds it made
        if not engine.call("has_collection", lambda c: c.has_collection(name)):
            raise


def scalar_indexes(index: Any, *fields: str) -> None:
    """An index on each scalar field a filter names, of the server's default type for it (a
    trie or sorted list on 2.3, inverted on 2.5+: no type names one every version accepts)."""
    for name in fields:
        index.add_index(name, index_type="", index_name=f"{name}_idx")


def create_rows_collection(engine: MilvusEngine, name: str, add_vector_field: Callable[[Any, Any], None],
                           add_vector_index: Callable[[Any], None]) -> None:
    """A channel's rows: evidence id, book, member hash, the generation that added it, its vector.
    A collection the server made but whose indexes or load it refused is the caller's to drop
    (ledger.Ledger.build discards it)."""
    data_type = import_pymilvus().DataType
    partitioned = engine.partitioned()

    def create(client: Any) -> None:
        schema = client.create_schema(auto_id=True, enable_dynamic_field=False)
        schema.add_field("id", data_type.INT64, is_primary=True)
        schema.add_field("evidence", data_type.VARCHAR, max_length=EVIDENCE_MAX)
        # partitioned by book: a search narrowed to some books reads their partitions only
        schema.add_field("book_id", data_type.VARCHAR, max_length=BOOK_MAX, is_partition_key=partitioned)
        schema.add_field("member", data_type.VARCHAR, max_length=64)
        schema.add_field("added", data_type.INT64)
        add_vector_field(schema, data_type)
        index = client.prepare_index_params()
        add_vector_index(index)
        scalar_indexes(index, "book_id", "member", "added")  # every reader filters on them
        extra = {"num_shards": engine.settings.shards} if engine.settings.shards > 1 else {}
        client.create_collection(name, schema=schema, index_params=index, consistency_level="Strong",
                                 timeout=max(60.0, engine.settings.timeout_s), **extra)
        if engine.settings.replicas > 1:  # created loaded with one replica: load it again with more
            client.release_collection(name, timeout=max(60.0, engine.settings.timeout_s))
            client.load_collection(name, replica_number=engine.settings.replicas,
                                   timeout=max(600.0, engine.settings.timeout_s))
    engine.call("create collection", create)
