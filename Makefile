# minigrad: the course's commands. `make test` works from a fresh clone that has
# nothing but python3: it builds .venv first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

# Notebooks are collected only when there are some (nbval needs .ipynb files).
NOTEBOOKS := $(wildcard notebooks/*.ipynb)
TEST_PATHS := tests $(if $(NOTEBOOKS),notebooks)
# --nbval-current-env: run notebooks in this venv's kernel, not a system one.
PYTEST_ARGS := $(TEST_PATHS) --nbval-lax --nbval-current-env -q

.PHONY: venv test demo bench test-gpu notebooks jupyter clean

venv: $(STAMP)

# Reinstalls only when pyproject.toml changes (or the venv is missing).
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PIP) install -e '.[dev]'
	touch $(STAMP)

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

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

# The course as a static website in build/site (strict: any warning fails the build);
# open build/site/index.html, or `make serve` for http://127.0.0.1:8000/.
.PHONY: site serve
SITE_STAMP := $(VENV)/.site-installed
$(SITE_STAMP): pyproject.toml $(STAMP)
	$(PIP) install -e '.[site]'
	touch $(SITE_STAMP)

site: $(SITE_STAMP)
	$(PY) -m sphinx -W --keep-going -E -q -b html -c docs -d build/site-doctrees . build/site
	@echo "site: build/site/index.html"

SITE_PORT ?= 8000
serve: site
	$(PY) -m http.server --bind 127.0.0.1 --directory build/site $(SITE_PORT)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
