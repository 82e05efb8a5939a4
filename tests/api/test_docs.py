"""The documentation (docs/) builds with Sphinx, warnings as errors, its
gallery running the scripts of examples/ and keeping their figures."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: What a build writes into the source directory (autosummary's stubs, the
#: gallery's pages): never copied, so that every build starts from scratch.
_BUILD_PRODUCTS = shutil.ignore_patterns("_build", "generated", "auto_examples",
                                         "sg_execution_times.rst", "__pycache__")


def test_docs_build_with_warnings_as_errors(tmp_path):
    for module in ("sphinx", "numpydoc", "sphinx_gallery"):
        pytest.importorskip(module, reason=f"building the documentation needs {module} "
                                           "(pip install sphinx numpydoc sphinx-gallery)")
    assert (REPO / "docs" / "conf.py").is_file(), (
        f"no docs/conf.py in {REPO}: copy docs/ along with tests/ and examples/")
    # A copy of docs/ and examples/ side by side, as in the checkout: the build
    # writes its stubs and gallery pages into the copy, never into the checkout.
    src = tmp_path / "src"
    shutil.copytree(REPO / "docs", src / "docs", ignore=_BUILD_PRODUCTS)
    shutil.copytree(REPO / "examples", src / "examples", ignore=_BUILD_PRODUCTS)
    examples_before = sorted(p.name for p in (src / "examples").iterdir())
    out, doctrees = tmp_path / "html", tmp_path / "doctrees"

    # The command of docs/conf.py, run outside the checkout so that the
    # sklstruct imported is the one the tests import.
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
         str(src / "docs"), str(out), "-d", str(doctrees)],
        cwd=tmp_path, env={**os.environ, "MPLBACKEND": "Agg"},
        capture_output=True, text=True, timeout=900)

    assert result.returncode == 0, (
        f"sphinx-build failed (exit {result.returncode}):\n{result.stderr[-5000:]}")
    assert (out / "index.html").is_file() and (out / "api.html").is_file()
    # every example ran and its matplotlib figure was scraped into the gallery
    for script in (REPO / "examples").glob("plot_*.py"):
        assert (out / "auto_examples" / f"{script.stem}.html").is_file(), script.name
        figures = (out / "_images").glob(f"sphx_glr_{script.stem}_[0-9][0-9][0-9].png")
        assert list(figures), f"{script.name}: no figure in the gallery"
    # the scripts saved their PNG files elsewhere (--out), not beside themselves
    assert sorted(p.name for p in (src / "examples").iterdir()) == examples_before
