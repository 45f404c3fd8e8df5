"""Developer scripts, run from a checkout (never shipped): bench/ (speed and memory figures, `make bench`),
eval/ (retrieval quality on public sets, `make eval`), study/ (one-off studies behind a constant or a
choice, each cited in contracts/), build/ (package builders for the bundled example and real books),
dev/ (the demo, the wheel check, the test servers and installers the Makefile runs).
Scripts import each other as `tools.<folder>.<module>`, with the repo root on sys.path.
"""
