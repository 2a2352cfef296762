# rollax developer commands. Each target creates .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# What is installed: rollax alone (training, plots, GIFs: what `make demo` needs), or with
# the test and benchmark extras (torch, torchrl, brax, the peer libraries).
CORE_STAMP := $(VENV)/.rollax-core
DOCS_STAMP := $(VENV)/.rollax-docs
DEV_STAMP := $(VENV)/.rollax-dev

.PHONY: install install-dev demo test test-latest test-fast lint format docs bench gpu-wheels constraints clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Reinstall whenever the dependencies change.
$(CORE_STAMP): $(PY) pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e .
	touch $@

$(DOCS_STAMP): $(PY) pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e ".[docs]"
	touch $@ $(CORE_STAMP)

# dev includes the docs tools (the suite builds the site).
$(DEV_STAMP): $(PY) pyproject.toml constraints.txt
	$(PIP) install --quiet -c constraints.txt -e ".[dev,bench]"
	touch $@ $(CORE_STAMP) $(DOCS_STAMP)

install: $(CORE_STAMP)
install-dev: $(DEV_STAMP)

## make demo: train PPO on CartPole-v1 into runs/demo-<time>/ (metrics, curve, checkpoints)
## and record the trained policy as policy.gif there.
DEMO_DIR := runs/demo-$(shell date +%Y%m%d-%H%M%S)
demo: $(CORE_STAMP)
	$(VENV)/bin/rollax train ppo --env CartPole-v1 --run-dir $(DEMO_DIR)
	$(VENV)/bin/rollax eval $(DEMO_DIR) --episodes 16 --video $(DEMO_DIR)/policy.gif
	@echo "Run directory: $(DEMO_DIR) (metrics.csv, curve.png, tb/, checkpoints/, policy.gif)"

## make test: the whole suite, slow tests included, after a lint check, on two workers
## (pytest-xdist; compiling is single-threaded, so two processes keep both cores busy), with
## the versions it runs with printed first (rollax info). PYTEST_ARGS="..." adds pytest
## options (.ci/run passes the selection of its pinned leg: tests/_legs.py).
## tests/test_docs.py builds the documentation with --strict and runs every Python block of
## README.md and docs/*.md.
test: $(DEV_STAMP)
	$(PY) -m ruff check src tests benchmarks examples docs/*.py
	$(PY) -m ruff format --check src tests benchmarks examples docs/*.py
	$(PY) -m rollax info  # the versions this leg runs with
	$(PY) -m pytest -n 2 --dist loadgroup --durations=25 $(PYTEST_ARGS)

## make test-latest: the suite without its slow tests on Python 3.12 and the newest releases
## of JAX, Flax, Optax and Orbax in .venv-latest, with every optional extra that installs
## beside them (never torch); the tests of the extras left out are deselected and named
## (.ci/test-latest says how). PYTEST_ARGS="..." adds pytest options, as for make test.
test-latest:
	bash .ci/test-latest $(PYTEST_ARGS)

## make test-fast: the suite without the tests marked slow.
test-fast: $(DEV_STAMP)
	$(PY) -m pytest -m "not slow"

lint: $(DEV_STAMP)
	$(PY) -m ruff check src tests benchmarks examples docs/*.py
	$(PY) -m ruff format --check src tests benchmarks examples docs/*.py

format: $(DEV_STAMP)
	$(PY) -m ruff check --fix src tests benchmarks examples docs/*.py
	$(PY) -m ruff format src tests benchmarks examples docs/*.py

## make docs: the documentation site (mkdocs.yml, docs/) built into site/; --strict, as the
## test suite builds it, so a broken link or API reference fails here too.
docs: $(DOCS_STAMP)  # NO_MKDOCS_2_WARNING: hides Material's end-of-life notice (May 2027)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict
	@echo "Documentation: site/index.html"

## make bench: every benchmark in benchmarks/, each ending with one JSON line.
bench: $(DEV_STAMP)
	$(PY) benchmarks/env_step.py
	$(PY) benchmarks/autoreset.py
	$(PY) benchmarks/ppo_cartpole.py
	$(PY) benchmarks/adapters.py
	$(PY) benchmarks/buffers.py
	$(PY) benchmarks/offpolicy.py

## make gpu-wheels: the wheels benchmarks/gpu.py needs on a lent GPU machine (Python 3.12,
## no registry) beyond the packages it has, downloaded into .whl/ (benchmarks/gpu_wheels.sh).
gpu-wheels:
	bash benchmarks/gpu_wheels.sh .whl 3.12

constraints: $(DEV_STAMP)
	{ sed -n '1,2p' constraints.txt; $(PIP) freeze --exclude-editable | grep -v '^rollax'; } > constraints.new
	mv constraints.new constraints.txt

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache src/*.egg-info site
