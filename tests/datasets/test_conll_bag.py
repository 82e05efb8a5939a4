"""read_conll_bag: CoNLL files as Dask bags, cut into byte ranges and parsed
by read_conll's parser (computed here with dask's synchronous scheduler; the
cluster tests are in tests/learners/test_crf_dask.py)."""
import pytest

from sklstruct.datasets import read_conll, read_conll_bag

dask = pytest.importorskip("dask")

# blank lines with spaces, several in a row, -DOCSTART-, CR LF, no final break
TEXT = ("-DOCSTART- -X- O\n\nHe PRP B-NP\nran VBD B-VP\n \t\n\n\nOK UH O\r\n\r\n"
        "-DOCSTART- -X- O\nA DT B-NP\nlong JJ I-NP\nsentence NN I-NP\nhere RB O\n\n"
        "x NN B-NP\n\ny NN B-NP\nz NN I-NP")


def computed(X, y):
    return dask.compute(X, y, scheduler="sync")


@pytest.mark.parametrize("k", [1, 2, 3, 5, 40, 200])
def test_ranges_hold_the_sentences_of_read_conll(tmp_path, k):
    """Any number of ranges per file (more than sentences too): the same
    sentences, labels and order as read_conll; X and y partitioned alike."""
    path = tmp_path / "a.conll"
    path.write_bytes(TEXT.encode())
    X, y = read_conll_bag(path, partitions_per_file=k)
    assert X.npartitions == y.npartitions == k
    assert computed(X, y) == read_conll(path)
    parts = [dask.compute(p, scheduler="sync")[0] for p in X.to_delayed()]
    assert sum(len(p) for p in parts) == len(read_conll(path)[0])


def test_globs_lists_and_unlabeled_files(tmp_path):
    """Globs are expanded and sorted; a list of paths reads them in turn;
    target_column=None gives y None, as read_conll."""
    (tmp_path / "b.conll").write_text("b1 X\nb2 Y\n\nb3 Z\n")
    (tmp_path / "a.conll").write_text(TEXT)
    X, y = read_conll_bag(str(tmp_path / "*.conll"), partitions_per_file=2)
    expected = [read_conll(tmp_path / n) for n in ("a.conll", "b.conll")]
    assert X.npartitions == 4
    got_X, got_y = computed(X, y)
    assert got_X == expected[0][0] + expected[1][0]
    assert got_y == expected[0][1] + expected[1][1]
    X, y = read_conll_bag([tmp_path / "b.conll"], target_column=None)
    assert y is None
    assert dask.compute(X, scheduler="sync")[0] == read_conll(tmp_path / "b.conll", None)[0]


def test_errors_are_read_conlls_with_the_line(tmp_path):
    """A malformed line fails the computation with read_conll's message
    (file and line number, also in a later range); options are checked here."""
    path = tmp_path / "bad.conll"
    lines = TEXT.split("\n")
    lines[-3] = "y NN B-NP extra"
    path.write_text("\n".join(lines))
    with pytest.raises(ValueError) as serial:
        read_conll(path)
    with pytest.raises(ValueError) as bag:
        computed(*read_conll_bag(path, partitions_per_file=3))
    assert str(bag.value) == str(serial.value) and "line" in str(bag.value)
    (tmp_path / "empty.conll").write_text("\n\n")
    with pytest.raises(ValueError, match="no sentences"):
        computed(*read_conll_bag(tmp_path / "empty.conll"))
    with pytest.raises(FileNotFoundError, match="no file matches"):
        read_conll_bag(str(tmp_path / "*.none"))
    with pytest.raises(ValueError, match="partitions_per_file"):
        read_conll_bag(path, partitions_per_file=0)
    with pytest.raises(ValueError, match="target_column"):
        read_conll_bag(path, target_column="last")
    with pytest.raises(ValueError, match="encoding"):
        read_conll_bag(path, encoding="no-such-codec")

