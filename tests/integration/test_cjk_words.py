"""The product's Chinese word segmenter (jieba): loaded only for CJK queries, its dictionary
cache in the data dir's cache folder, never in the system temp dir (issue 28, item 5)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from book_agent.agent import BookAgent
from tests.support.package_builder import RecordSpec, build_package

# Runs a search in a fresh interpreter and reports whether jieba was imported.
PROBE = """
import json, sys
from pathlib import Path
from book_agent.agent import BookAgent
with BookAgent(Path(sys.argv[1])) as agent:
    hits = [h["record_id"] for h in agent.search("zh", sys.argv[2], top_k=3)["hits"]]
print(json.dumps({"jieba": "jieba" in sys.modules, "hits": hits}))
"""


def _book(tmp_path: Path) -> Path:
    records = [RecordSpec("r1", "高血压的发病与遗传因素有关，也与饮食有关。", ["第一章"], 0),
               RecordSpec("r2", "哪些人容易得糖尿病？因素很多。", ["第二章"], 0),
               RecordSpec("r3", "The general plans the campaign.", ["Chapter 3"], 1)]
    root = build_package(tmp_path / "pkg", book_id="zh", records=records, vectors="none", language="zh")
    data = tmp_path / "data"
    with BookAgent(data) as agent:
        agent.init(root)
    return data


def _search(data: Path, query: str, temp: Path) -> dict[str, object]:
    env = {**os.environ, "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
    out = subprocess.run([sys.executable, "-c", PROBE, str(data), query], capture_output=True, text=True,
                         check=True, env=env, timeout=300)
    assert "jieba" not in out.stderr.lower()  # its progress lines are kept off stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_an_english_query_never_loads_the_segmenter_and_a_chinese_one_caches_in_the_data_dir(tmp_path: Path):
    data = _book(tmp_path)
    temp = tmp_path / "temp"
    temp.mkdir()
    assert _search(data, "general campaign", temp) == {"jieba": False, "hits": ["r3"]}
    assert not (data / "cache" / "jieba").exists()
    found = _search(data, "高血压与哪些因素有关", temp)
    assert found["jieba"] is True and found["hits"][0] == "r1"  # type: ignore[index]
    cache = data / "cache" / "jieba" / "jieba.cache"
    assert cache.is_file() and cache.stat().st_size > 1_000_000
    assert list(temp.iterdir()) == []  # nothing in the system temp dir
    before = cache.stat().st_mtime_ns
    assert _search(data, "高血压与哪些因素有关", temp)["hits"] == found["hits"]
    assert cache.stat().st_mtime_ns == before  # the second process read the cache, did not rebuild it


NO_CACHE_PROBE = """
import sys
from book_agent_adapters.text.cjk_words import segment_chinese, use_cache_dir
use_cache_dir(None)
print("/".join(segment_chinese("高血压与哪些因素有关")))
"""


def test_without_a_cache_dir_the_dictionary_is_built_in_memory_and_written_nowhere(tmp_path: Path):
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
    out = subprocess.run([sys.executable, "-c", NO_CACHE_PROBE], capture_output=True, text=True, check=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert out.stdout.strip() == "高血压/与/哪些因素/有关"
    assert list(temp.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["temp"]


MISSING_DATA_DIR_PROBE = """
import sys
from pathlib import Path
from book_agent_adapters.text.cjk_words import segment_chinese, use_cache_dir
use_cache_dir(Path(sys.argv[1]) / "cache")
print("/".join(segment_chinese("高血压与哪些因素有关")))
"""


def test_a_data_dir_that_does_not_exist_is_not_made_for_the_cache(tmp_path: Path):
    # An agent over a data dir nobody created (a test's fake one) must not create it, cache and all.
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
    missing = tmp_path / "no-such-data-dir"
    out = subprocess.run([sys.executable, "-c", MISSING_DATA_DIR_PROBE, str(missing)], capture_output=True,
                         text=True, check=True, env=env, cwd=tmp_path, timeout=300)
    assert out.stdout.strip() == "高血压/与/哪些因素/有关"
    assert not missing.exists() and list(temp.iterdir()) == []


# An MCP server in a fresh interpreter: the handshake and tools/list, no query; then whether
# the background warm-up (book_agent/mcp/warmup.py) loaded jieba (written to a file: a server
# keeps stdout for the protocol).
WARM_UP_PROBE = """
import asyncio, json, sys, threading
from pathlib import Path
from fastmcp import Client
from book_agent.agent import BookAgent
from book_agent.mcp.server import build_server
agent = BookAgent(Path(sys.argv[1]))
done, warm_up = threading.Event(), agent.warm_up
def observed(*args, **kwargs):
    try:
        return warm_up(*args, **kwargs)
    finally:
        done.set()
agent.warm_up = observed
async def main():
    async with Client(build_server(sys.argv[2], agent=agent, warm_up=True)) as client:
        await client.list_tools()
        await asyncio.to_thread(done.wait, 300)
asyncio.run(main())
Path(sys.argv[3]).write_text(json.dumps({"warmed": done.is_set(), "jieba": "jieba" in sys.modules}))
"""


def test_the_mcp_warm_up_loads_the_segmenter_for_a_chinese_book_only(tmp_path: Path):
    data = _book(tmp_path)
    english = build_package(tmp_path / "en-pkg", book_id="en", vectors="none", language="en",
                            records=[RecordSpec("e1", "The general plans the campaign.", ["Chapter 1"], 0)])
    with BookAgent(data) as agent:
        agent.init(english)
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}

    def warmed(book: str) -> dict[str, bool]:
        report = tmp_path / f"{book}.json"
        subprocess.run([sys.executable, "-c", WARM_UP_PROBE, str(data), book, str(report)], capture_output=True,
                       check=True, env=env, timeout=300)
        result: dict[str, bool] = json.loads(report.read_text())
        return result

    assert warmed("en") == {"warmed": True, "jieba": False}
    assert not (data / "cache" / "jieba").exists()
    assert warmed("zh") == {"warmed": True, "jieba": True}  # before any query: the first one is warm
    assert (data / "cache" / "jieba" / "jieba.cache").is_file()


START_WARM_UP_PROBE = """
import json, sys
from pathlib import Path
from book_agent.agent import BookAgent
with BookAgent(Path(sys.argv[1])) as agent:
    agent.warm_up(sys.argv[2], encoder=False, segmenter=False)
    start = "jieba" in sys.modules
    agent.warm_up(sys.argv[2], encoder=False)
    print(json.dumps([start, "jieba" in sys.modules]))
"""


def test_the_start_up_warm_up_leaves_the_segmenter_for_later(tmp_path: Path):
    """`serve` warms a book up during the handshake (book_agent/mcp/warmup.py): without the
    dictionary's seconds, which the warm-up after tools/list loads."""
    data = _book(tmp_path)
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "TEMP": str(temp), "TMP": str(temp)}
    out = subprocess.run([sys.executable, "-c", START_WARM_UP_PROBE, str(data), "zh"], capture_output=True,
                         text=True, check=True, env=env, timeout=300)
    assert json.loads(out.stdout) == [False, True]
