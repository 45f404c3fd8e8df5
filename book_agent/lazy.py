"""Work deferred to first use, so a one-shot command pays only for what it runs (issue 29).

A cold `book-agent --json search` spends most of its time importing. Two helpers keep that
to what the command uses, without scattering imports into function bodies:

- `exported_lazily(namespace, exports)`: a package's `__getattr__` that imports the module
  behind a re-exported name on first access (`book_agent`, `book_agent.ports`): importing
  one port no longer defines every other one;
- `cached_under_lock`: a part of an object built on first use, once, under its lock;
- `LazyPattern(pattern, flags)`: a regex compiled at its first match. A character class of
  the CJK ranges costs ~1.5 ms to compile (re's charset optimiser visits every code point
  below U+10000), and most searches never run most of the patterns a module defines.

Plain Python only: every layer may use it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from functools import cached_property
from typing import Any, TypeVar

T = TypeVar("T")


def exported_lazily(namespace: MutableMapping[str, Any], exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `exports` (name -> module defining it); the first access
    imports that module and caches the value in `namespace` (the package's globals())."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module_name = exports.get(name)
        if module_name is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_name), name)
        namespace[name] = value  # the next access skips __getattr__
        return value

    return __getattr__


class cached_under_lock(cached_property[T]):  # noqa: N801 (a decorator, named as cached_property)
    """A cached_property computed under the instance's `_lock` (an RLock): an object two
    threads use (the MCP server's agent and books) never builds a part twice, leaking one."""

    def __get__(self, instance: Any, owner: type | None = None) -> T:  # type: ignore[override]
        with instance._lock:  # taken on first use only: afterwards the instance dict answers
            value: T = super().__get__(instance, owner)
            return value


class LazyPattern:
    """A `re.Pattern` compiled when first used (two threads may both compile it: same result)."""

    __slots__ = ("_compiled", "_flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self._flags)
        return self._compiled

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled.match(text)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def findall(self, text: str) -> list[Any]:
        return self.compiled.findall(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.compiled.sub(repl, text, count)

    def split(self, text: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(text, maxsplit)
