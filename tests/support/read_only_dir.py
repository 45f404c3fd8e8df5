"""Every CLI command on a data dir mounted read-only: run inside `unshare -m` (or `-rm`), it
bind-mounts the data dir onto itself read-only and runs each command in a fresh process.

    python -m tests.support.read_only_dir DATA PACKAGES_DIR REPORT

DATA holds `pdf-book` and `epub-book` (and a `late` book registered after the library index
was built, so the index is stale); PACKAGES_DIR holds the packages `pdf-book` and `new-book`.
REPORT gets each command's exit code, stdout and stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def commands(data: Path, packages: Path, hit: Path, locator: Path, questions: Path) -> list[list[str]]:
    return [
        ["list"], ["status", "pdf-book"], ["status", "pdf-book", "--verify"], ["prepare", "pdf-book"],
        ["prepare", "@all"], ["prepare", "late"], ["init", str(packages / "pdf-book")],
        ["init", str(packages / "pdf-book"), "--replace"], ["init", str(packages / "new-book")],
        ["configure", "pdf-book", "--no-allow-remote"], ["remove", "epub-book"],
        ["search", "pdf-book", "water ground"], ["search", "late", "water"], ["search", "@all", "water ground"],
        ["search", "pdf-book,epub-book", "battle"], ["eval", "pdf-book", str(questions)],
        ["read", "pdf-book", "r0001"], ["markdown", "pdf-book", "--record", "r0001"], ["skill", "pdf-book"],
        ["locate", "pdf-book", "--hit-json", str(hit)], ["source", "pdf-book", "--locator-json", str(locator)],
        ["render", "pdf-book", "0"], ["render", "pdf-book", "1", "--dpi", "40"], ["plugins"],
        ["inspect", str(packages / "pdf-book")],
    ]


def run(data: Path, args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-m", "book_agent", "--data-dir", str(data), *args, "--json"],
                          capture_output=True, timeout=300, check=False)
    return {"args": args, "rc": proc.returncode, "stdout": proc.stdout.decode("utf-8", "replace"),
            "stderr": proc.stderr.decode("utf-8", "replace")[-3000:]}


def main(data: Path, packages: Path, report: Path) -> None:
    work = report.parent
    hit = json.loads(run(data, ["search", "pdf-book", "water ground"])["stdout"])["hits"][0]
    (work / "hit.json").write_text(json.dumps(hit), encoding="utf-8")
    located = json.loads(run(data, ["locate", "pdf-book", "--hit-json", str(work / "hit.json")])["stdout"])
    (work / "locator.json").write_text(json.dumps({k: v for k, v in located.items() if k != "verification"}),
                                       encoding="utf-8")
    (work / "questions.jsonl").write_text(json.dumps({"query": "water ground", "relevant": ["r0001"]}) + "\n",
                                          encoding="utf-8")
    subprocess.run(["mount", "--bind", str(data), str(data)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(data)], check=True)
    results = [run(data, args) for args in commands(data, packages, work / "hit.json", work / "locator.json",
                                                    work / "questions.jsonl")]
    report.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
