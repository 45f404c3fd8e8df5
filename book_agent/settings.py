"""Where book-agent keeps its data: --data-dir, else $BOOK_AGENT_HOME, else the user data dir."""

from __future__ import annotations

import os
from pathlib import Path

ENV_HOME = "BOOK_AGENT_HOME"


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("book-agent", appauthor=False)).resolve()
