# Rollout: `make run` starts the platform, `make test` runs every test. `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_STAMP := sdk-typescript/node_modules/.installed
# htmx and KaTeX for the web UI come from the npm registry; the server serves them from web/node_modules.
WEB_STAMP := web/node_modules/.installed

.DEFAULT_GOAL := help

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml sdk-python/pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed ($(PYTHON) not found)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]' -e 'sdk-python[cli]'
	@touch $(STAMP)

$(WEB_STAMP): web/package.json web/package-lock.json
	npm ci --prefix web --no-audit --no-fund --loglevel=error
	@touch $(WEB_STAMP)

$(NODE_STAMP): sdk-typescript/package.json sdk-typescript/package-lock.json
	@command -v npm >/dev/null || { echo "Node >= 20 and npm are needed for the TypeScript SDK"; exit 1; }
	cd sdk-typescript && npm ci --no-audit --no-fund --loglevel=error
	@touch $(NODE_STAMP)

install: $(STAMP) $(WEB_STAMP) ## Create .venv and install the server, SDK and dev tools (only what is missing)

run: $(STAMP) $(WEB_STAMP) ## Start the platform on SQLite + a local files folder (./.rollout), printing URL, login and API key
	$(VENV)/bin/rollout-server serve

test: $(STAMP) $(WEB_STAMP) lint check-types ## Run every test: unit, API, SDKs, CLI, browser, on SQLite and PostgreSQL, S3 on loopback
	$(PY) -m pytest -q

test-fast: $(STAMP) $(WEB_STAMP) ## Run the tests without lint, stopping at the first failure
	$(PY) -m pytest -q -x

lint: $(STAMP) ## ruff and mypy
	$(VENV)/bin/ruff check src tests sdk-python bench
	$(VENV)/bin/mypy

format: $(STAMP) ## Format and fix imports with ruff
	$(VENV)/bin/ruff check --fix src tests sdk-python bench
	$(VENV)/bin/ruff format src tests sdk-python bench

openapi: $(STAMP) $(NODE_STAMP) ## Regenerate docs/openapi.json and the TypeScript SDK's types from it
	$(PY) -m rollout_server.openapi docs/openapi.json
	cd sdk-typescript && npm run --silent generate

check-types: $(NODE_STAMP) ## Fail when the TypeScript SDK's generated types drift from docs/openapi.json
	cd sdk-typescript && npm run --silent check:generated

migrate: $(STAMP) ## Apply database migrations (ROLLOUT_DATABASE_URL or the SQLite default)
	$(VENV)/bin/rollout-server db upgrade

bench: $(STAMP) $(WEB_STAMP) ## Run the benchmarks in bench/ and print their tables (several minutes)
	$(PY) bench/ingest.py
	$(PY) bench/sdk_overhead.py
	$(PY) bench/export.py
	$(PY) bench/ui.py

clean: ## Remove the venv, caches and the local data folder
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache web/node_modules sdk-typescript/node_modules \
		sdk-typescript/dist examples/typescript/node_modules

.PHONY: help install run test test-fast lint format openapi check-types migrate bench clean
