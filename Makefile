# `make demo` and `make test` set up .venv on first use (and again when pyproject.toml changes):
# demo with the package alone, test (and install) with the test extra.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install demo test bench clean dist

DEMO_STAMP := $(VENV)/.installed-demo

# An editable install in setuptools' strict mode: a tree of links under build/ that type
# checkers (mypy, pyright) resolve as `context_compaction`, which the default mode's import
# hook hides from them (issue 39). A link tree does not see files added later, so the
# install runs again when a package folder changes (a module added, moved or removed).
EDITABLE := --config-settings editable_mode=strict
PACKAGE_DIRS := $(shell find facade domain application infrastructure -type d -not -name __pycache__ 2>/dev/null)

# The test toolchain (pytest, PostgreSQL driver, FastAPI, schemathesis, mypy, ...).
$(STAMP): pyproject.toml $(PACKAGE_DIRS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]' $(EDITABLE)
	@touch $(STAMP) $(DEMO_STAMP)

# The demo needs the package alone: a first `make demo` installs no test toolchain.
$(DEMO_STAMP): pyproject.toml $(PACKAGE_DIRS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e . $(EDITABLE)
	@touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/ctxc demo

# --durations: the slowest tests show in every run, so a suite that slows down is seen (issue 14).
# Bytecode on: these machines set PYTHONDONTWRITEBYTECODE, so every worker and every
# `ctxc` the tests start recompiled our modules and re-rewrote the test modules' asserts
# (~40 s of a 6-minute suite, ADR 0060); __pycache__ is ignored by git and the sdist.
# --dist worksteal: each worker starts on a contiguous half (a module's tests, and its
# module-scoped fixture, stay on one worker) and an idle worker takes tests from the other,
# so a slow test drawn last no longer leaves one core idle for a minute (ADR 0089).
# TMPDIR on tmpfs where there is one: the tests' SQLite files (and every scratch file) then
# commit without waiting for the disk, which no test observes (~10-20 % of a SQLite
# test's time went to fsync); `make test TEST_TMPDIR=` keeps the system's temp folder.
TEST_TMPDIR ?= $(shell test -d /dev/shm -a -w /dev/shm && echo /dev/shm/ctxc-tests)
test: $(STAMP)
	$(if $(TEST_TMPDIR),mkdir -p $(TEST_TMPDIR))
	PYTHONDONTWRITEBYTECODE= $(if $(TEST_TMPDIR),TMPDIR=$(TEST_TMPDIR)) $(BIN)/pytest -n 2 --dist worksteal --durations=15 $(PYTEST_ARGS)

# The wheel and the sdist to install from (the package is on no index yet): built
# offline with the backend the test extra installs.
DIST ?= dist
dist: $(STAMP)
	$(BIN)/python -m build --no-isolation --outdir $(DIST) .

# Peers (LangChain, LlamaIndex) live in their own venv so they never leak into tests.
BENCH_VENV  := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

$(BENCH_STAMP): pyproject.toml benchmarks/requirements.txt
	@test -x $(BENCH_VENV)/bin/python || $(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e . -r benchmarks/requirements.txt
	@touch $(BENCH_STAMP)

# A full run (no BENCH_ARGS) then writes docs/performance.md from its results
# (benchmarks/render.py), whether or not every target held: a miss shows with its cause.
# Bytecode first: an editable install under PYTHONDONTWRITEBYTECODE (set on these
# machines) never caches it, so every `ctxc` start would recompile our modules; an
# installed wheel ships it (ADR 0016).
bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python -m compileall -q facade domain application infrastructure
	$(BENCH_VENV)/bin/python benchmarks/run.py $(BENCH_ARGS); status=$$?; \
	if [ -z "$(BENCH_ARGS)" ]; then $(BENCH_VENV)/bin/python benchmarks/render.py; fi; exit $$status

clean:
	rm -rf $(VENV) $(BENCH_VENV) .venv-313 .venv-newest-eventsourcing .pytest_cache .hypothesis build *.egg-info
