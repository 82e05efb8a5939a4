"""The documentation (docs/) builds with Sphinx, warnings as errors, its
gallery running the scripts of examples/ and keeping their figures; README.rst
is valid reStructuredText, short, and cites only commands and files that exist."""
import os
import re
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
    for module in ("sphinx", "numpydoc", "sphinx_gallery", "myst_parser"):
        pytest.importorskip(module, reason=f"building the documentation needs {module} "
                                           "(pip install sphinx numpydoc sphinx-gallery "
                                           "myst-parser)")
    assert (REPO / "docs" / "conf.py").is_file(), (
        f"no docs/conf.py in {REPO}: copy docs/ along with tests/ and examples/")
    assert (REPO / "benchmarks" / "results").is_dir(), (
        f"no benchmarks/results in {REPO}: docs/benchmarks.rst includes its tables; "
        "copy benchmarks/ along with docs/")
    # A copy of docs/, examples/ and the benchmark results side by side, as in
    # the checkout: the build writes its stubs and gallery pages into the copy,
    # never into the checkout.
    src = tmp_path / "src"
    shutil.copytree(REPO / "docs", src / "docs", ignore=_BUILD_PRODUCTS)
    shutil.copytree(REPO / "examples", src / "examples", ignore=_BUILD_PRODUCTS)
    shutil.copytree(REPO / "benchmarks" / "results", src / "benchmarks" / "results")
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
    # every table the benchmarks wrote is on the benchmarks page
    page = (src / "docs" / "benchmarks.rst").read_text(encoding="utf-8")
    for table in (REPO / "benchmarks" / "results").glob("*.md"):
        assert f"../benchmarks/results/{table.name}" in page, table.name
    # every example ran and its matplotlib figure was scraped into the gallery
    for script in (REPO / "examples").glob("plot_*.py"):
        assert (out / "auto_examples" / f"{script.stem}.html").is_file(), script.name
        figures = (out / "_images").glob(f"sphx_glr_{script.stem}_[0-9][0-9][0-9].png")
        assert list(figures), f"{script.name}: no figure in the gallery"
    # the scripts saved their PNG files elsewhere (--out), not beside themselves
    assert sorted(p.name for p in (src / "examples").iterdir()) == examples_before


def _readme():
    path = REPO / "README.rst"
    if not path.is_file():
        pytest.skip(f"no README.rst in {REPO} (tests copied without it)")
    return path.read_text(encoding="utf-8")


def test_readme_is_short_and_valid_restructuredtext():
    docutils_core = pytest.importorskip("docutils.core")
    text = _readme()
    assert len(text.splitlines()) <= 250, "README.rst is the front door: at most 250 lines"
    # PyPI renders README.rst with plain docutils (no Sphinx roles or
    # directives); any warning there means a page rendered as raw text.
    docutils_core.publish_doctree(text, settings_overrides={
        "halt_level": 2, "report_level": 2, "file_insertion_enabled": False,
        "raw_enabled": False})


def test_readme_keeps_the_commands_ci_runs():
    text = _readme()
    # .ci/run runs the test command of README.rst verbatim
    assert '    pip install ".[test]" && pytest\n' in text
    assert "    pip install . && sklstruct demo\n" in text


def test_readme_cites_scripts_and_files_that_exist():
    text = _readme()
    cited = set(re.findall(r"\b((?:benchmarks|examples|docs|tests)/[\w./-]*\w)", text))
    cited |= set(re.findall(r"``([A-Z]+\.rst)``", text))
    assert cited, "README.rst cites no script"
    # docs/_build is what the documentation's build command writes
    missing = sorted(p for p in cited
                     if not p.startswith("docs/_build") and not (REPO / p).exists())
    assert not missing, f"README.rst cites paths that do not exist: {missing}"
