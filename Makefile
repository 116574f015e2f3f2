# echd: `make run` for development, `make test` for the suite. PYTHON picks the interpreter
# (3.11+; e.g. `make test PYTHON=python3.13` for Django 6), VENV its virtualenv folder, ADDR
# the web server's address for `make run`.
PYTHON ?= python3
VENV ?= .venv
ADDR ?= 127.0.0.1:8000
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py emq_up --addr $(ADDR)

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache test-output
