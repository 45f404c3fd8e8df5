"""A child that reports how it was started: `python -m tests.support.report_niceness ARGS...`
writes {"niceness", "own_session", "stdin_closed", "argv"} as JSON to the file named by
BOOK_AGENT_TEST_REPORT and exits 0 (a test swaps it in for a background child's module)."""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    report = {"niceness": os.nice(0), "own_session": os.getsid(0) == os.getpid(),
              "stdin_closed": sys.stdin.read() == "", "argv": sys.argv[1:]}
    with open(os.environ["BOOK_AGENT_TEST_REPORT"], "w", encoding="utf-8") as handle:
        json.dump(report, handle)


if __name__ == "__main__":
    main()
