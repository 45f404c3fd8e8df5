"""`QueryRuntime(spec, config)` as the user's contract writes it (issue 44, item 12): the flat
config keys `allow_remote_requests`, `allowed_endpoints`, `auth_env`, and a model that
`book-agent model install` put in the data dir found with no other argument."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from book_agent import BookAgentError, QueryRuntime, resolve_query_runtime
from book_agent_adapters.encoders.local.model_files import MODELS_FOLDER, installed_model_dir
from tests.support import tiny_bert
from tests.support.loopback import Reply

ENDPOINT_PATH = "/v1/embeddings"


def spec(provider: str = "siliconflow", model: str = "BAAI/bge-m3", dims: int = 4,
         endpoint: str | None = None) -> dict[str, Any]:
    manifest = {"schema": "book-agent.vectors", "schema_version": "0.1", "provider": provider, "model": model,
                "dimensions": dims, "dtype": "float32", "normalized": True, "metric": "cosine",
                "query_instruction": "", "record_count": 3}
    if endpoint:
        manifest["endpoint"] = endpoint
    return resolve_query_runtime({"vector_manifest": manifest})


def test_the_flat_keys_are_the_network_policy(loopback_server) -> None:
    url = loopback_server.url(ENDPOINT_PATH)
    loopback_server.handler = lambda request: Reply(200, {"data": [{"index": 0, "embedding": [0.0, 3.0, 0.0, 4.0]}]})
    runtime = QueryRuntime(spec(endpoint=url), {"allow_remote_requests": True, "allowed_endpoints": [url],
                                                "auth_env": "EMBED_KEY"}, environ={"EMBED_KEY": "k"})
    policy = runtime.policy
    assert (policy.allow_remote_requests, list(policy.allowed_endpoints), policy.auth_env) == (True, [url], "EMBED_KEY")
    result = runtime.encode_query("what is water")
    assert result.status == "ok" and result.route is not None and result.route.startswith("remote")
    assert result.vector is not None
    np.testing.assert_allclose(result.vector, [0.0, 0.6, 0.0, 0.8], atol=1e-6)
    headers = {k.lower(): v for k, v in loopback_server.requests[-1].headers.items()}
    assert headers["authorization"] == "Bearer k"  # read from the variable auth_env names


def test_remote_requests_stay_off_by_default_and_with_the_flat_false(loopback_server) -> None:
    url = loopback_server.url(ENDPOINT_PATH)
    for config in (None, {}, {"allow_remote_requests": False, "allowed_endpoints": [url]}):
        runtime = QueryRuntime(spec(endpoint=url), config)
        assert runtime.policy.allow_remote_requests is False
        assert runtime.encode_query("what is water").status == "unavailable"
    assert loopback_server.requests == []


@pytest.mark.parametrize("config", [
    {"allow_remote_requests": True, "network": {"allow_remote_requests": False}},  # both places
    {"allow_remote": True},  # a typo is refused, not ignored
    {"allowed_endpoints": "http://127.0.0.1:1/v1/embeddings"},  # not a list
    {"allow_remote_requests": "yes"},
])
def test_a_bad_flat_config_is_refused(config: dict[str, Any]) -> None:
    with pytest.raises(BookAgentError) as refused:
        QueryRuntime(spec(), config)
    assert refused.value.code == "query.config_invalid"


def test_a_model_installed_in_the_data_dir_is_found_without_arguments(tmp_path: Path) -> None:
    """Where `book-agent model install` puts a model ($BOOK_AGENT_HOME/cache/models/ORG--NAME)."""
    data_dir = Path(os.environ["BOOK_AGENT_HOME"])  # the test's own (tests/conftest.py)
    local = spec(provider="local", model="test-org/tiny-installed", dims=16)
    missing = QueryRuntime(local, {}).encode_query("water flows")
    assert missing.status == "unavailable"
    tiny_bert.write_tiny_model(installed_model_dir(data_dir / "cache" / MODELS_FOLDER, "test-org/tiny-installed"))
    found = QueryRuntime(local, {}).encode_query("water flows")
    assert found.status == "ok" and found.vector is not None and found.vector.shape == (16,)
    assert found.route is not None and "tiny-installed" in found.route
    assert QueryRuntime(local).availability()["available"] is True
