"""Each config section has one model that parses it: the runtime config (the book's file) and
the reranker adapters (every shape `create_reranker` takes) accept and refuse the same sections
and read the same values, because both go through NetworkPolicy and RerankerSettings."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from book_agent.domain.book.runtime_config import ConfigError, RuntimeConfig
from book_agent.domain.errors import BookAgentError
from book_agent.domain.network import NetworkPolicy
from book_agent_adapters.rerankers import parse_config

URL = "https://api.example.com/v1/rerank"
ANY_VALUE = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "x", URL, "KEY_VAR"]),
                      st.lists(st.sampled_from([URL, "http://127.0.0.1:8/r"]), max_size=2), st.just([3]),
                      st.dictionaries(st.sampled_from(["timeout", "top_n"]), st.integers(1, 5), max_size=2))
NETWORK = st.dictionaries(st.sampled_from(["allow_remote_requests", "allowed_endpoints", "auth_env", "allow_remote"]),
                          ANY_VALUE, max_size=4)
RERANKER = st.dictionaries(st.sampled_from(["provider", "model", "endpoint", "factory", "options", "modle"]),
                           ANY_VALUE.filter(lambda v: v is not None), max_size=5)


def runtime(data: dict[str, Any]) -> RuntimeConfig | None:
    try:
        return RuntimeConfig.from_dict(data)
    except ConfigError:
        return None


def reranker(config: Any) -> Any:
    try:
        return parse_config(config)
    except BookAgentError as exc:
        assert exc.code == "rerank.config_invalid"
        return None


@given(NETWORK)
def test_the_network_section_is_read_alike_by_both(network: dict[str, Any]) -> None:
    model = runtime({"network": network})
    for shape in ({"provider": "none", "network": network}, {"version": 1, "network": network, "reranker": {}}):
        parsed = reranker(shape)
        assert (parsed is None) == (model is None), (shape, model)
        if model is not None:
            assert parsed.network == model.network and isinstance(model.network, NetworkPolicy)


@given(RERANKER)
def test_the_reranker_section_is_read_alike_by_both(section: dict[str, Any]) -> None:
    model = runtime({"reranker": section})
    for shape in (section, {"version": 1, "reranker": section}):
        parsed = reranker(shape)
        assert (parsed is None) == (model is None), (shape, model)
        if model is not None:
            assert parsed.provider.lower() == model.reranker.provider.strip().lower()
            assert (parsed.model, parsed.options) == (model.reranker.model or None, model.reranker.options)
            assert reranker(model) == parsed  # the model itself, as the composition root hands it over
