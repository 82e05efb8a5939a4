"""The command line: demo, train, tag, evaluate."""
import subprocess
import sys

import pytest

from sklstruct.__main__ import main
from sklstruct.datasets import make_chunking_corpus, read_conll, write_conll


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


def test_errors_are_reported_not_raised(files, capsys):
    assert main(["train", str(files / "missing.txt"), "-m", str(files / "m")]) == 2
    assert "error:" in capsys.readouterr().err
    bad = files / "bad.txt"
    bad.write_text("a DT B-NP\nb NN\n")
    assert main(["train", str(bad), "-m", str(files / "m")]) == 2
    assert "line 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", str(files / "train.txt"), "-m", str(files / "m"), "-p", "k"])
    assert main(["train", str(files / "train.txt"), "-m", str(files / "m"), "-p", "k=0"]) == 2
    assert "'k' parameter" in capsys.readouterr().err


def test_python_dash_m(tmp_path):
    # run outside the checkout so that the installed package is the one imported
    result = subprocess.run([sys.executable, "-m", "sklstruct", "--help"], cwd=tmp_path,
                            capture_output=True, text=True, check=True)
    assert "demo" in result.stdout and "evaluate" in result.stdout


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
