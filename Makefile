# Two commands for a fresh machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint pytest lit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -U "pip>=24" "setuptools>=69" wheel

# Reinstall only when the project's metadata changes (the install is editable).
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tp-opt examples/megatron_mlp.mlir

lint: $(STAMP)
	$(BIN)/ruff check tp_dialect passes tools tests benchmarks
	$(BIN)/ruff format --check tp_dialect passes tools tests benchmarks

pytest: $(STAMP)
	$(BIN)/pytest

lit: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/lit -sv lit_tests

test: lint pytest lit

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build *.egg-info
