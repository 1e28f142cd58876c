# The two set-up commands: `make demo` and `make test`. Each creates the
# virtualenv, installs what it needs, and runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit bench python sandbox clean

python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || { \
	  echo "pytest-wfbench needs Python 3.11 or newer; '$(PYTHON)' is older. Run with PYTHON=python3.11 (or newer)."; exit 1; }
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { \
	  echo "Python's venv module is missing: apt-get install python3-venv"; exit 1; }

$(STAMP): pyproject.toml | python
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else \
	    echo "bubblewrap is missing. Install it with: sudo apt-get install bubblewrap"; exit 1; \
	  fi; }

demo: $(STAMP) sandbox
	$(BIN)/pytest -p no:cacheprovider --wfbench-tasks tasks/demo.yaml -n 2

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) sandbox
	$(BIN)/pytest -n 2 tests

test: lint typecheck unit

bench: $(STAMP) sandbox
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
