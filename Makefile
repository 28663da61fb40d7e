# minigrad: the course's commands. `make test` works from a fresh clone that has
# nothing but python3: it builds .venv first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

# Notebooks are collected only when there are some (nbval needs .ipynb files).
NOTEBOOKS := $(wildcard notebooks/*.ipynb)
TEST_PATHS := tests tools/tests $(if $(NOTEBOOKS),notebooks)
# --nbval-current-env: run notebooks in this venv's kernel, not a system one.
PYTEST_ARGS := $(TEST_PATHS) --nbval-lax --nbval-current-env -q

.PHONY: venv test demo bench test-gpu notebooks jupyter clean check student selftest

venv: $(STAMP)

# Reinstalls only when pyproject.toml changes (or the venv is missing).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PIP) install -e '.[dev]'
	touch $(STAMP)

# CHAPTER=3 (or 3-5): only that chapter's tests; EX=3.2: one exercise's tests.
COURSE_ARGS := $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(EX),--exercise $(EX))

test: venv
	$(PY) -m pytest $(PYTEST_ARGS) $(COURSE_ARGS)

check: venv
	$(if $(EX),,$(error make check needs an exercise: make check EX=3.2))
	$(PY) -m pytest tests -q --exercise $(EX)

# The student copy: DEST (default build/student), CHAPTERS=3-5 blanks only those.
student: venv
	$(PY) tools/make_student.py $(if $(DEST),--dest $(DEST)) $(if $(CHAPTERS),--chapters $(CHAPTERS)) $(if $(FORCE),--force)

# Every exercise blanked in turn: its tests fail, earlier chapters still pass.
selftest: venv
	$(PY) tools/selftest.py

demo: venv
	$(PY) -m minigrad verify

bench: venv
	$(PY) benchmarks/run_all.py

test-gpu: venv
	$(PIP) install -e '.[dev,gpu]'
	MINIGRAD_TEST_DEVICE=cuda $(PY) -m pytest $(PYTEST_ARGS)
	$(PY) -m minigrad verify --device cuda

notebooks: venv
	$(if $(NOTEBOOKS),$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace $(NOTEBOOKS),@echo "no notebooks in notebooks/")

# Open the course notebooks in JupyterLab (adds the `notebooks` extra to .venv).
jupyter: venv
	$(PIP) install -e '.[notebooks]'
	$(VENV)/bin/jupyter lab notebooks/

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
