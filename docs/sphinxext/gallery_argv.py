"""How sphinx-gallery runs the scripts of ``examples/``.

Referred to from ``conf.py`` by name (``"gallery_argv.reset_argv"``): a
callable defined in ``conf.py`` itself would make the configuration
unpicklable, which Sphinx reports as a warning.
"""
import ast
import atexit
import shutil
import tempfile
from pathlib import Path

_OUT_DIR = None


def _out_dir():
    """One temporary directory per build for the PNG files the scripts save,
    removed when the build's process exits."""
    global _OUT_DIR
    if _OUT_DIR is None:
        _OUT_DIR = Path(tempfile.mkdtemp(prefix="sklstruct-gallery-"))
        atexit.register(shutil.rmtree, _OUT_DIR, ignore_errors=True)
    return _OUT_DIR


def reset_argv(gallery_conf, script_vars):
    """The command line of one example: its default (small) data, and
    ``--out`` in a temporary directory, so that nothing is written into the
    source tree (the figures in the gallery are scraped from matplotlib).

    sphinx-gallery runs a script with ``__doc__ = ""``; the scripts build
    their ``--help`` text from their docstring, as they do when run from the
    command line, so the docstring is put back into the script's globals.
    """
    src = Path(script_vars["src_file"])
    doc = ast.get_docstring(ast.parse(src.read_text(encoding="utf-8")), clean=False)
    script_vars["example_globals"]["__doc__"] = doc or ""
    return ["--out", str(_out_dir() / f"{src.stem}.png")]
