"""Which modules a CLI command imports, seen from inside its process.

The command runs in a fresh interpreter (`python -c PROBE`), in-process through
`book_agent.cli.entry.run`, and writes `sys.modules` to a file even when it exits; the lazy-import
tests (cold start, the encoder on demand) compare that against what the command should need.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from book_agent.cli.entry import run
try:
    run(sys.argv[2:])
except SystemExit:
    pass
finally:
    with open(sys.argv[1], "w") as fh:
        json.dump(sorted(sys.modules), fh)
"""


def modules_imported_by(folder: Path, *cli_args: str) -> set[str]:
    """Every module `book-agent CLI_ARGS` had imported when it finished (it must exit 0)."""
    report = folder / "modules.json"
    done = subprocess.run([sys.executable, "-c", PROBE, str(report), *cli_args], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return set(json.loads(report.read_text()))
