"""epub.js (the library most web reading systems run) resolving our EPUB CFIs: a real part,
installed by `make test` (tools/dev/install_epubjs.sh into .tools/epubjs, or EPUBJS_PREFIX)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests.support import REPO_ROOT
from tests.support.parts import require_real_part

SCRIPT = Path(__file__).with_name("epubjs_resolve.js")


def modules() -> Path:
    prefix = os.environ.get("EPUBJS_PREFIX") or str(REPO_ROOT / ".tools" / "epubjs")
    return Path(prefix) / "node_modules"


def require_epubjs() -> Path:
    found = modules()
    require_real_part(shutil.which("node") is not None and (found / "epubjs" / "lib" / "epubcfi.js").is_file()
                      and (found / "jsdom").is_dir(), "epub.js with jsdom (tools/dev/install_epubjs.sh)")
    return found


def resolve(items: list[tuple[bytes, str]]) -> list[dict[str, Any]]:
    """epub.js's range for each (chapter XHTML, CFI): {text, printed} or {error}."""
    payload = json.dumps([{"xhtml": x.decode("utf-8"), "cfi": c} for x, c in items])
    done = subprocess.run(["node", str(SCRIPT)], input=payload, capture_output=True, text=True, check=True,
                          env={**os.environ, "NODE_PATH": str(require_epubjs())}, timeout=300)
    return list(json.loads(done.stdout))
