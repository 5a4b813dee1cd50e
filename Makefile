# One command each for the README's two lines. Both install into .venv with only python3.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(BIN)/agency: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/python -m compileall -q runtime debugger
	$(BIN)/python -m runtime.language.parse_cache
	touch $@

.PHONY: demo test check lint compiled clean
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

# Optional: the interpreter's hot modules compiled with mypyc (needs a C compiler); the runtime
# uses them while their sources are unchanged (runtime/vm/compiled.py), and pure Python without.
compiled: $(BIN)/agency
	$(BIN)/python -c 'import sys; from runtime.vm.compiled import main; sys.exit(main(["build"]))'

clean:
	rm -rf runtime/vm/_native build
