"""Sphinx configuration of the sklstruct documentation.

Build from the root of a checkout (warnings are errors, as in CI)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The build writes the API stubs (``generated/``), the gallery pages
(``auto_examples/``) and ``_build/`` into docs/; none of them is under version
control (docs/.gitignore).
"""
import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
try:
    import sklstruct
except ImportError:
    # ``python -m sphinx`` from the checkout's root puts the checkout first on
    # sys.path, and its sklstruct/ is the source tree, unbuilt unless built in
    # place: document the installed package instead.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != str(DOCS.parent)]
    for name in [m for m in sys.modules if m.split(".")[0] == "sklstruct"]:
        del sys.modules[name]
    import sklstruct
sys.path.insert(0, str(DOCS / "sphinxext"))

# -- project -------------------------------------------------------------------
project = "sklstruct"
author = "the sklstruct developers"
copyright = "the sklstruct developers"
version = release = sklstruct.__version__

# -- general -------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # benchmarks.rst includes the Markdown tables the benchmark scripts write
    # into benchmarks/results/, as they wrote them.
    "myst_parser",
]
templates_path = ["_templates"]
exclude_patterns = ["_build"]
# Some of the included result files start at a second-level Markdown heading
# (they are parts of one benchmark's output); they nest under the page's own
# section either way.
suppress_warnings = ["myst.header"]
default_role = "literal"        # `x` in prose is code, as ``x``
# No intersphinx: building must not need the network; references to numpy,
# scipy or scikit-learn objects render as plain code.

# -- autodoc / autosummary / numpydoc -------------------------------------------
autosummary_generate = True
# ChainTagger's predict, calibrate, predict_marginals, ... are documented on
# every tagger that inherits them.
autodoc_default_options = {"inherited-members": True}
autodoc_typehints = "none"
# numpydoc writes Parameters, Attributes, References, ...; the methods come from
# autodoc's :members: (_templates/class.rst), not a second time from numpydoc.
numpydoc_show_class_members = False

# -- sphinx-gallery -----------------------------------------------------------------
# The scripts of examples/ run on their small default data (about half a minute
# in all) and their matplotlib figures are scraped into the pages;
# gallery_argv.reset_argv gives each one ``--out`` in a temporary directory, so
# nothing is written into the source tree.
sphinx_gallery_conf = {
    "examples_dirs": str(DOCS.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "reset_argv": "gallery_argv.reset_argv",
    "image_scrapers": ("matplotlib",),
    "doc_module": ("sklstruct",),
    "backreferences_dir": "generated/backreferences",
    "download_all_examples": False,
}

# -- HTML -----------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"sklstruct {release}"
html_theme_options = {
    "description": "Structured learners for sequence labeling and parsing, "
                   "with a scikit-learn API",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "relations.html", "searchbox.html"]}
html_show_sourcelink = False


def _skip_metadata_routing(app, what, name, obj, skip, options):
    """Leave out scikit-learn's metadata-routing methods (``set_fit_request``,
    ``get_metadata_routing``, ...), which every estimator inherits: they are
    scikit-learn's API, documented there, and their docstrings refer to
    scikit-learn's own user guide."""
    if name == "get_metadata_routing" or re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_routing)
