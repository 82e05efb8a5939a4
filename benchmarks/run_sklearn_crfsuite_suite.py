"""Run sklearn-crfsuite's own test suite against ``sklstruct.compat.CRF``.

    python benchmarks/run_sklearn_crfsuite_suite.py [SDIST_OR_SOURCE_DIR]

Without an argument, downloads the sdist from PyPI (``pip download
sklearn-crfsuite --no-deps --no-binary :all:``) into a temporary folder.
The suite runs from that temporary copy, never from the project: its
``tests/`` as they are, next to a stand-in ``sklearn_crfsuite`` package made
of its own ``metrics.py`` and ``utils.py`` and an ``__init__`` that says
``from sklstruct.compat import CRF``.  Nothing of sklearn-crfsuite is kept in
this repository.  Prints pytest's summary (passed / failed counts).
"""
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path


def source_tree(arg, work):
    if arg is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "sklearn-crfsuite",
                        "--no-deps", "--no-binary", ":all:", "-q", "-d", str(work)], check=True)
        arg = next(work.glob("sklearn_crfsuite-*.tar.gz"))
    arg = Path(arg)
    if arg.is_dir():
        return arg
    with tarfile.open(arg) as tar:
        tar.extractall(work, filter="data")
    return next(p for p in work.iterdir() if p.is_dir() and (p / "tests").is_dir())


def main(argv):
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = source_tree(argv[1] if len(argv) > 1 else None, work)
        run = work / "run"
        package = run / "sklearn_crfsuite"
        package.mkdir(parents=True)
        for name in ("metrics.py", "utils.py"):
            shutil.copy(src / "sklearn_crfsuite" / name, package / name)
        (package / "__init__.py").write_text("from sklstruct.compat import CRF  # noqa: F401\n")
        shutil.copytree(src / "tests", run / "tests")
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests",
               "-W", "ignore::DeprecationWarning"]
        print("running", " ".join(cmd), "in", run, flush=True)
        return subprocess.run(cmd, cwd=run, env=_env(run)).returncode


def _env(run):
    import os
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([str(run), here, env.get("PYTHONPATH", "")])
    return env


if __name__ == "__main__":
    sys.exit(main(sys.argv))
