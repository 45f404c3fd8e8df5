"""resolve_query_runtime (the spec from a vector manifest) and QueryRuntime's route choice, with
fake encoders; on a real package and a real model: tests/integration/encoders/test_query_runtime_models.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from book_agent.domain.book.query_runtime_spec import (
    QueryRuntimeSpec,
    known_languages,
    resolve_query_runtime,
)
from book_agent.domain.book.runtime_config import RuntimeConfig
from book_agent.domain.errors import BookAgentError, QueryRuntimeError
from book_agent_adapters.encoders.query_runtime import QueryRuntime

MANIFEST: dict[str, Any] = {
    "schema": "book-agent.vectors", "schema_version": "0.1", "provider": "siliconflow",
    "model": "BAAI/bge-m3", "dimensions": 4, "dtype": "float32", "normalized": True,
    "metric": "cosine", "query_instruction": "", "record_count": 3,
}


def manifest(**changes: Any) -> dict[str, Any]:
    data = {**MANIFEST, **changes}
    return {k: v for k, v in data.items() if v is not None}


def codes(spec: dict[str, Any]) -> set[str]:
    return {d["code"] for d in spec["diagnostics"]}


# -- resolve_query_runtime ---------------------------------------------------------------


@pytest.mark.parametrize(("model", "expected"), [
    ("sentence-transformers/all-MiniLM-L6-v2", ["en"]),
    ("all-MiniLM-L6-v2", ["en"]),
    ("BAAI/bge-small-en-v1.5", ["en"]),
    ("BAAI/bge-large-en-v1.5", ["en"]),
    ("BAAI/bge-base-zh-v1.5", ["zh"]),
    ("BAAI/bge-large-zh-v1.5", ["zh"]),
])
def test_known_model_languages(model: str, expected: list[str]) -> None:
    spec = resolve_query_runtime({"vector_manifest": manifest(model=model)})
    assert spec["languages"] == expected and spec["language_coverage"] == "known-model"


@pytest.mark.parametrize("model", ["BAAI/bge-m3", "Pro/BAAI/bge-m3", "text-embedding-3-small",
                                   "text-embedding-3-large"])
def test_multilingual_models(model: str) -> None:
    languages = known_languages(model)
    assert languages is not None and {"mul", "zh", "en", "ja"} <= set(languages)


def test_unknown_model_has_unknown_coverage() -> None:
    spec = resolve_query_runtime(manifest(model="acme/secret-embedder-v9", endpoint="https://x.test/v1/e"))
    assert spec["languages"] is None and spec["language_coverage"] == "unknown"
    assert "query.language_coverage_unknown" in codes(spec)
    assert spec["endpoint_hint"] == "https://x.test/v1/e" and spec["endpoint_source"] == "manifest"


def test_manifest_languages_win_over_the_table() -> None:
    spec = resolve_query_runtime(manifest(model="BAAI/bge-small-en-v1.5", languages=["de"]))
    assert spec["languages"] == ["de"] and spec["language_coverage"] == "declared"


def test_disagreements_with_the_database_meta() -> None:
    spec = resolve_query_runtime(manifest(), {"embedding_model": "BAAI/bge-large-zh-v1.5",
                                              "embedding_dimensions": "1024"})
    assert {"query.model_disagrees", "query.dimensions_disagree"} <= codes(spec)
    assert spec["model"] == "BAAI/bge-m3"  # the manifest is what the runtime uses


def test_no_vector_manifest() -> None:
    spec = resolve_query_runtime({"vector_manifest": None})
    assert spec["provider"] is None and spec["vector_channel_available"] is False
    assert codes(spec) == {"query.no_vector_manifest"}


@pytest.mark.parametrize(("changes", "code"), [
    ({"provider": "acme"}, "query.unknown_provider"),
    ({"dimensions": 0}, "query.manifest_invalid"),
    ({"model": ""}, "query.manifest_invalid"),
    ({"metric": "l2"}, "query.manifest_invalid"),
])
def test_invalid_manifests(changes: dict[str, Any], code: str) -> None:
    assert code in codes(resolve_query_runtime(manifest(**changes)))


def test_spec_round_trips() -> None:
    spec = resolve_query_runtime(manifest(), {"embedding_model": "other"})
    assert QueryRuntimeSpec.from_dict(spec).to_dict() == spec


# -- QueryRuntime ------------------------------------------------------------------------

class FakeEncoder:
    def __init__(self, route: str, vector: list[float] | None = None, error: str | None = None) -> None:
        self.route = route
        self.vector = vector
        self.error = error
        self.calls: list[str] = []

    def encode(self, text: str) -> Any:
        self.calls.append(text)
        if self.error:
            raise QueryRuntimeError(self.error, f"fake failure {self.error}", remediation="fix it")
        return np.asarray(self.vector, dtype=np.float32)


def spec(**changes: Any) -> dict[str, Any]:
    return resolve_query_runtime(manifest(**changes))


def test_local_provider_uses_the_local_encoder_and_normalises() -> None:
    local = FakeEncoder("local:fake", [3.0, 0.0, 4.0, 0.0])
    result = QueryRuntime(spec(provider="local"), None, encoders={"local": local}).encode_query("rivers")
    assert result.status == "ok" and result.route == "local:fake" and local.calls == ["rivers"]
    assert result.vector is not None
    np.testing.assert_allclose(result.vector, [0.6, 0.0, 0.8, 0.0], rtol=1e-6)
    assert result.to_dict()["vector"] == pytest.approx([0.6, 0.0, 0.8, 0.0])


def test_dot_metric_with_unnormalised_vectors_keeps_the_length() -> None:
    local = FakeEncoder("local:fake", [3.0, 0.0, 4.0, 0.0])
    result = QueryRuntime(spec(provider="local", metric="dot", normalized=False), None,
                          encoders={"local": local}).encode_query("q")
    assert result.vector is not None
    np.testing.assert_allclose(result.vector, [3.0, 0.0, 4.0, 0.0])


def test_remote_blocked_falls_back_to_a_present_local_model() -> None:
    local = FakeEncoder("local:fake", [1.0, 0.0, 0.0, 0.0])
    result = QueryRuntime(spec(), {"network": {"allow_remote_requests": False}},
                          encoders={"local": local}).encode_query("q")
    assert result.status == "ok" and result.route == "local:fake"
    assert "query.remote_skipped" in {d.code for d in result.diagnostics}


def test_remote_failure_falls_back_to_local() -> None:
    remote = FakeEncoder("remote:fake", error="query.timeout")
    local = FakeEncoder("local:fake", [1.0, 0.0, 0.0, 0.0])
    result = QueryRuntime(spec(), None, encoders={"remote": remote, "local": local}).encode_query("q")
    assert result.status == "ok" and result.route == "local:fake" and remote.calls == ["q"]
    failed = [d for d in result.diagnostics if d.code == "query.route_failed"]
    assert failed and failed[0].details["code"] == "query.timeout"


@pytest.mark.parametrize(("vector", "code"), [([1.0, 2.0, 3.0], "query.dimension_mismatch"),
                                              ([1.0, float("nan"), 0.0, 0.0], "query.bad_response")])
def test_an_encoder_returning_a_bad_vector_is_unavailable(vector: list[float], code: str) -> None:
    local = FakeEncoder("local:fake", vector)
    result = QueryRuntime(spec(provider="local"), None, encoders={"local": local}).encode_query("q")
    assert result.status == "unavailable" and result.vector is None
    assert result.error is not None and result.error["code"] == code


def test_local_model_missing_names_the_fix() -> None:
    result = QueryRuntime(spec(provider="local", model="test/not-on-this-machine"), RuntimeConfig()).encode_query("q")
    assert result.status == "unavailable"
    assert result.error is not None and result.error["code"] == "query.local_model_missing"
    assert "model_dir" in result.error["remediation"]


def test_no_vector_manifest_is_unavailable() -> None:
    result = QueryRuntime(resolve_query_runtime({"vector_manifest": None})).encode_query("q")
    assert result.status == "unavailable" and result.error is not None
    assert result.error["code"] == "query.unavailable"


def test_user_supplied_vector_needs_no_encoder() -> None:
    runtime = QueryRuntime(spec(), None, encoders={"local": FakeEncoder("x", error="query.never")})
    result = runtime.encode_query("ignored", query_vector=[0.0, 2.0, 0.0, 0.0])
    assert result.status == "user-supplied-unverified" and result.route == "user-supplied"
    assert result.vector is not None
    np.testing.assert_allclose(result.vector, [0.0, 1.0, 0.0, 0.0])
    assert "query.vector_unverified" in {d.code for d in result.diagnostics}
    assert runtime.accept_query_vector(np.array([0, 0, 0, 5.0])).status == "user-supplied-unverified"


@pytest.mark.parametrize("bad", [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0, float("inf")], [0.0] * 4, ["a", 1, 2, 3]])
def test_bad_user_vectors_are_refused(bad: list[Any]) -> None:
    with pytest.raises(BookAgentError) as info:
        QueryRuntime(spec()).encode_query("q", query_vector=bad)
    assert info.value.code == "query.vector_invalid" and info.value.remediation


def test_empty_query_and_bad_config() -> None:
    with pytest.raises(BookAgentError) as info:
        QueryRuntime(spec()).encode_query("   ")
    assert info.value.code == "query.empty"
    with pytest.raises(BookAgentError) as info:
        QueryRuntime(spec(), {"network": {"allow_remote_requests": True, "surprise": 1}})
    assert info.value.code == "query.config_invalid"


def test_the_model_cannot_be_chosen_by_the_user() -> None:
    with pytest.raises(BookAgentError):
        QueryRuntime(spec(), {"query": {"model": "my/own-model"}})  # no such setting exists
