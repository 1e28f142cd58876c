# The two set-up commands: `make demo` and `make test`. Each creates the
# virtualenv, installs what it needs, and runs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The Claude Code CLI the agent arms and their integration tests run, pinned.
CLAUDE_CODE_VERSION := 2.1.332
CLI_DIR := .tools/claude-code
CLI := $(CLI_DIR)/node_modules/.bin/claude
CLI_STAMP := $(CLI_DIR)/.installed-$(CLAUDE_CODE_VERSION)
DEMO_MODEL ?= claude-sonnet-4-5

# $(call need,COMMAND,DEBIAN-PACKAGE): install it with apt when missing and we are
# root; otherwise stop with the exact command to run.
define need
@command -v $(1) >/dev/null 2>&1 || { \
  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
    echo "installing $(2) with apt-get"; \
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(2) >/dev/null; \
  else \
    echo "$(1) is missing. Install it with: sudo apt-get install $(2)"; exit 1; \
  fi; }
endef

.PHONY: demo test lint typecheck unit bench python sandbox vcs browser cli clean

python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || { \
	  echo "pytest-wfbench needs Python 3.11 or newer; '$(PYTHON)' is older. Run with PYTHON=python3.11 (or newer)."; exit 1; }
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || { \
	  echo "Python's venv module is missing: apt-get install python3-venv"; exit 1; }

$(STAMP): pyproject.toml | python
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[html,dev]'
	touch $@

sandbox:
	$(call need,bwrap,bubblewrap)

# Mercurial: the tool-cost lanes' second subject (tasks/vcs-loop.yaml).
vcs:
	$(call need,hg,mercurial)

# Debian's Chromium: the browser test of report.html drives it headless
# (Playwright with executable_path; no browser is downloaded).
browser:
	$(call need,chromium,chromium)

$(CLI_STAMP):
	$(call need,npm,npm)
	mkdir -p $(CLI_DIR)
	npm install --silent --no-audit --no-fund --prefix $(CLI_DIR) @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION)
	$(CLI) --version | grep -q '^$(CLAUDE_CODE_VERSION) ' || { echo "$(CLI) is not version $(CLAUDE_CODE_VERSION)"; exit 1; }
	touch $@

cli: $(CLI_STAMP)

# Scripted arms always; agent arms too when an API key and the CLI are here.
demo: $(STAMP) sandbox vcs
	@if [ -n "$$WFBENCH_ANTHROPIC_API_KEY$$ANTHROPIC_API_KEY" ] && [ -x $(CLI) ]; then \
	  echo "API key and CLI found: adding the baseline, workflow, workflow_direct, review and review_baseline arms ($(DEMO_MODEL))"; \
	  $(BIN)/pytest -p no:cacheprovider --wfbench-tasks tasks/demo.yaml -n 2 \
	    --wfbench-arms gold,noop,baseline,workflow,workflow_direct,review,review_baseline --wfbench-model $(DEMO_MODEL); \
	else \
	  $(BIN)/pytest -p no:cacheprovider --wfbench-tasks tasks/demo.yaml -n 2 && \
	  echo "To add agent arms: make cli; export WFBENCH_ANTHROPIC_API_KEY=...; make demo" \
	       "(model: DEMO_MODEL=$(DEMO_MODEL))"; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP) sandbox vcs browser cli
	$(BIN)/pytest -n 2 tests

test: lint typecheck unit

bench: $(STAMP) sandbox
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .tools .mypy_cache .ruff_cache .pytest_cache
