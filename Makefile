# echd: `make run` for development, `make test` for the suite. PYTHON picks the interpreter
# (3.11+; e.g. `make test PYTHON=python3.13` for Django 6), VENV its virtualenv folder, ADDR
# the web server's address for `make run`, DOCS_ADDR the docs site's for `make docs`.
PYTHON ?= python3
VENV ?= .venv
ADDR ?= 127.0.0.1:8000
DOCS_ADDR ?= 127.0.0.1:8001
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench dist docs clean

$(STAMP): requirements.txt requirements-dev.txt docs/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

# Development: DEBUG on unless set otherwise (the settings refuse the development key without it).
run: $(STAMP)
	DEBUG=$${DEBUG:-1} $(PY) manage.py migrate --noinput
	DEBUG=$${DEBUG:-1} $(PY) manage.py emq_up --addr $(ADDR)

# The suite starts with the lint: a broken layer contract or a ruff error fails `make test`.
# PYTEST_ARGS passes options on, e.g. `make test PYTEST_ARGS='-m "not slow"'`.
test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

# The sdist and the wheel of django-emq (the app alone) in dist/, checked as PyPI would; built
# with the hatchling pinned in requirements-dev.txt (--no-isolation), so a build is reproducible.
dist: $(STAMP)
	rm -rf dist
	$(PY) -m build --no-isolation --outdir dist .
	$(VENV)/bin/twine check --strict dist/*

# The documentation site, rebuilt on every save (tests/test_docs.py builds it with --strict).
docs: $(STAMP)
	$(VENV)/bin/mkdocs serve --dev-addr $(DOCS_ADDR)

bench: $(STAMP)
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache test-output dist site
