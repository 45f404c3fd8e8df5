"""book-agent on data dirs that fill up: run inside `unshare -rm` (a user and mount namespace,
no privilege needed), it mounts one small tmpfs per size and runs the CLI on it as a user would.

    python -m tests.support.full_disk PACKAGES WORK REPORT SIZE_KB...

PACKAGES holds book-0 and book-1. For each size the steps below run in fresh processes, then an
in-process library search (as a server runs it) runs twice; REPORT gets each step's exit code and
output and the library folder's files. A process killed by a signal shows as a negative code;
this script dying (a SIGBUS in the in-process search) leaves no report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

STEPS = (("init", "{pk}/book-0"), ("search", "@all", "river"), ("init", "{pk}/book-1"),
         ("search", "@all", "river"), ("prepare", "@all"), ("search", "@all", "river"))


def run_steps(packages: Path, data: Path) -> list[dict[str, Any]]:
    out = []
    for step in STEPS:
        args = [a.format(pk=packages) for a in step]
        proc = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), *args, "--json"],
                              capture_output=True, timeout=300, check=False)
        out.append({"args": args, "rc": proc.returncode, "stdout": proc.stdout.decode("utf-8", "replace"),
                    "stderr": proc.stderr.decode("utf-8", "replace")[-3000:]})
    return out


def in_process(data: Path) -> list[dict[str, Any]]:
    from book_agent import BookAgent
    from book_agent.domain.errors import BookAgentError

    found = []
    with BookAgent(data) as agent:
        for _ in range(2):
            try:
                result = agent.search("@all", "river water")
                found.append({"hits": len(result["hits"]), "warnings": result["warnings"]})
            except BookAgentError as exc:
                found.append({"error": exc.code})
    return found


def main(packages: Path, work: Path, report: Path, sizes: list[int]) -> None:
    results = []
    for size in sizes:
        mount = work / f"fs-{size}"
        mount.mkdir(parents=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}k", "tmpfs", str(mount)], check=True)
        data = mount / "data"
        steps = run_steps(packages, data)
        library = data / "library"
        results.append({"size_kb": size, "steps": steps, "in_process": in_process(data),
                        "library_files": sorted(os.listdir(library)) if library.is_dir() else [],
                        "terms_files": sorted(os.listdir(library / "terms")) if (library / "terms").is_dir() else []})
        subprocess.run(["umount", str(mount)], check=False)
    report.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), [int(s) for s in sys.argv[4:]])
