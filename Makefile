# minigrad: the course's commands. `make test` works from a fresh clone that has
# nothing but python3: it builds .venv first.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# The interpreter's version (empty when $(PYTHON) is not found).  The stamp's
# name records it, so .venv is rebuilt when another Python builds it.
VERSION_CODE := import sys; print("%d.%d.%d" % sys.version_info[:3])
PYTHON_VERSION := $(shell $(PYTHON) -c '$(VERSION_CODE)' 2>/dev/null)
STAMP  := $(VENV)/.installed-python$(PYTHON_VERSION)

# Notebooks are collected only when there are some (nbval needs .ipynb files).
NOTEBOOKS := $(wildcard notebooks/*.ipynb)
TEST_PATHS := tests tools/tests $(if $(NOTEBOOKS),notebooks)
# --nbval-current-env: run notebooks in this venv's kernel, not a system one.
PYTEST_ARGS := $(TEST_PATHS) --nbval-lax --nbval-current-env -q

.PHONY: venv test demo bench test-gpu check-kernels notebooks jupyter clean check-python check student selftest grade figures mutants

venv: $(STAMP)

# Reinstalls only when pyproject.toml changes, the venv is missing, or
# another Python is asked for.
$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory check-python PYTHON='$(PYTHON)'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip
	$(PIP) install -e '.[dev]'
	rm -f $(VENV)/.installed*
	touch $(STAMP)

# Python >= 3.10, checked before anything is built; a .venv made by another
# interpreter (or whose interpreter is gone) is removed, to be rebuilt.
check-python:
	@case "$(PYTHON_VERSION)" in \
	  3.1[0-9].*|3.[2-9][0-9].*) ;; \
	  "") echo "minigrad: '$(PYTHON)' was not found; install Python >= 3.10 or run: make PYTHON=/path/to/python3" >&2; exit 1;; \
	  *) echo "minigrad: needs Python >= 3.10, but '$(PYTHON)' is Python $(PYTHON_VERSION); run: make PYTHON=python3.11 (or another 3.10+)" >&2; exit 1;; \
	esac
	@if [ -d $(VENV) ] && [ "$$($(PY) -c '$(VERSION_CODE)' 2>/dev/null)" != "$(PYTHON_VERSION)" ]; then \
	  echo "minigrad: $(VENV) was built by another Python; removing it to rebuild with Python $(PYTHON_VERSION)"; \
	  rm -rf $(VENV); \
	fi

# CHAPTER=3 (or 3-5): only that chapter's tests; EX=3.2: one exercise's tests;
# ARGS: more pytest options (e.g. ARGS=--run-blocked, ARGS='--tb=short').
# In a student copy handed out chapter by chapter (make student CHAPTERS=1-3),
# the default is the chapters released so far (student.json's test_chapters).
RELEASED_CHAPTERS := $(shell sed -n 's/^ *"test_chapters": "\([0-9-]*\)".*/\1/p' student.json 2>/dev/null)
TEST_CHAPTERS := $(or $(CHAPTER),$(RELEASED_CHAPTERS))
COURSE_ARGS := $(if $(TEST_CHAPTERS),--chapter $(TEST_CHAPTERS)) $(if $(EX),--exercise $(EX)) $(ARGS)

test: venv
	$(PY) -m pytest $(PYTEST_ARGS) $(COURSE_ARGS)

# (the site's tests check the course website, not an exercise: left out, and so
# are their "site extra is not installed" skips).  Only the test files that can
# hold the exercise's tests are collected (tools/course_plugin.py, _exercise_files):
# the same tests as collecting tests/ whole, in a fraction of the time.
check: venv
	$(if $(EX),,$(error make check needs an exercise: make check EX=3.2))
	@$(PY) tools/exercises.py --check '$(EX)'
	$(PY) -m pytest tests -q --ignore=tests/site --exercise $(EX) --whole-exercise $(ARGS)

# The student copy: DEST (default build/student); CHAPTERS=1-3 releases those
# chapters' exercises (later chapters' answers are blanked too); FORCE=1 replaces
# a copy that holds no work; UPDATE=1 brings this release into a copy with
# answers, keeping them (chapters/TEACHING.md). The copy has the hints to the
# chapter questions (chapters/hints/); ANSWERS=1 keeps their answers too.
student: venv
	$(PY) tools/student.py $(if $(DEST),--dest $(DEST)) $(if $(CHAPTERS),--chapters $(CHAPTERS)) $(if $(FORCE),--force) $(if $(UPDATE),--update) $(if $(ANSWERS),--answers)

# Grade a class: SUBMISSIONS=dir/ (a student copy or a .bundle per student)
# against RELEASE (default build/student); JOBS at once; OUT (build/grades);
# EX=3.1,3.2 grades only those; MODE=fast runs only the tests marked with an
# exercise, MODE=full every test of the graded chapters (chapters/TEACHING.md);
# LIMIT seconds per student (600), TEST_LIMIT seconds per test (60), MEMORY GiB
# per run (4).  Each submission runs in a bubblewrap sandbox
# (apt-get install -y bubblewrap); without it make grade says so and grades anyway.
grade: venv
	$(if $(SUBMISSIONS),,$(error make grade needs SUBMISSIONS=folder/ with one student copy or .bundle per student))
	$(PY) tools/grade.py --submissions $(SUBMISSIONS) $(if $(RELEASE),--release $(RELEASE)) $(if $(JOBS),--jobs $(JOBS)) $(if $(OUT),--out $(OUT)) $(if $(LIMIT),--limit $(LIMIT)) $(if $(TEST_LIMIT),--test-limit $(TEST_LIMIT)) $(if $(MEMORY),--memory $(MEMORY)) $(if $(EX),--exercises $(EX)) $(if $(MODE),--mode $(MODE))

# The chapters' figures, drawn by code: tools/make_figures.py (figures of
# chapters 01-03), tools/make_chapter_figures.py (one figure each of 04-06) and
# tools/figures/chNN.py (the others, every chapter; `python -m tools.figures NN`).
figures: venv
	$(PY) tools/make_figures.py
	$(PY) tools/make_chapter_figures.py
	$(PY) -m tools.figures

# Plausible mistakes (tools/mutants/*.json) applied one at a time to a copy; each
# must fail what `make check EX=N.M` runs (tools/mutation.py). EX=1.13,4.3: only those.
mutants: venv
	$(PY) tools/mutation.py $(if $(EX),--exercises $(EX))

# Every exercise blanked in turn: its tests fail, earlier chapters still pass.
selftest: venv
	$(PY) tools/selftest.py

demo: venv
	$(PY) -m minigrad verify

bench: venv
	$(PY) benchmarks/run_all.py

# Every fused GPU kernel compiled with NVRTC for sm_90, without a GPU: installs
# the kernels extra (CuPy, NVRTC, CUDA headers; from PyPI) into the venv first.
# CuPy stays installed there; without a driver minigrad still runs on the CPU
# and the GPU tests skip (CI runs this target last).
check-kernels: venv
	$(PIP) install -e '.[kernels]'
	$(PY) tools/check_kernels.py
	$(PY) -m pytest tools/tests/test_check_kernels.py -q

test-gpu: venv
	$(PIP) install -e '.[dev,gpu]'
	MINIGRAD_TEST_DEVICE=cuda $(PY) -m pytest $(PYTEST_ARGS)
	$(PY) -m minigrad verify --device cuda

# Re-executes in place without volatile metadata (timestamps, versions), so an
# unchanged notebook stays an unchanged file (tools/execute_notebooks.py).
notebooks: venv
	$(if $(NOTEBOOKS),$(PY) tools/execute_notebooks.py $(NOTEBOOKS),@echo "no notebooks in notebooks/")

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
