"""`book-agent` with the library's compaction held at its commit point: a real server process in
which a test can search while a compaction is under way.

    python -m tests.support.gated_compaction --data-dir D serve @all ...   (any CLI arguments)

With BOOK_AGENT_TEST_GATE=DIR, a compaction about to commit (its new base written, not yet
renamed into place) writes its pid to DIR/compacting and waits until DIR/release exists (60 s at
most), then commits as it would have. A server's background writer runs its jobs in a child
process (the adapters' library/child_writer.py WRITER_MODULE): the server started here starts
this module for them too (its arguments name `--lexical`, as every writer job's do), so the gate
holds the child's compaction. Nothing else changes: the hook is the index's own `crash_point`,
where the kill -9 tests stop a writer.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main() -> None:
    from book_agent_adapters.library import child_writer
    from book_agent_adapters.library.local.lexical import library_lexical_index

    gate = Path(os.environ["BOOK_AGENT_TEST_GATE"])

    def held_commit(point: str) -> None:
        if point == "compact:before-rename":
            # written whole, then renamed in: a test polling for the file must never read it empty
            (gate / "compacting.tmp").write_text(str(os.getpid()))
            os.replace(gate / "compacting.tmp", gate / "compacting")
            deadline = time.monotonic() + 60
            while not (gate / "release").exists() and time.monotonic() < deadline:
                time.sleep(0.05)

    library_lexical_index.crash_point = held_commit
    if "--lexical" in sys.argv:  # started as the child writer (WriterJob.argv names it), not as the server
        from book_agent.cli.commands.library_writer import main as writer

        sys.exit(writer(sys.argv[1:]))
    child_writer.WRITER_MODULE = "tests.support.gated_compaction"  # its argv then starts with --data-dir
    from book_agent.cli.entry import run

    sys.argv[0] = "book-agent"
    run()


if __name__ == "__main__":
    main()
