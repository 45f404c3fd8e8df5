"""A library writer in a process of its own, for the writer-lease tests: `python -m
tests.support.milvus_writer SPEC.json` brings the `milvus` backend's lexical channel (on the
spec's server and prefix, with a data dir of its own: another machine, as far as the data
dir's lock can tell) to the spec's books. Its progress callback marks the file `marker` and
sleeps `hold_s` at the first call (the lease held, the first book's rows written), so a test can
race or kill it mid-build; it prints {"first", "done"} (wall-clock times) when the build returns."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from book_agent.domain.library import LibraryMember
from tests.support import milvus


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    members = [LibraryMember(m["book_id"], Path(m["database"]), m["records"], m["stamp"]) for m in spec["members"]]
    index = milvus.backend(spec["uri"], Path(spec["data_dir"]), spec["prefix"], **spec.get("options", {})).lexical
    first: list[float] = []

    def progress(done: int, total: int) -> None:
        if not first:
            first.append(time.time())
            Path(spec["marker"]).write_text(str(done), encoding="utf-8")
            time.sleep(float(spec.get("hold_s", 0.0)))

    index.build(members, {"books": ",".join(m.book_id for m in members)}, progress)
    print(json.dumps({"first": first[0] if first else None, "done": time.time()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
