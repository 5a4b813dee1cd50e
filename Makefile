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

RUFF_PATHS := runtime debugger tests benchmarks screenshots

# One mypy over both packages, strict by pyproject.toml's [tool.mypy]: checking debugger/ on its
# own re-checked all of runtime/ it imports (67 s cold, against 49 s for the pair at once).
lint: $(BIN)/agency
	$(BIN)/ruff check $(RUFF_PATHS)
	$(BIN)/ruff format --check $(RUFF_PATHS)
	$(BIN)/mypy runtime debugger

# The type check is one process on one core, cold in a fresh clone for most of a minute: it runs
# beside the tests (its output in .mypy.log, shown at the end) instead of before them.
test: $(BIN)/agency
	$(BIN)/ruff check $(RUFF_PATHS)
	$(BIN)/ruff format --check $(RUFF_PATHS)
	@$(BIN)/mypy runtime debugger > .mypy.log 2>&1 & mypy=$$!; \
	$(BIN)/pytest -n 2 --durations=20 tests; tests=$$?; \
	wait $$mypy; typed=$$?; \
	echo "$(BIN)/mypy runtime debugger"; cat .mypy.log; rm -f .mypy.log; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

check: test

# Optional: the interpreter's hot modules compiled with mypyc (needs a C compiler); the runtime
# uses them while their sources are unchanged (runtime/vm/compiled.py), and pure Python without.
compiled: $(BIN)/agency
	$(BIN)/python -c 'import sys; from runtime.vm.compiled import main; sys.exit(main(["build"]))'

clean:
	rm -rf runtime/vm/_native build
