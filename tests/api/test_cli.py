"""The command line: demo, train, tag, evaluate."""
import operator
import os
import re
import subprocess
import sys
import zipfile

import joblib
import pytest

import sklstruct.datasets
from sklearn.linear_model import Perceptron
from sklearn.pipeline import make_pipeline

from sklstruct import cli, load_model, save_model
from sklstruct.__main__ import main
from sklstruct._registry import TAGGERS
from sklstruct.cli import build_parser
from sklstruct.datasets import make_chunking_corpus, read_conll, write_conll
from sklstruct.features import PRESETS, SequenceVectorizer


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    X, y = make_chunking_corpus(300, random_state=3)
    write_conll(tmp / "train.txt", X[:240], y[:240])
    write_conll(tmp / "test.txt", X[240:], y[240:])
    write_conll(tmp / "raw.txt", X[240:])
    return tmp


def test_demo(capsys):
    assert main(["demo", "--n-sentences", "300", "--k", "1", "2", "--max-iter", "3"]) == 0
    out = capsys.readouterr().out
    assert "perceptron k=1" in out and "perceptron k=2" in out
    assert "accuracy:" in out and "FB1:" in out


def test_train_tag_evaluate(files, capsys):
    model = files / "model.joblib"
    assert main(["train", str(files / "train.txt"), "-m", str(model),
                 "-p", "k=2", "-p", "max_iter=4", "-p", "random_state=0"]) == 0
    assert "trained perceptron on 240 sentences" in capsys.readouterr().out
    # tag an unlabelled file: one column added
    out = files / "tagged.txt"
    assert main(["tag", str(model), str(files / "raw.txt"), "-o", str(out)]) == 0
    X, pred = read_conll(out)
    assert len(X) == 60 and len(X[0][0]) == 2
    # tag a labelled file: gold kept, prediction appended, as conlleval reads it
    both = files / "both.txt"
    assert main(["tag", str(model), str(files / "test.txt"), "-o", str(both)]) == 0
    X2, _ = read_conll(both, target_column=None)
    assert len(X2[0][0]) == 4
    capsys.readouterr()
    assert main(["evaluate", str(both)]) == 0
    report = capsys.readouterr().out
    assert report.startswith("processed ") and "FB1:" in report
    assert main(["evaluate", str(files / "test.txt"), "--model", str(model)]) == 0
    assert capsys.readouterr().out == report


def fails(argv, capsys, warned=False):
    """Exit status and message of a command that must fail with one line on stderr
    (after the one-line warning of an older joblib model file when ``warned``)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    out, err = capsys.readouterr()
    if warned:
        warning, err = err.split("\n", 1)
        assert warning.startswith("sklstruct: warning: ") and "executes code" in warning
    assert err.startswith("sklstruct: error: ") and err.endswith("\n")
    assert err.count("\n") == 1, err  # one line, no traceback
    assert info.value.code in (1, 2)
    return info.value.code, err


@pytest.fixture(scope="module")
def model(files):
    path = files / "model.joblib"
    main(["train", str(files / "train.txt"), "-m", str(path), "-p", "max_iter=2"])
    return path


@pytest.fixture
def no_reading(monkeypatch):
    """Fail the test if the command reads a CoNLL file."""
    def read_conll(*args, **kwargs):
        raise AssertionError("the input was read before the arguments were checked")
    monkeypatch.setattr(sklstruct.datasets, "read_conll", read_conll)   # (cli imports it late)


def test_usage_errors_exit_2(files, capsys, no_reading):
    train = str(files / "train.txt")
    for argv, message in [
        ([], "the following arguments are required: command"),
        (["fly"], "invalid choice: 'fly'"),
        (["train", train], "the following arguments are required: --model/-m"),
        (["train", train, "-m", "m", "-e", "hmm"], "invalid choice: 'hmm'"),
        (["train", train, "-m", "m", "-p", "k"], "--param expects NAME=VALUE; got 'k'"),
        (["train", train, "-m", "m", "-p", "=1"], "NAME=VALUE"),
        (["train", train, "-m", "m", "-p", "k=0"], "'k' parameter"),
        (["train", train, "-m", "m", "-p", "nope=1"], "Invalid parameter 'nope'"),
        (["train", train, "-m", "m", "--window", "-1"], "must be at least 0"),
        (["train", train, "-m", "m", "--templates", "word", "--window", "1000000"],
         "'window' parameter"),
        (["train", train, "-m", "m", "--window", "3"],
         "--window applies to --templates and --features S3 only; the 'chunking' preset"),
        (["train", train, "-m", "m", "--features", "swvm", "--window", "1000000"],
         "the 'swvm' preset has its own window"),
        (["train", train, "-m", "m", "--templates", "word[99999999999999999999]"],
         "offset '99999999999999999999' is too large"),
        (["train", train, "-m", "m", "--templates", "wrod"], "unknown template name"),
        (["train", train, "-m", "m", "--templates", ","], "--templates lists no template"),
        (["train", train, "-m", "m", "--encoding", "klingon"], "unknown encoding"),
        (["train", train, "-m", train], "is the training file"),
        (["demo", "--k", "0"], "must be at least 1"),
        (["demo", "--n-sentences", "x"], "expected an integer"),
        (["tag", "model"], "the following arguments are required: input"),
        (["tag", str(files / "m"), train, "-o", train], "the output .* is the input file"),
    ]:
        status, err = fails(argv, capsys)
        assert status == 2, err
        assert re.search(message, err), err
    assert (files / "train.txt").stat().st_size > 0  # not overwritten


def test_runtime_errors_exit_1(files, model, capsys):
    train, test = str(files / "train.txt"), str(files / "test.txt")
    bad = files / "bad.txt"
    bad.write_text("a DT B-NP\nb NN\n")
    one_column = files / "one.txt"
    one_column.write_text("a\nb\n")
    empty = files / "empty.joblib"
    empty.write_bytes(b"")
    latin = files / "latin.txt"
    latin.write_bytes(b"caf\xe9 NN B-NP\n")
    for argv, message in [
        (["train", str(files / "missing.txt"), "-m", str(files / "m")],
         "training file '.*missing.txt' does not exist"),
        (["train", str(files), "-m", str(files / "m")], "is a directory, not a file"),
        (["train", str(bad), "-m", str(files / "m")], "line 2"),
        # swapped arguments: the model read as a CoNLL file
        (["train", str(model), "-m", str(files / "m2")], "training file '.*model.joblib' "
         "looks like a saved model, not a CoNLL file \\(are the arguments swapped\\?\\)"),
        (["tag", test, str(model)], "'.*test.txt' is not a model saved by 'sklstruct "
         "train' \\(is MODEL the right argument\\?\\)"),
        (["tag", str(files), test], "model '.*' is a directory"),
        (["tag", str(empty), test], "is not a model.*: it is empty"),
        (["tag", train, test], "is not a model.*: it is neither a model file nor a joblib"),
        (["tag", str(model), str(files)], "input '.*' is a directory"),
        (["tag", str(model), str(files / "nope.txt")], "input '.*nope.txt' does not exist"),
        (["tag", str(model), str(one_column)], "has 1 column; the model was trained on 2 "
         "token columns and reads files of 2 \\(tokens only\\) or 3"),
        (["tag", str(model), test, "-o", str(files)], "output '.*' is a directory"),
        (["tag", str(model), test, "-o", str(files / "no" / "such" / "dir.txt")],
         "cannot write output"),
        (["evaluate", str(model)], "input '.*' looks like a saved model"),
        (["evaluate", str(latin)], "[Cc]annot decode .* --encoding"),
        (["evaluate", str(one_column)], "needs at least two columns"),
        (["evaluate", test, "--model", train], "is not a model.*--model the right argument"),
        (["evaluate", str(files / "raw.txt"), "--model", str(model)],
         "has no gold label column"),
    ]:
        status, err = fails(argv, capsys)
        assert status == 1, err
        assert re.search(message, err), err
    assert not (files / "m").exists() and not (files / "m2").exists()
    if os.path.exists("/dev/full"):  # a write that fails after the check
        status, err = fails(["tag", str(model), test, "-o", "/dev/full"], capsys)
        assert status == 1 and "cannot write output '/dev/full': No space left" in err


def test_evaluate_with_a_strict_scheme(tmp_path, capsys):
    """--scheme IOBES counts S-PER S-PER as two chunks (conlleval: one)."""
    path = tmp_path / "iobes.txt"
    path.write_text("John S-PER B-PER\nMary S-PER E-PER\n\nin O O\n")
    assert main(["evaluate", str(path)]) == 0
    assert "found: 1 phrases; correct: 1." in capsys.readouterr().out
    assert main(["evaluate", str(path), "--scheme", "IOBES"]) == 0
    assert "with 2 phrases; found: 1 phrases; correct: 0." in capsys.readouterr().out
    status, err = fails(["evaluate", str(path), "--scheme", "IOB2"], capsys)
    assert status == 1 and "label 'S-PER' has no IOB2 prefix" in err, err


class _Boom:
    """Unpickling this runs operator.truediv(1, 0): a file can run any code."""

    def __reduce__(self):
        return operator.truediv, (1, 0)


@pytest.mark.parametrize("content, message", [
    (_Boom(), "is not a model.*ZeroDivisionError"),
    ([1, 2], "is not a model.*it holds a list"),
    ({"model": "text", "n_columns": 2}, "its model is a str, not a SequenceVectorizer "
     "\\(or SentenceFeatureUnion\\) \\+ sklstruct tagger pipeline"),
    ({"model": make_pipeline(SequenceVectorizer(), Perceptron()), "n_columns": 2},
     "its model is a Pipeline, not"),
    ({"model": make_pipeline(SequenceVectorizer(), TAGGERS["pa"]()), "n_columns": 2},
     "model '.*' is not fitted"),
    ({"model": make_pipeline(SequenceVectorizer(), TAGGERS["pa"]()), "n_columns": "2"},
     "n_columns='2' is not a positive int"),
])
def test_loaded_file_must_be_a_fitted_tagger_pipeline(files, capsys, content, message):
    path = files / "not_a_model.joblib"
    joblib.dump(content, path)
    status, err = fails(["tag", str(path), str(files / "raw.txt")], capsys, warned=True)
    assert status == 1 and re.search(message, err), err
    if isinstance(content, dict) and "Perceptron()" not in repr(content["model"]) \
            and not isinstance(content["model"], str):
        # the same contents in a pickle-free model file: the same refusals, no warning
        path = files / "not_a_model.skls"
        save_model(content["model"], path, metadata={"n_columns": content["n_columns"]})
        status, err = fails(["tag", str(path), str(files / "raw.txt")], capsys)
        assert status == 1 and re.search(message, err), err


def test_model_path_is_checked_before_training(files, capsys, no_reading):
    # Regression: an unwritable -m path was found only after training.
    for path, message in [(files, "model '.*' is a directory"),
                          (files / "missing" / "m.joblib", "cannot write model '.*m.joblib': "
                           "No such file or directory")]:
        status, err = fails(["train", str(files / "train.txt"), "-m", str(path)], capsys)
        assert status == 1 and re.search(message, err), err


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root may write anywhere")
def test_read_only_model_path(files, capsys, no_reading):
    path = files / "read_only.joblib"
    path.write_bytes(b"")
    path.chmod(0o444)
    status, err = fails(["train", str(files / "train.txt"), "-m", str(path)], capsys)
    assert status == 1 and "Permission denied" in err


def test_messages_are_one_line(files, capsys, monkeypatch):
    def fit(self, X, y):
        raise ValueError("first line\nsecond line " + "x" * 5000)
    monkeypatch.setattr(TAGGERS["perceptron"], "fit", fit)
    status, err = fails(["train", str(files / "train.txt"), "-m", str(files / "m")], capsys)
    assert status == 1 and "first line second line xxx" in err and len(err) < 1100
    assert not (files / "m").exists()


def test_estimators_come_from_the_registry():
    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    (estimator,) = [a for a in train._actions if a.dest == "estimator"]
    assert list(estimator.choices) == sorted(TAGGERS)
    assert not hasattr(cli, "ESTIMATORS")


def test_help_warns_that_models_run_code(capsys):
    with pytest.raises(SystemExit) as info:
        main(["tag", "--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "executes code" in out and "trusted" in out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "2 for usage errors" in " ".join(capsys.readouterr().out.split())


def test_python_dash_m(tmp_path):
    # run outside the checkout so that the installed package is the one imported
    result = subprocess.run([sys.executable, "-m", "sklstruct", "--help"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert "demo" in result.stdout and "evaluate" in result.stdout
    # errors: one line on stderr, status 2 for usage and 1 for runtime errors
    for argv, status in [(["train"], 2), (["tag", "nope.joblib", "nope.txt"], 1)]:
        result = subprocess.run([sys.executable, "-m", "sklstruct", *argv], cwd=tmp_path,
                                capture_output=True, text=True)
        assert result.returncode == status
        assert result.stderr.startswith("sklstruct: error: ")
        assert result.stderr.count("\n") == 1, result.stderr


@pytest.mark.parametrize("name, params", [("sdm", ["k=2", "max_iter=3"]),
                                          ("larank", ["k=2", "n_reprocess=2"])])
def test_train_dual_learners(files, capsys, name, params):
    model = files / f"{name}.joblib"
    args = ["train", str(files / "train.txt"), "-m", str(model), "-e", name]
    for p in params + ["random_state=0"]:
        args += ["-p", p]
    assert main(args) == 0
    assert f"trained {name} on 240 sentences" in capsys.readouterr().out
    assert main(["evaluate", str(files / "test.txt"), "--model", str(model)]) == 0
    assert "FB1:" in capsys.readouterr().out


def test_train_is_reproducible_documented_and_compressed(files, tmp_path, capsys):
    """Two identical runs give one model (--random-state, default 0); --help
    lists every estimator with its defaults, and the presets; models are
    saved compressed."""
    paths = [tmp_path / "a.joblib", tmp_path / "b.joblib", tmp_path / "c.joblib"]
    for path, extra in zip(paths, ([], [], ["--random-state", "5"])):
        assert main(["train", str(files / "train.txt"), "-m", str(path), "-e", "perceptron",
                     "-p", "max_iter=2"] + extra) == 0
    coefs = [load_model(p)[-1].coef_ for p in paths]
    assert (coefs[0] == coefs[1]).all() and not (coefs[0] == coefs[2]).all()
    assert load_model(paths[0])[-1].random_state == 0
    with open(paths[0], "rb") as f:
        assert f.read(4) == b"PK\x03\x04"    # a model file (a zip of .npy and JSON), no pickle
    assert "model.json" in zipfile.ZipFile(paths[0]).namelist()
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    for name, cls in TAGGERS.items():
        assert f"{name} ({cls.__name__})" in out
    assert "all_possible_states=False" in out and "n_rounds=20," in out
    assert "feature presets" in out and "swvm:" in out


def test_train_help_lists_exactly_the_preset_registry(capsys):
    """``train --help`` lists the presets of sklstruct.features.PRESETS, with
    their descriptions, and --features accepts exactly them."""
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    listed = out.split("feature presets (--features NAME):\n", 1)[1].rstrip("\n").split("\n")
    assert listed == [f"  {name}: {preset.description}" for name, preset in PRESETS.items()]
    assert "--features {" + ",".join(PRESETS) + "}" in out
    windowed = [name for name, preset in PRESETS.items() if preset.window is None]
    assert windowed == ["S3"] and "window for --templates and S3 (default 1)" in out


def test_docstart_lines_are_kept_and_counted_like_conlleval(files, tmp_path, capsys):
    """tag writes each -DOCSTART- line back (labelled O); evaluate counts it
    as a token, as conlleval does (its boundary is -X-, not -DOCSTART-)."""
    X, y = read_conll(files / "test.txt")
    X, y = X[:6], y[:6]
    body = tmp_path / "plain.txt"
    write_conll(body, X, y)
    text = body.read_text().split("\n\n")
    doc = "-DOCSTART- -X- O\n\n" + "\n\n".join(text[:3]) + "\n\n-DOCSTART- -X- O\n\n" + \
        "\n\n".join(text[3:])
    path = tmp_path / "doc.txt"
    path.write_text(doc)
    model = tmp_path / "m.joblib"
    assert main(["train", str(files / "train.txt"), "-m", str(model), "-p", "max_iter=2"]) == 0
    out = tmp_path / "tagged.txt"
    assert main(["tag", str(model), str(path), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert lines.count("-DOCSTART- -X- O O") == 2 and lines[0] == "-DOCSTART- -X- O O"
    n_tokens = sum(map(len, X))
    capsys.readouterr()
    assert main(["evaluate", str(out)]) == 0
    report = capsys.readouterr().out
    assert f"processed {n_tokens + 2} tokens" in report
    assert main(["evaluate", str(path), "--model", str(model)]) == 0
    assert capsys.readouterr().out == report


def test_tag_nbest_writes_crfpp_blocks(files, tmp_path, capsys):
    model = tmp_path / "m.joblib"
    assert main(["train", str(files / "train.txt"), "-m", str(model), "-p", "max_iter=2"]) == 0
    X, y = read_conll(files / "test.txt")
    small = tmp_path / "small.txt"
    write_conll(small, X[:3], y[:3])
    capsys.readouterr()
    assert main(["tag", str(model), str(small), "--nbest", "3"]) == 0
    blocks = capsys.readouterr().out.strip().split("\n\n")
    assert len(blocks) == 9
    saved = load_model(model)
    kbest = saved[-1].predict_kbest(saved[0].transform(X[:3]), k=3)
    for j, block in enumerate(blocks):
        i, rank = divmod(j, 3)
        head, *lines = block.split("\n")
        assert head == f"# {rank} {kbest[i][1][rank]:.6f}"
        assert [line.split()[-1] for line in lines] == list(kbest[i][0][rank])
        assert [line.split()[-2] for line in lines] == list(y[i])     # gold kept
    assert main(["tag", str(model), str(small), "-n", "1"]) == 0
    first = capsys.readouterr().out
    assert main(["tag", str(model), str(small)]) == 0
    plain = capsys.readouterr().out
    assert [b.split("\n", 1)[1] for b in first.strip().split("\n\n")] == \
        plain.strip().split("\n\n")


# -- parsing -------------------------------------------------------------------------------

TOY_TREES = [
    "( (S (NP-SBJ (DT the) (NN dog)) (VP (VBZ barks))) )",
    "( (S (NP (DT a) (NN cat)) (VP (VBZ sleeps) (-NONE- *T*-1))) )",
    "( (S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog)))) )",
    "( (S (NP (NNP John)) (VP (VBZ sees) (NP (DT the) (NN cat)) "
    "(PP (IN with) (NP (DT a) (NN telescope))))) )",
    "( (S (NP (NNP Mary)) (VP (VBZ sleeps)) (. .)) )",
]


@pytest.fixture(scope="module")
def treebank(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("parse")
    (tmp / "train.mrg").write_text("\n".join(TOY_TREES) + "\n")
    return tmp


@pytest.mark.parametrize("words", [False, True])
def test_train_parser_and_parse(treebank, capsys, words):
    model = treebank / f"parser{words}.joblib"
    argv = ["train-parser", str(treebank / "train.mrg"), "-m", str(model), "-p", "C=10",
            "-p", "max_iter=40"] + (["--words"] if words else [])
    assert main(argv) == 0
    assert "trained max-margin on 5 trees" in capsys.readouterr().out
    # the training sentences come back as their (preprocessed) trees, with scores
    out = treebank / "out.mrg"
    assert main(["parse", str(model), str(treebank / "train.mrg"), "--trees", "-o", str(out)]) == 0
    assert "F1 100.00" in capsys.readouterr().err
    assert out.read_text().splitlines()[0] == "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))"
    # one sentence per line; blank lines skipped
    sents = treebank / "sents.txt"
    sents.write_text("the cat sees a dog\n\nMary sleeps .\n" if words else
                     "the/DT cat/NN sees/VBZ a/DT dog/NN\n\nMary/NNP sleeps/VBZ ./.\n")
    assert main(["parse", str(model), str(sents)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["(S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog))))",
                     "(S (NP (NNP Mary)) (VP (VBZ sleeps)) (. .))"]


def test_parser_commands_fail_clearly(treebank, files, capsys):
    model = treebank / "pcfg.joblib"
    assert main(["train-parser", str(treebank / "train.mrg"), "-m", str(model),
                 "--parser", "pcfg"]) == 0
    capsys.readouterr()
    bad = treebank / "bad.mrg"
    bad.write_text("( (S (NP (DT the) (NN dog)) (VP (VBZ barks)) )\n")
    words = treebank / "words.txt"
    words.write_text("the dog barks\n")
    long = treebank / "long.txt"
    long.write_text(" ".join(["a/DT"] * 101) + "\n")
    tagger_model = files / "tagger.joblib"
    assert main(["train", str(files / "train.txt"), "-m", str(tagger_model)]) == 0
    cases = [
        (["train-parser", str(bad), "-m", str(treebank / "x.joblib")], 1, "bad.mrg"),
        (["train-parser", str(treebank / "nope.mrg"), "-m", str(treebank / "x.joblib")], 1,
         "does not exist"),
        (["train-parser", str(treebank / "train.mrg"), "-m", str(treebank / "x.joblib"),
          "-p", "C=-1"], 2, "C"),
        (["train-parser", str(treebank / "train.mrg"), "-m", str(treebank / "train.mrg")], 2,
         "overwrite"),
        (["train-parser", str(treebank / "train.mrg"), "-m", str(treebank / "x.joblib"),
          "--max-length", "1"], 1, "no tree"),
        (["parse", str(model), str(words)], 1, "line 1: token 'the' is not word/TAG"),
        (["parse", str(model), str(long)], 1, "line 1: 101 tokens"),
        (["parse", str(tagger_model), str(words)], 1, "not a model saved by 'sklstruct "
         "train-parser'"),
        (["parse", str(words), str(words)], 1, "not a model"),
        (["parse", str(model), str(treebank / "train.mrg"), "--trees", "-o",
          str(treebank)], 1, "is a directory"),
        (["parse", str(model), str(words), "-o", str(words)], 2, "would be overwritten"),
    ]
    for argv, status, message in cases:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == status, (argv, err)
        assert message in err, (argv, err)
        assert err.count("\n") == 1


@pytest.mark.parametrize("features", ["chunking-rich", "ner-rich"])
def test_a_rich_preset_model_tags(files, capsys, features):
    """A rich preset's features are a union (templates, and the label
    dictionary and gazetteer learned from the training labels): tag and
    evaluate read such a model (they refused it as not a vectorizer)."""
    model = files / f"{features}.joblib"
    assert main(["train", str(files / "train.txt"), "-m", str(model), "--features", features,
                 "-p", "max_iter=2"]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(files / "test.txt"), "--model", str(model)]) == 0
    assert "FB1:" in capsys.readouterr().out
    out = files / f"{features}.txt"
    assert main(["tag", str(model), str(files / "raw.txt"), "-o", str(out), "--nbest", "2"]) == 0


def test_models_are_pickle_free_and_older_joblib_models_still_load(files, tmp_path, capsys):
    """train writes a model file that numpy opens without pickle; a joblib
    model of an older sklstruct still tags, the same, after a warning that
    loading it runs code."""
    import numpy as np

    path = tmp_path / "m.skls"
    assert main(["train", str(files / "train.txt"), "-m", str(path), "-p", "max_iter=2"]) == 0
    with np.load(path, allow_pickle=False) as npz:
        assert "model.json" in npz.files
    old = tmp_path / "m.joblib"
    joblib.dump({"model": load_model(path), "n_columns": 2, "sklstruct_version": "0.1.0"},
                old, compress=3)
    outputs = []
    for model in (path, old):
        capsys.readouterr()
        assert main(["tag", str(model), str(files / "raw.txt")]) == 0
        out, err = capsys.readouterr()
        outputs.append(out)
        assert ("executes code" in err) == (model == old), err
    assert outputs[0] == outputs[1]
