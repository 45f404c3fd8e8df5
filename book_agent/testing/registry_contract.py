"""The Registry contract as a pytest suite. A registry subclasses it:

    class TestMyRegistry(RegistryContract):
        @pytest.fixture
        def make_registry(self, tmp_path):
            return lambda: MyRegistry(tmp_path)   # each call: a registry over the same storage

`make_registry` returns a zero-argument callable; calls after the first must see what the
first stored (a persistent registry), or return the same object (an in-memory one). The suite
checks round trips, ordering, the coded errors (an unknown id to get or remove, another
package under an id), replacing, removing, and that callers get copies.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from book_agent.domain.book.registry_entry import RegistryEntry
from book_agent.domain.errors import BookAgentError
from book_agent.ports import Registry


def entry(book_id: str, root: str = "/packages/one", title: str = "A book") -> RegistryEntry:
    return {"book_id": book_id, "title": title, "package_root": f"{root}/{book_id}", "source": root,
            "imported": False, "registered_at": "2026-12-01T10:00:00+00:00", "manifest_sha256": "ab" * 32,
            "fingerprint": {"book-package.json": [10, 1, 1]}}


class RegistryContract:
    @pytest.fixture
    def make_registry(self) -> Callable[[], Registry]:
        raise NotImplementedError("override the make_registry fixture")

    @pytest.fixture
    def registry(self, make_registry: Callable[[], Registry]) -> Registry:
        return make_registry()

    def test_implements_the_port(self, registry: Registry) -> None:
        assert isinstance(registry, Registry)

    def test_an_unknown_id_is_a_coded_error(self, registry: Registry) -> None:
        with pytest.raises(BookAgentError) as caught:
            registry.get("nobody")
        assert caught.value.code == "book.not_registered"

    def test_an_entry_comes_back_as_stored_and_persists(self, registry: Registry,
                                                        make_registry: Callable[[], Registry]) -> None:
        stored = entry("alpha")
        registry.put(stored)
        assert registry.get("alpha") == stored
        assert make_registry().get("alpha") == stored

    def test_list_is_every_entry_by_id(self, registry: Registry) -> None:
        for book_id in ("gamma", "alpha", "beta"):
            registry.put(entry(book_id))
        assert [e["book_id"] for e in registry.list()] == ["alpha", "beta", "gamma"]

    def test_another_package_under_an_id_is_refused_unless_replacing(self, registry: Registry) -> None:
        registry.put(entry("alpha"))
        registry.put(entry("alpha", title="Same package, new title"))  # the same package may re-register
        assert registry.get("alpha")["title"] == "Same package, new title"
        with pytest.raises(BookAgentError) as caught:
            registry.put(entry("alpha", root="/packages/other"))
        assert caught.value.code == "book.already_registered" and caught.value.remediation
        assert registry.get("alpha")["package_root"] == "/packages/one/alpha"
        registry.put(entry("alpha", root="/packages/other"), replace=True)
        assert registry.get("alpha")["package_root"] == "/packages/other/alpha"

    def test_removed_entries_are_gone(self, registry: Registry, make_registry: Callable[[], Registry]) -> None:
        registry.put(entry("alpha"))
        registry.put(entry("beta"))
        registry.remove("alpha")
        with pytest.raises(BookAgentError) as caught:
            make_registry().get("alpha")
        assert caught.value.code == "book.not_registered"
        assert [e["book_id"] for e in registry.list()] == ["beta"]
        with pytest.raises(BookAgentError) as again:
            registry.remove("alpha")
        assert again.value.code == "book.not_registered"

    def test_callers_get_copies(self, registry: Registry) -> None:
        registry.put(entry("alpha"))
        got = registry.get("alpha")
        got["title"] = "changed by a caller"
        listed = registry.list()[0]
        listed["package_root"] = "/elsewhere"
        assert registry.get("alpha") == entry("alpha")
