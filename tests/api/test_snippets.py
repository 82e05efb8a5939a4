"""Every Python snippet of README.rst and of the user guide runs as written
(issue 33: README's did not: missing imports, undefined names).

Each page's ``.. code-block:: python`` blocks run in order in one namespace,
as a reader would run them, in a fresh folder; a block of ``>>>`` lines runs
as a doctest.  The files the snippets name as the reader's own (a CRFsuite
model, word vectors) are made in that folder first.  Literal blocks
(``::``) are sketches of files and commands and are not run.
"""
import doctest
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _data import data_dir, require_data

# ConvergenceWarning is expected: the snippets train with defaults on small data
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

REPO = Path(__file__).resolve().parents[2]
PAGES = ["README.rst"] + sorted(
    str(p.relative_to(REPO)) for p in (REPO / "docs" / "user_guide").glob("*.rst"))
_BLOCK = re.compile(r"^( *)\.\. code-block:: python *\n((?:\1 +.*\n|[ \t]*\n)+)", re.M)


def python_blocks(text):
    """The ``.. code-block:: python`` blocks of reStructuredText ``text``."""
    return [textwrap.dedent(m.group(2)).strip("\n") + "\n" for m in _BLOCK.finditer(text)]


def test_python_blocks_reads_blocks():
    text = ("Intro\n\n.. code-block:: python\n\n    x = 1\n\n    y = x\n\nAfter\n\n"
            "    .. code-block:: python\n\n        >>> 1 + 1\n        2\n")
    assert python_blocks(text) == ["x = 1\n\ny = x\n", ">>> 1 + 1\n2\n"]


def readers_files(folder):
    """The files the snippets treat as the reader's own."""
    words = [f"w{i}" for i in range(300)] + ["the", "dog", "barked"]
    vectors = np.random.default_rng(0).standard_normal((len(words), 8))
    with open(folder / "embeddings.txt", "w") as out:
        out.write(f"{len(words)} 8\n")
        for word, v in zip(words, vectors):
            out.write(word + " " + " ".join(f"{x:.4f}" for x in v) + "\n")
    pycrfsuite = pytest.importorskip("pycrfsuite")
    trainer = pycrfsuite.Trainer(verbose=False)
    trainer.append([{"word.lower()": "madrid"}, {"bias": 1.0}], ["B-LOC", "O"])
    trainer.append([{"word.lower()": "juan"}, {"bias": 1.0}], ["B-PER", "O"])
    trainer.set_params({"max_iterations": 5})
    trainer.train(str(folder / "model.crfsuite"))


@pytest.mark.parametrize("page", PAGES)
def test_snippets_run_as_written(page, tmp_path, monkeypatch):
    if not (REPO / page).is_file():
        pytest.skip(f"{page} is not beside the tests (they run from a copy)")
    text = (REPO / page).read_text(encoding="utf-8")
    blocks = python_blocks(text)
    if not blocks:
        pytest.skip(f"{page} has no Python snippet")
    for loader, corpus in (("load_conll2000", "conll2000"), ("load_conll2002_esp", "conll2002"),
                           ("load_treebank", "treebank")):
        if loader in text:
            require_data(corpus)
    monkeypatch.setenv("SKLSTRUCT_DATA", str(data_dir()))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    readers_files(tmp_path)
    namespace = {"__name__": "__snippet__"}
    for i, block in enumerate(blocks):
        where = f"{page}, Python block {i + 1}"
        if block.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(block, namespace, where, page, 0)
            runner = doctest.DocTestRunner(
                optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
            report = []
            runner.run(test, out=report.append, clear_globs=False)
            assert runner.failures == 0, f"{where}:\n{''.join(report)}"
            namespace.update(test.globs)
        else:
            exec(compile(block, where, "exec"), namespace)
