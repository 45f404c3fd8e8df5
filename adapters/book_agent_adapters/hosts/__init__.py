"""Host adapters: install a book into Codex, Trae, WorkBuddy or Cherry Studio.

`HostAdapter(host, home=None, data_dir=None, edition=None)` is the facade (the contract's
name); per-host adapters implement the `HostPort` protocol behind it. `install(...)` is
the one-call form: a dry-run plan by default, the result with `apply=True`. Each takes a
book's package or a library (`host_library("@all", registered_ids)`, or `"a,b"`).
"""

from __future__ import annotations

from book_agent.domain.library import HostLibrary, host_library
from book_agent.ports import HostPort
from book_agent_adapters.hosts.facade import (
    HOSTS,
    HostAdapter,
    default_data_dir,
    install,
    mcp_command,
)
from book_agent_adapters.hosts.naming import book_name, library_name

__all__ = ["HOSTS", "HostAdapter", "HostLibrary", "HostPort", "book_name", "default_data_dir", "host_library",
           "install", "library_name", "mcp_command"]
