# Two commands: `make run` and `make test`. Everything else is set up by these targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make run PORT=8001` serves on another port (HOST likewise); unset, SWITCHBOARD_PORT and
# SWITCHBOARD_HOST apply, then 127.0.0.1:8000.
HOST ?=
PORT ?=

.PHONY: run test lint bench browser-deps migrate clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall when the project's dependencies change.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

migrate: $(STAMP)
	$(BIN)/switchboard migrate

run: $(STAMP)
	$(BIN)/switchboard serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

# Two workers fit the 2-core machines this runs on; TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

test: lint browser-deps
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The browser tests (tests/browser/) drive Debian's chromium, installed only when missing.
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then apt-get update && apt-get install -y chromium; fi

# Style, types (strict on every package but tests and bench) and the package layering
# (pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
