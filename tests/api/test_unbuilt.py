"""A source tree that was never built: importing it says what to do, and the
documentation, built from the checkout's root, documents the installed
package instead (issue 33: both failed with a bare 'No module named
sklstruct._chain')."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE_ONLY = shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__")


@pytest.fixture
def checkout(tmp_path):
    """The package's sources, unbuilt, with docs/ beside them."""
    if not (REPO / "sklstruct" / "__init__.py").is_file():
        pytest.skip("the package's sources are not beside the tests (they run from a copy "
                    "against an installed sklstruct)")
    shutil.copytree(REPO / "sklstruct", tmp_path / "sklstruct", ignore=SOURCE_ONLY)
    if (REPO / "docs" / "conf.py").is_file():
        shutil.copytree(REPO / "docs", tmp_path / "docs",
                        ignore=shutil.ignore_patterns("_build", "generated", "auto_examples"))
    return tmp_path


def run(code, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_importing_an_unbuilt_tree_says_how_to_build_it(checkout):
    # (an editable install's import hook would find the compiled modules in the
    # developer's checkout: take it away, as a plain installation has none)
    result = run("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in "
                 "getattr(f, '__module__', '').lower()]; import sklstruct", checkout)
    assert result.returncode != 0
    assert "sklstruct has not been built" in result.stderr
    assert "pip install -e ." in result.stderr and "outside the checkout" in result.stderr


def test_docs_conf_documents_the_installed_package_from_an_unbuilt_root(checkout):
    pytest.importorskip("sphinx")
    if not (checkout / "docs" / "conf.py").is_file():
        pytest.skip("no docs/conf.py beside the tests")
    installed = run("import sklstruct; print(sklstruct.__file__)", "/")
    if installed.returncode != 0:
        pytest.skip("sklstruct is not importable outside the checkout")
    result = run("import runpy; runpy.run_path('docs/conf.py'); import sklstruct; "
                 "print(sklstruct.__file__)", checkout)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == installed.stdout.strip()
