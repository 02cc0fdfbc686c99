# The two commands a new user needs: `make demo` and `make test`.
# Each bootstraps the environment itself (idempotently): uv is installed into .tools/,
# then `uv sync --frozen` installs exactly what uv.lock pins into .venv/.

PYTHON ?= python3
UV_VERSION := 0.13.9
UV := .tools/bin/uv
VENV := .venv
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/$(VENV)
export UV_PYTHON_DOWNLOADS := never

.PHONY: setup demo test test-fast docs bench schema clean

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

$(VENV)/.synced: $(UV) uv.lock pyproject.toml
	$(UV) sync --frozen --quiet --compile-bytecode --all-extras
	touch $@

# the pinned Mermaid that reports vendor (package.json + package-lock.json; no scripts run)
node_modules/.installed: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

# the `tracework` Jupyter kernel: this environment's Python, for JupyterLab and papermill
$(VENV)/share/jupyter/kernels/tracework/kernel.json: $(VENV)/.synced
	$(VENV)/bin/python -c "from tracework.kernels.spec import ensure_kernelspec; ensure_kernelspec()"

setup: $(VENV)/.synced node_modules/.installed $(VENV)/share/jupyter/kernels/tracework/kernel.json

demo: setup
	$(VENV)/bin/python examples/run_demo.py

test: setup docs
	$(VENV)/bin/ruff check src tests benchmarks examples docs
	$(VENV)/bin/ruff format --check src tests benchmarks examples docs
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/pytest -q -n 2

# the quick loop while editing: lint, types and every test not marked slow
test-fast: setup
	$(VENV)/bin/ruff check src tests benchmarks examples docs
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/pytest -q -m "not slow" -p no:cacheprovider -n 2

# the documentation site, offline, warnings as errors: site-docs/index.html opens from disk
docs: $(VENV)/.synced node_modules/.installed
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

bench: setup
	$(VENV)/bin/python benchmarks/bench_check.py

# after changing src/tracework/register/models.py: the JSON Schema and the check's generated data module
schema: $(VENV)/.synced
	$(VENV)/bin/tracework schema --write
	$(VENV)/bin/python -m tracework.register.datagen

clean:
	rm -rf .tools $(VENV) node_modules examples/build site-docs
