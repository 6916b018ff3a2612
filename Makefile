# keras_pretrain: `make demo` and `make test` do all the set-up on a fresh machine.
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
BACKENDS ?= tensorflow jax torch
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: install demo test test-large bench bench-full clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[jax,torch,test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) -m recipes.demo

test: install
	BACKENDS="$(BACKENDS)" PY=$(PY) bash .ci/test-backends

test-large: install
	BACKENDS="$(BACKENDS)" PY=$(PY) PYTEST_ARGS="-m large" bash .ci/test-backends

bench: install
	$(PY) -m benchmarks.run

bench-full: install
	$(PY) -m benchmarks.run --full

clean:
	rm -rf $(VENV) .pytest_cache runs
