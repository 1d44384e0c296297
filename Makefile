# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# promtool (from Prometheus) runs the alert rules' unit tests. `make tools` finds it, or installs Debian's
# prometheus package when it can do so without asking (root, or SUDO=sudo as .ci/run passes), or prints the command.
PROMTOOL_PACKAGE := prometheus
SUDO ?=

.PHONY: demo test tools lint typecheck docs docs-tables unit bench clean screenshots

# Every recipe runs with Python writing bytecode: where PYTHONDONTWRITEBYTECODE is set (as on the machines this
# project's CI runs on) each of the test suite's hundreds of processes would compile every module it imports (a Phoenix
# server's start took ~38 s of CPU instead of ~20 s); without it the first process to import a module compiles it once.
unexport PYTHONDONTWRITEBYTECODE

# uv (from PyPI) installs the same versions as pip in a fraction of the time (27 s against 174 s on a fresh two-core
# machine); pip does it where uv cannot reach the index pip is configured with (uv does not read pip.conf).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]' || $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/otel-eval demo

tools:
	@if command -v promtool >/dev/null 2>&1; then \
	  echo "promtool: $$(command -v promtool)"; \
	elif command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || [ -n "$(SUDO)" ]; }; then \
	  echo "promtool not found: installing Debian's $(PROMTOOL_PACKAGE) package"; \
	  $(SUDO) apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $(PROMTOOL_PACKAGE) >/dev/null; \
	else \
	  echo "make test needs promtool (Prometheus' rule checker). Install it with:" >&2; \
	  echo "    sudo apt-get install -y --no-install-recommends $(PROMTOOL_PACKAGE)   # Debian/Ubuntu; or: make tools SUDO=sudo" >&2; \
	  echo "    brew install prometheus                                       # macOS" >&2; \
	  exit 1; \
	fi

lint: $(STAMP)
	$(BIN)/ruff check otel_eval tests benchmarks examples docs/_hooks
	$(BIN)/ruff format --check otel_eval tests benchmarks examples docs/_hooks

typecheck: $(STAMP)
	$(BIN)/mypy otel_eval

# The documentation site (mkdocs.yml, docs/), strict: a broken link or anchor fails. Never add -q: MkDocs then stops
# counting the warnings that fail a strict build. NO_MKDOCS_2_WARNING silences the theme's notice about MkDocs 2.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The reference tables committed in docs/*.md (variables, metrics, telemetry names), written again from the code.
docs-tables: $(STAMP)
	$(BIN)/python docs/_hooks/reference_tables.py

# Three processes on two cores: the Kafka outage and fault tests mostly wait. A file's tests stay in one process.
# --no-loadscope-reorder keeps tests/conftest.py's order (the slowest files first) instead of most tests first.
unit: $(STAMP) tools
	$(BIN)/python -m pytest -q -n 3 --dist loadfile --no-loadscope-reorder

test: tools lint typecheck docs unit

# The real Phoenix and MLflow servers of the score-sink tests, each in a venv of its own under .venv-backends/
# (created on first use by the tests too; .ci/run starts this first, beside the rest, so the installs overlap other
# work). Only the standard library is needed: the bare $(PYTHON) runs it, before .venv exists.
backends:
	$(PYTHON) -m tests.emit.sinks.servers

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# docs/images/adk-*.png: docs/recipe-adk.md's recipes run against real Phoenix, MLflow and Prometheus servers, each UI
# photographed by a headless Chromium (needs `pip install playwright`, Debian's chromium and prometheus). Not in `test`.
# The recipe's pictures (docs/images/): real Phoenix, MLflow and Prometheus, Debian's chromium driven by playwright.
screenshots: $(STAMP)
	$(BIN)/python -m pip install --quiet 'playwright>=1.50'
	$(BIN)/python -m tests.docs.screenshots

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache site
