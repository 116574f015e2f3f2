# echd: `make run` for development, `make test` for the suite. PYTHON picks the interpreter
# (3.11+; e.g. `make test PYTHON=python3.13` for Django 6), VENV its virtualenv folder, ADDR
# the web server's address for `make run`, DOCS_ADDR the docs site's for `make docs`.
PYTHON ?= python3
VENV ?= .venv
ADDR ?= 127.0.0.1:8000
DOCS_ADDR ?= 127.0.0.1:8001
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test quick lint bench bench-vs soak dist docs snippets clean

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
# It runs in TEST_PROCESSES processes (pytest-xdist; each starts its own embedded Valkey and cluster):
# most tests wait on servers, processes and clocks, not on the CPU, so 3 fit a 2-core machine. The tests
# marked `timing` (a wall-clock bound) run after, alone. Exit code 5 is "no test selected" (PYTEST_ARGS).
# PYTEST_ARGS passes options on, e.g. `make test PYTEST_ARGS='-m "not slow"'`; TEST_PROCESSES=0 runs serially.
TEST_PROCESSES ?= 3
test: lint
	$(PY) -m pytest -n $(TEST_PROCESSES) --timing=skip $(PYTEST_ARGS) || [ $$? -eq 5 ]
	$(PY) -m pytest --timing=only $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The edit-test loop: the suite without the slow tests and without the files whose tests start processes,
# a browser or a docs build, or measure over seconds (the full `make test` runs them); no lint. About
# 40 s on a quiet 2-core machine. PYTEST_ARGS adds options, e.g. `make quick PYTEST_ARGS=-x`.
QUICK_SKIP := up dashboard_browser time_repeat leases live limits lanes observe foundation cli docs supervisor \
	api_live durable embedded_restart safe_defaults rounds wheel
quick: $(STAMP)
	$(PY) -m pytest -m "not slow" $(foreach t,$(QUICK_SKIP),--ignore=tests/test_$(t).py) $(PYTEST_ARGS)

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

# The docs' code blocks are copies of docs/examples/ (so GitHub shows code): copy them again after an
# example changed (tests/snippets.py; tests/test_docs.py fails while a page is out of date).
snippets: $(STAMP)
	$(PY) -m tests.snippets

bench: $(STAMP)
	$(PY) bench/run.py $(BENCH_ARGS)

# The speed goals against an earlier release (REV, v0.2.0 by default), in alternating runs on one Valkey.
REV ?= v0.2.0
bench-vs: $(STAMP)
	$(PY) bench/versus.py --rev $(REV) $(BENCH_ARGS)

# The soak (bench/soak.py): 10 minutes of mixed load with a worker killed every minute, then its
# verdict (0 lost, 0 stuck, 0 run twice, < 5 restarts the kills do not explain). SOAK_ARGS="--minutes 2".
soak: $(STAMP)
	$(PY) bench/soak.py $(SOAK_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache test-output dist site
