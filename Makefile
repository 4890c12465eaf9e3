# `make demo` and `make test` set up .venv on first use (and again when pyproject.toml changes).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/ctxc demo

test: $(STAMP)
	$(BIN)/pytest -n 2 $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r benchmarks/requirements.txt
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
