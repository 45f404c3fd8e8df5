"""The child process a long-running server runs its library writer's jobs in
(adapters' library/child_writer.py ChildWriter, book_agent/services/library/writer.py):

    python -m book_agent.cli.commands.library_writer --data-dir D --lexical build|compact|none --vectors build|retrain|none

Its parent starts it at the lowest priority (searches in the server come first on a busy
machine). It runs the job as any writer does (the build lock, new files, one rename to commit),
prints what it did as JSON and exits 0; a failure is its coded error's JSON on the last line of stderr, exit 1.
It ends with its server, even one killed with -9 (within worker_processes.POLL_S; Linux at
once). Killed at any point, it leaves the previous generation (the next writer sweeps its files).
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="book-agent-library-writer")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--lexical", choices=("build", "compact", "none"), default="build")
    parser.add_argument("--vectors", choices=("build", "retrain", "none"), default="build")
    args = parser.parse_args(argv)
    from book_agent.bootstrap import end_with_parent

    end_with_parent()  # a server gone, its compaction would hold the library for nobody
    from book_agent.agent import build_agent
    from book_agent.domain.errors import BookAgentError

    try:
        with build_agent(args.data_dir) as agent:
            done = agent.maintain_library(None if args.lexical == "none" else args.lexical,
                                          None if args.vectors == "none" else args.vectors)
    except BookAgentError as exc:
        print(json.dumps(exc.to_dict(), ensure_ascii=False, default=str), file=sys.stderr)
        return 1
    print(json.dumps({"pid": os.getpid(), **done}, ensure_ascii=False, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
