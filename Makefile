# Rollout: `make run` starts the platform, `make test` runs every test. `make help` lists the rest.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_STAMP := sdk-typescript/node_modules/.installed

.DEFAULT_GOAL := help

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml sdk-python/pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is needed ($(PYTHON) not found)"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]' -e 'sdk-python[cli]'
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install the server, SDK and dev tools (only what is missing)

run: $(STAMP) ## Start the platform on SQLite + a local files folder (./.rollout), printing URL, login and API key
	$(VENV)/bin/rollout-server serve

test: $(STAMP) lint ## Run every test: unit, API, SDKs, CLI, browser, on SQLite and PostgreSQL, S3 on loopback
	$(PY) -m pytest -q

test-fast: $(STAMP) ## Run the tests without lint, stopping at the first failure
	$(PY) -m pytest -q -x

lint: $(STAMP) ## ruff and mypy
	$(VENV)/bin/ruff check src tests sdk-python bench
	$(VENV)/bin/mypy

format: $(STAMP) ## Format and fix imports with ruff
	$(VENV)/bin/ruff check --fix src tests sdk-python bench
	$(VENV)/bin/ruff format src tests sdk-python bench

openapi: $(STAMP) ## Regenerate docs/openapi.json from the app
	$(PY) -m rollout_server.openapi docs/openapi.json

migrate: $(STAMP) ## Apply database migrations (ROLLOUT_DATABASE_URL or the SQLite default)
	$(VENV)/bin/rollout-server db upgrade

bench: $(STAMP) ## Run the benchmarks in bench/ and print their tables
	$(PY) bench/ingest.py

clean: ## Remove the venv, caches and the local data folder
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

.PHONY: help install run test test-fast lint format openapi migrate bench clean
