"""Sphinx configuration of the course site: `make site` builds it into build/site.

The source folder is the repository root, read in place (nothing is copied or
rewritten): the syllabus chapters/README.md is the root document, every chapter,
answer and notebook is a page (notebooks with their saved outputs, never
re-executed), and docs/api/ holds the API reference drawn from the docstrings.
"""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

project = "minigrad"
author = "the minigrad authors"
copyright = "minigrad authors"

extensions = [
    "myst_nb",                 # Markdown (MyST) and notebooks
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",     # the "Args:/Returns:/Raises:" sections of the docstrings
    "sphinx.ext.mathjax",
    "minigrad_site",
]

root_doc = "chapters/README"
include_patterns = ["chapters/**", "notebooks/*.ipynb", "docs/api/**", "docs/notebooks.md"]
exclude_patterns = [".venv", "build", ".git", "**/.ipynb_checkpoints", "chapters/fragments/**"]

# Notebooks are shown with the outputs they were committed with.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# Raw-HTML anchors (<a id="exercise-1.1">) are link targets MyST cannot see;
# links to them are checked in the built HTML by tests/site instead.
suppress_warnings = ["myst.xref_missing"]

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_ivar = True          # "Attributes:" as fields: no second entry beside the members

# Maths offline: MathJax 3 is copied into _static/mathjax after the build.
mathjax_path = "mathjax/tex-chtml.js"

html_theme = "furo"
html_title = "minigrad: gradient accumulation, from autograd up"
html_extra_path = ["_extra"]         # index.html: the site's front door opens the syllabus
html_copy_source = False
html_show_sourcelink = False
