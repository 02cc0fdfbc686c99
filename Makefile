# The two commands a new user needs: `make demo` and `make test`.
# Each bootstraps the environment itself (idempotently): uv is installed into .tools/,
# then `uv sync --frozen` installs exactly what uv.lock pins into .venv/.

PYTHON ?= python3
UV_VERSION := 0.13.8
UV := .tools/bin/uv
VENV := .venv
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/$(VENV)
export UV_PYTHON_DOWNLOADS := never

.PHONY: demo test lint typecheck pytest bench schema clean

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) uv.lock pyproject.toml
	$(UV) sync --frozen --quiet --compile-bytecode
	touch $@

demo: $(VENV)/.synced
	$(VENV)/bin/python examples/run_demo.py

test: $(VENV)/.synced
	$(VENV)/bin/ruff check src tests benchmarks examples
	$(VENV)/bin/ruff format --check src tests benchmarks examples
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest -q

bench: $(VENV)/.synced
	$(VENV)/bin/python benchmarks/bench_check.py

schema: $(VENV)/.synced
	$(VENV)/bin/tracework schema --write

clean:
	rm -rf .tools $(VENV) demo-workspace
