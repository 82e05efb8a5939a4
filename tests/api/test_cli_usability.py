"""The command line as a new user meets it (issue 33, items 3 and 4):
progress bars on a terminal, files of the wrong columns refused, the
defaults in ``train --help``, one-line warnings, and a quick start."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import sklstruct.cli as cli
from sklstruct.__main__ import main
from sklstruct.datasets import make_chunking_corpus, read_conll, write_conll

tqdm = pytest.importorskip("tqdm")

TREES = [
    "( (S (NP-SBJ (DT the) (NN dog)) (VP (VBZ barks))) )",
    "( (S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog)))) )",
    "( (S (NP (NNP Mary)) (VP (VBZ sleeps)) (. .)) )",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli_usability")
    X, y = make_chunking_corpus(200, random_state=5)
    words = [[tok[:1] for tok in s] for s in X]     # (without the POS column)
    for tokens, kind in ((X, ""), (words, "_words")):
        for name, part in (("train", slice(150)), ("test", slice(150, None))):
            write_conll(tmp / f"{name}{kind}.txt", tokens[part], y[part])
    (tmp / "trees.mrg").write_text("\n".join(TREES) + "\n")
    (tmp / "sents.txt").write_text("the/DT cat/NN sees/VBZ a/DT dog/NN\nMary/NNP sleeps/VBZ\n")
    assert main(["train", str(tmp / "train.txt"), "-m", str(tmp / "model.skls"),
                 "-p", "max_iter=2", "-q"]) == 0
    assert main(["train-parser", str(tmp / "trees.mrg"), "-m", str(tmp / "parser.skls"),
                 "-p", "max_iter=5", "-q"]) == 0
    return tmp


def run(argv, capsys):
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr()


def fails(argv, capsys, warned=False):
    """(exit status, the one line on standard error) of a failing command
    (after a one-line warning when ``warned``)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    if warned:
        warning, err = err.split("\n", 1)
        assert warning.startswith("sklstruct: warning: "), warning
    assert err.startswith("sklstruct: error: ") and err.count("\n") == 1, err
    return info.value.code, err


# -- progress ------------------------------------------------------------------------------

def commands(files):
    """Each command that shows progress, with the bar's description and count."""
    f = {name: str(files / name) for name in ("train.txt", "test.txt", "model.skls",
                                                "trees.mrg", "sents.txt", "parser.skls")}
    return [
        (["train", f["train.txt"], "-m", str(files / "m.skls"), "-p", "max_iter=3"],
         r"perceptron: 100%\|.*\| 3/3"),
        (["train", f["train.txt"], "-m", str(files / "m.skls"), "-e", "crf",
          "-p", "max_iter=3"], r"crf: 100%\|.*\| 3/3"),
        (["tag", f["model.skls"], f["test.txt"]], r"tag: 100%\|.*\| 50/50"),
        (["evaluate", f["test.txt"], "-m", f["model.skls"]], r"tag: 100%\|.*\| 50/50"),
        (["train-parser", f["trees.mrg"], "-m", str(files / "p.skls"), "-p", "max_iter=4"],
         r"max-margin: 100%\|.*\| (\d)/\1"),             # (converged early: n/n)
        (["parse", f["parser.skls"], f["sents.txt"]], r"parse: 100%\|.*\| 2/2"),
    ]


def test_progress_bar_on_a_terminal_only_and_not_with_quiet(files, capsys, monkeypatch):
    """On a terminal, train (epochs, iterations), tag, evaluate --model,
    train-parser (iterations) and parse (sentences) show tqdm's bar on
    standard error; their output is the same with and without it; no bar
    off a terminal or with --quiet."""
    for argv, bar in commands(files):
        plain = run(argv, capsys)                      # (capsys: not a terminal)
        assert "%|" not in plain.err, (argv, plain.err)
        with monkeypatch.context() as m:
            m.setattr(sys.stderr, "isatty", lambda: True)
            shown = run(argv, capsys)
            quiet = run(argv + ["--quiet"], capsys)
        assert re.search(bar, shown.err), (argv, shown.err)
        assert "%|" not in quiet.err, (argv, quiet.err)
        if argv[0] in ("tag", "evaluate", "parse"):
            assert shown.out == plain.out == quiet.out, argv
        else:
            assert not re.search(r"-- \w+ \d+:", shown.out)   # (lines only with --verbose)
            assert shown.out.startswith("trained "), shown.out


def test_progress_bar_keeps_the_verbose_lines_and_the_model(files, tmp_path, capsys,
                                                            monkeypatch):
    from sklstruct import load_model

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    argv = ["train", str(files / "train.txt"), "-p", "max_iter=3"]
    out = run(argv + ["-m", str(tmp_path / "bar.skls"), "-v", "1"], capsys)
    assert re.findall(r"^-- Epoch (\d+):", out.out, re.M) == ["1", "2", "3"], out.out
    run(argv + ["-m", str(tmp_path / "quiet.skls"), "-q"], capsys)
    a, b = load_model(tmp_path / "bar.skls"), load_model(tmp_path / "quiet.skls")
    assert np.array_equal(a[-1].coef_, b[-1].coef_) and a[-1].verbose == 1
    run(argv + ["-m", str(tmp_path / "plain.skls")], capsys)
    assert load_model(tmp_path / "plain.skls")[-1].verbose == 0    # (not the bar's 1)


def test_no_bar_without_tqdm(files, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setitem(sys.modules, "tqdm", None)          # not installed
    out = run(["tag", str(files / "model.skls"), str(files / "test.txt")], capsys)
    assert out.err == ""


@pytest.mark.skipif(not hasattr(os, "openpty") or sys.platform == "win32",
                    reason="no pseudo-terminals")
@pytest.mark.parametrize("size", [(24, 80), (0, 0)])
def test_progress_bar_in_a_pseudo_terminal(files, tmp_path, size):
    """A real terminal: the bar is drawn on it (also on one that says it is
    0 x 0, as a new pseudo-terminal does); with --quiet nothing is."""
    import fcntl
    import struct
    import termios

    def stderr_of(*extra):
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
        try:
            subprocess.run([sys.executable, "-m", "sklstruct", "tag", str(files / "model.skls"),
                            str(files / "test.txt"), "-o", str(tmp_path / "out.txt"), *extra],
                           stderr=slave, check=True, timeout=120, cwd=tmp_path)
            os.close(slave)
            chunks = []
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:     # (Linux: EIO once the terminal's writers are gone)
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode(errors="replace")
        finally:
            os.close(master)
    assert re.search(r"tag: 100%\|.*\| 50/50", stderr_of())
    assert stderr_of("--quiet") == ""


# -- files of the wrong columns --------------------------------------------------------------

def test_tag_refuses_a_gold_column_where_the_model_reads_pos(files, capsys):
    """The issue's case: a model of (word, POS) tokens given (word, gold):
    refused, naming both column counts (it read the gold column as POS)."""
    status, err = fails(["tag", str(files / "model.skls"), str(files / "test_words.txt")],
                        capsys)
    assert status == 1
    assert "'" + str(files / "test_words.txt") + "' has 2 columns, and its column 2 holds " \
        "the model's labels" in err, err
    assert "the model was trained on 2 token columns and reads files of 2 (tokens only) " \
        "or 3 (tokens and gold labels) columns" in err, err
    status, err = fails(["evaluate", str(files / "test_words.txt"), "-m",
                         str(files / "model.skls")], capsys)
    assert status == 1 and "holds the model's labels" in err


def test_evaluate_refuses_a_file_without_a_predicted_column(files, capsys, tmp_path):
    # (word, POS, gold): the POS column read as gold, the gold one as predicted
    for path in ("test.txt", "test_words.txt"):
        status, err = fails(["evaluate", str(files / path)], capsys)
        assert status == 1 and "share no label" in err and "is there a predicted column?" \
            in err, err
    # columns that share labels but agree on few tokens: a one-line warning
    X, y = read_conll(files / "test.txt")
    shifted = [[("O" if label != "O" else "B-NP") for label in s] for s in y]
    path = tmp_path / "shifted.txt"
    write_conll(path, X, y, shifted)
    out = run(["evaluate", str(path)], capsys)
    assert out.err.startswith("sklstruct: warning: the last two columns agree on ")
    assert out.err.count("\n") == 1 and "FB1:" in out.out


def test_train_help_says_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "Defaults: -e perceptron (StructuredPerceptronTagger) with --features chunking" \
        in out, out
    assert "--features S1 / S2 / S3" in out and "default to those of its Python class" in out
    assert "(default: perceptron;" in out and "(default: chunking, which reads a POS column" \
        in out


def test_train_on_words_only_with_a_pos_preset_suggests_word_presets(files, capsys):
    path = str(files / "train_words.txt")
    for features in ([], ["--features", "swvm"]):
        status, err = fails(["train", path, "-m", str(files / "w.skls"), *features], capsys)
        assert status == 1 and "no column 'pos'" in err, err
        assert "the file has 2 columns, 1 of tokens and the labels" in err
        assert "--features S1/S2/S3 (or --templates)" in err
    assert "(the default)" in fails(["train", path, "-m", str(files / "w.skls")], capsys)[1]
    run(["train", path, "-m", str(files / "w.skls"), "--features", "S3", "-p", "max_iter=1"],
        capsys)
    # the rich presets use a POS column where there is one, and train without it
    run(["train", path, "-m", str(files / "w.skls"), "--features", "chunking-rich",
         "-p", "max_iter=1"], capsys)


def test_a_file_that_is_no_model_is_not_unpickled(files, capsys, monkeypatch):
    """A text file given as a model is refused as one, without joblib (it
    ended in 'IndexError: list index out of range')."""
    import joblib

    def load(*args, **kwargs):
        raise AssertionError("joblib.load called")
    monkeypatch.setattr(joblib, "load", load)
    for command in (["tag"], ["parse"]):
        status, err = fails(command + [str(files / "test.txt"), str(files / "test.txt")],
                            capsys)
        assert status == 1 and err.endswith("it is neither a model file nor a joblib model "
                                            "of an older sklstruct\n"), err


def test_a_damaged_joblib_file_is_explained(files, capsys, tmp_path):
    """A file that starts like an older joblib model but is not one: the
    message says so after the reader's own words (it ended in them)."""
    path = tmp_path / "damaged.joblib"
    path.write_bytes(b"\x78\x9cgarbage")
    status, err = fails(["tag", str(path), str(files / "test.txt")], capsys, warned=True)
    assert status == 1 and err.endswith("): it is damaged, or not a model\n"), err


# -- warnings --------------------------------------------------------------------------------

def test_warnings_are_one_line(files, capsys):
    """crf's ConvergenceWarning: one line, no file path or source line."""
    out = run(["train", str(files / "train.txt"), "-m", str(files / "crf.skls"), "-e", "crf",
               "-p", "max_iter=2"], capsys)
    assert out.err == ("sklstruct: warning: L-BFGS stopped after 2 iterations without "
                       "converging (maximum number of iterations reached); increase max_iter "
                       "(-p max_iter=N)\n"), out.err
    assert out.out.startswith("trained crf on 150 sentences")


# -- start-up --------------------------------------------------------------------------------

def test_help_imports_no_learner_nor_sklearn(tmp_path):
    """``sklstruct --help`` (and ``-m sklstruct``) imports neither
    scikit-learn nor SciPy nor the learners: the commands import them."""
    code = ("import runpy, sys\n"
            "sys.argv = ['sklstruct', '--help']\n"
            "try:\n"
            "    runpy.run_module('sklstruct', run_name='__main__', alter_sys=True)\n"
            "except SystemExit as exit:\n"
            "    assert exit.code == 0, exit.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sklearn', 'scipy') "
            "or m.startswith(('sklstruct.learners', 'sklstruct._registry', 'sklstruct._chain', "
            "'sklstruct.features'))))\n")
    # (run outside the checkout: from its root, its unbuilt sklstruct/ would be imported)
    path = os.pathsep.join([os.path.dirname(os.path.dirname(cli.__file__))]
                           + os.environ.get("PYTHONPATH", "").split(os.pathsep))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": path})
    assert result.returncode == 0, result.stderr
    assert "train-parser" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout


def test_lazy_public_names_are_the_registry():
    """sklstruct's public names are imported when first used: its list of
    estimators is the registry's."""
    import sklstruct
    from sklstruct._registry import ESTIMATORS

    assert sorted(sklstruct._ESTIMATOR_NAMES) == sorted(c.__name__ for c in ESTIMATORS.values())
    for cls in ESTIMATORS.values():
        assert getattr(sklstruct, cls.__name__) is cls and cls.__name__ in dir(sklstruct)
    assert sklstruct.ESTIMATORS is ESTIMATORS
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        sklstruct.nope
