# jaxjudge: `make install` then `make test`.
PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: install engine sandbox-image lint test test-fast verify bench clean

install: $(BIN)/jaxjudge

$(BIN)/jaxjudge: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $@

engine:
	bash docker/engine.sh

sandbox-image: install engine
	PYTHON=$(BIN)/python bash docker/build-image.sh

lint: install
	$(BIN)/ruff check judge api workers tests bench
	$(BIN)/lint-imports
	$(BIN)/mypy

test: lint
	$(BIN)/jaxjudge verify
	$(BIN)/pytest

test-fast: install
	$(BIN)/pytest -m "not slow"

verify: install
	$(BIN)/jaxjudge verify

bench: install
	$(BIN)/python bench/grade_seeds.py
	$(BIN)/python bench/sandbox.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
