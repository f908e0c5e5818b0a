# jaxjudge: `make install` then `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: install engine sandbox-image services lint test compose-check screenshots test-fast verify bench up down clean

install: $(BIN)/jaxjudge web/static/dist/editor.js

$(BIN)/jaxjudge: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

# The pages' code editor (CodeMirror 6), from the npm registry as pinned in the lockfile,
# bundled by esbuild (web/static/dist is not in the repository).
web/static/dist/editor.js: frontend/package.json frontend/package-lock.json frontend/src/editor.js
	@command -v npm >/dev/null || apt-get install -y -q nodejs npm
	cd frontend && npm ci --no-audit --no-fund && npm run build

engine:
	bash docker/engine.sh

sandbox-image: install engine
	PYTHON=$(BIN)/python bash docker/build-image.sh

# Redis and PostgreSQL binaries for the service and its tests (the tests start their own);
# Chromium and its driver for the browser tests (tests/browser).
services:
	@command -v redis-server >/dev/null || apt-get install -y -q redis-server
	@test -x /usr/lib/postgresql/15/bin/initdb || apt-get install -y -q postgresql-15
	@command -v chromedriver >/dev/null || apt-get install -y -q chromium chromium-driver

up: install
	bash scripts/service.sh up

down:
	bash scripts/service.sh down

lint: install
	$(BIN)/ruff check judge app api web lti workers service tools tests bench scripts
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python -m tools.k8s_validate

# verify and the security suite run in the zygote sandbox (the fast path, as the service);
# the security suite runs once more with a fresh container per submission.
test: lint services
	$(BIN)/jaxjudge verify --strict
	$(BIN)/pytest
	JAXJUDGE_SECURITY_SANDBOX=docker $(BIN)/pytest tests/security --deselect tests/security/test_zygote.py
	bash scripts/compose-check.sh

# compose.yaml for real: two worker containers, one killed mid-batch, TLS, backup and
# restore (docker/README.md, "The compose check").
compose-check: sandbox-image
	bash scripts/compose-check.sh

# The browser tests, copying one current picture of each page into docs/screenshots/.
screenshots: install services
	JAXJUDGE_DOCS_SCREENSHOTS=1 $(BIN)/pytest tests/browser

test-fast: install
	$(BIN)/pytest -m "not slow"

verify: install
	$(BIN)/jaxjudge verify --strict

bench: install
	$(BIN)/python bench/grade_problems.py
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/service.py
	$(BIN)/python bench/compile_flags.py
	$(BIN)/python bench/speed.py
	$(BIN)/python bench/cpu_accounting.py
	$(BIN)/python bench/verify_under_load.py
	$(BIN)/python bench/probes.py
	$(BIN)/python bench/compose_scale.py --aba

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache var frontend/node_modules web/static/dist
