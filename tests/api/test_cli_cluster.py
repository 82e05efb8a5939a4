"""The command line's clustering (issue 33): ``sklstruct cluster`` writes the
paths file of BrownClusters from plain text or CoNLL files, with a progress
bar on a terminal only; ``train --clusters`` reads it."""
import re
import subprocess
import sys

import pytest

from sklstruct import BrownClusters, load_model
from sklstruct.__main__ import main
from sklstruct.datasets import make_chunking_corpus, write_conll


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli_cluster")
    X, y = make_chunking_corpus(200, random_state=4)
    write_conll(tmp / "train.txt", X[:150], y[:150])
    write_conll(tmp / "test.txt", X[150:], y[150:])
    text = "".join(" ".join(tok[0] for tok in s) + "\n\n" for s in X[:150])  # (blank lines)
    (tmp / "text.txt").write_text(text, encoding="utf-8")
    return tmp, [[tok[0] for tok in s] for s in X[:150]]


def run(argv, capsys):
    capsys.readouterr()
    assert main(argv) == 0
    return capsys.readouterr()


def fails(argv, capsys):
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert err.startswith("sklstruct: error: ") and err.count("\n") == 1, err
    return info.value.code, err


def test_cluster_writes_the_paths_file_of_brown_clusters(files, tmp_path, capsys):
    """Plain text (one sentence a line) and CoNLL files (the first column)
    give the paths file BrownClusters gives in Python."""
    path, words = files
    expected = tmp_path / "expected.txt"
    BrownClusters(n_clusters=12, min_count=2).fit(words).save(expected)
    for fmt, source in (("text", "text.txt"), ("conll", "train.txt")):
        out = run(["cluster", str(path / source), "--format", fmt, "-o",
                   str(tmp_path / f"{fmt}.txt"), "-c", "12", "--min-count", "2", "-j", "2"],
                  capsys)
        assert re.match(r"clustered \d+ words of 150 sentences \(\d+ tokens\) into 12 "
                        r"clusters \(AMI [\d.]+ bits\) in [\d.]+ s; saved to ", out.out)
        assert out.err == ""
        assert (tmp_path / f"{fmt}.txt").read_bytes() == expected.read_bytes(), fmt
    # several inputs are read in turn, as one corpus
    run(["cluster", str(path / "text.txt"), str(path / "text.txt"), "-o",
         str(tmp_path / "twice.txt"), "-c", "12"], capsys)
    BrownClusters(n_clusters=12).fit(words + words).save(expected)
    assert (tmp_path / "twice.txt").read_bytes() == expected.read_bytes()


def test_verbose_lines_and_the_bar_on_a_terminal_only(files, tmp_path, capsys, monkeypatch):
    pytest.importorskip("tqdm")
    path, words = files
    n = len(BrownClusters(n_clusters=10).fit(words).vocabulary_)
    argv = ["cluster", str(path / "text.txt"), "-c", "10"]
    plain = run(argv + ["-o", str(tmp_path / "plain.txt")], capsys)   # (not a terminal)
    assert "%|" not in plain.err
    with monkeypatch.context() as m:
        m.setattr(sys.stderr, "isatty", lambda: True)
        shown = run(argv + ["-o", str(tmp_path / "bar.txt")], capsys)
        quiet = run(argv + ["-o", str(tmp_path / "quiet.txt"), "--quiet"], capsys)
        lines = run(argv + ["-o", str(tmp_path / "lines.txt"), "-v", "1"], capsys)
    assert re.search(rf"cluster: 100%\|.*\| {n - 1}/{n - 1} \[", shown.err), shown.err
    assert "%|" not in quiet.err and quiet.err == ""
    assert "words, AMI" not in shown.out and "words, AMI" in lines.out
    assert re.search(rf"{n - 1}/{n - 1}", lines.err)
    paths = {(tmp_path / f"{k}.txt").read_bytes() for k in ("plain", "bar", "quiet", "lines")}
    assert len(paths) == 1


def test_train_reads_the_paths_file(files, tmp_path, capsys):
    path, _ = files
    paths = tmp_path / "paths.txt"
    run(["cluster", str(path / "train.txt"), "--format", "conll", "-o", str(paths), "-c", "8"],
        capsys)
    brown = BrownClusters.load(paths)
    for extra in ([], ["--templates", "word,pos,cluster2,cluster4[-1]"]):
        model = tmp_path / "model.skls"
        run(["train", str(path / "train.txt"), "-m", str(model), "--clusters", str(paths),
             "-p", "max_iter=2", *extra], capsys)
        vectorizer = load_model(model)[0]
        assert vectorizer.clusters_ == brown.clusters_
        assert any(name.startswith("cluster") for name in vectorizer.templates_)
        tagged = run(["tag", str(model), str(path / "test.txt")], capsys)
        assert tagged.out.count("\n") > 50


def test_errors_are_one_line(files, tmp_path, capsys):
    path, _ = files
    text, conll, out = str(path / "text.txt"), str(path / "train.txt"), str(tmp_path / "p.txt")
    (tmp_path / "empty.txt").write_text("\n\n")
    (tmp_path / "long.txt").write_text("a " + "b" * 10_001 + "\n")
    cases = [
        (["cluster", text, "-o", out, "-c", "0"], 2, "--n-clusters/-c: must be at least 1"),
        (["cluster", text, "-o", out, "-j", "0"], 2, "'n_jobs' parameter"),
        (["cluster", text, "-o", text], 2, "is the input file"),
        (["cluster", str(tmp_path / "none.txt"), "-o", out], 1, "does not exist"),
        (["cluster", str(tmp_path / "empty.txt"), "-o", out], 1, "no sentence to cluster"),
        (["cluster", text, "-o", out, "--min-count", "100000"], 1,
         "no word occurs at least --min-count 100000 times; lower --min-count"),
        (["cluster", str(tmp_path / "long.txt"), "-o", out], 1,
         "input, sentence 1, token 2: word of 10001 characters"),
        (["cluster", text, "--format", "conll", "-o", out], 1, ""),    # (not columns)
        (["train", conll, "-m", str(tmp_path / "m.skls"), "--clusters", text], 1,
         "clusters file: .*line 1: expected 'path<TAB>word<TAB>count'"),
        (["train", conll, "-m", str(tmp_path / "m.skls"), "--templates", "word,cluster4"], 2,
         "give --clusters PATHS"),
    ]
    for argv, status, message in cases:
        got, err = fails(argv, capsys)
        assert got == status and re.search(message, err), (argv, err)
    assert not (tmp_path / "p.txt").exists()


def test_python_dash_m_cluster(files, tmp_path):
    """As installed: Python started outside the checkout."""
    path, _ = files
    result = subprocess.run([sys.executable, "-m", "sklstruct", "cluster", str(path / "text.txt"),
                             "-o", "paths.txt", "-c", "5"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""          # (not a terminal: no bar)
    assert len(set(BrownClusters.load(tmp_path / "paths.txt").clusters_.values())) == 5
