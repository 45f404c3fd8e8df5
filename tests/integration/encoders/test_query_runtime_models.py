"""resolve_query_runtime on a real package, and QueryRuntime serving a real (tiny) local model;
the rest of the query runtime's rules are unit tests (tests/unit/test_query_runtime.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from book_agent.domain.book.package import PackageInfo
from book_agent.domain.book.query_runtime_spec import resolve_query_runtime
from book_agent_adapters.encoders.query_runtime import QueryRuntime
from tests.support import tiny_bert
from tests.support.package_builder import build_package
from tests.unit.test_query_runtime import spec


def test_spec_from_a_real_package(tmp_path: Path) -> None:
    root = build_package(tmp_path / "pkg", kind="epub", provider="siliconflow", model="BAAI/bge-m3",
                         dims=8, languages=["zh", "en"], query_instruction="q: ")
    vectors = json.loads((root / "vectors.json").read_text(encoding="utf-8"))
    info = PackageInfo(book_id="test-book", title=None, root=root, original_path=None, markdown_path=None,
                       skill_path=None, database_path=root / "index.sqlite", archive_manifest=None,
                       vector_manifest=vectors)
    spec = resolve_query_runtime(info, {"embedding_model": "BAAI/bge-m3", "embedding_dimensions": "8"})
    assert spec["provider"] == "siliconflow" and spec["model"] == "BAAI/bge-m3"
    assert spec["dimensions"] == 8 and spec["metric"] == "cosine" and spec["normalized"] is True
    assert spec["query_instruction"] == "q: "
    assert spec["languages"] == ["zh", "en"] and spec["language_coverage"] == "declared"
    assert spec["endpoint_hint"] == "https://api.siliconflow.cn/v1/embeddings"
    assert spec["endpoint_source"] == "provider-default"
    assert spec["diagnostics"] == [] and spec["vector_channel_available"] is True
    assert resolve_query_runtime(info.to_dict()) == resolve_query_runtime(info)
    json.dumps(spec)  # plain data


def test_a_real_local_model_serves_a_remotely_built_book(tmp_path: Path) -> None:
    folder = tiny_bert.write_tiny_model(tmp_path / "tiny")
    config = {"query": {"model_dir": str(folder)}}  # remote requests stay off
    runtime = QueryRuntime(spec(provider="siliconflow", model="acme/tiny-bert", dimensions=16), config)
    first = runtime.encode_query("the art of war")
    again = runtime.encode_query("the art of war")
    other = runtime.encode_query("numbers and symbols")
    assert first.status == "ok" and first.route is not None and first.route.startswith("local:")
    assert first.vector is not None and again.vector is not None and other.vector is not None
    assert first.vector.shape == (16,) and abs(float(np.linalg.norm(first.vector)) - 1) < 1e-5
    np.testing.assert_array_equal(first.vector, again.vector)
    assert not np.allclose(first.vector, other.vector)
