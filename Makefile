# One command each for the README's two lines. Both install into .venv with only python3.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/agency: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $@

.PHONY: demo test check lint
demo: $(BIN)/agency
	$(BIN)/agency run examples/dice.agency --mock examples/dice.mocks.json --no-record

lint: $(BIN)/agency
	$(BIN)/ruff check runtime debugger tests benchmarks screenshots
	$(BIN)/ruff format --check runtime debugger tests benchmarks screenshots
	$(BIN)/mypy runtime
	$(BIN)/mypy --strict debugger

test: $(BIN)/agency lint
	$(BIN)/pytest -n 2 --durations=20 tests

check: test
