"""Tests for sklstruct.datasets: CoNLL I/O, the embedded corpus and loaders."""
import functools
import io
import os
import re
import string
import sys
from collections import Counter, defaultdict

import numpy as np
import pytest
from _data import data_dir, require_data
from hypothesis import given, settings
from hypothesis import strategies as st

import sklstruct.datasets._loaders as loaders
from sklstruct.datasets import (
    get_data_home,
    load_conll2000,
    load_conll2002_esp,
    load_treebank,
    make_chunking_corpus,
    read_conll,
    write_conll,
)
from sklstruct.parsing import expand_unary, preprocess


@functools.lru_cache(maxsize=None)
def _read_cached(path):
    return read_conll(path)


def test_require_data_skips_or_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("SKLSTRUCT_DATA", str(tmp_path))
    monkeypatch.delenv("SKLSTRUCT_REQUIRE_DATA", raising=False)
    with pytest.raises(pytest.skip.Exception, match="SKLSTRUCT_DATA"):
        require_data("conll2000", "train.txt")
    monkeypatch.setenv("SKLSTRUCT_REQUIRE_DATA", "1")
    with pytest.raises(pytest.fail.Exception, match="SKLSTRUCT_REQUIRE_DATA"):
        require_data("conll2000", "train.txt")
    (tmp_path / "x.txt").write_text("a b\n")
    assert require_data("x.txt") == tmp_path / "x.txt"


# ---------------------------------------------------------------------------
# read_conll on hand-written files
# ---------------------------------------------------------------------------

CONLL3 = """\
Confidence NN B-NP
in IN B-PP
the DT B-NP
pound NN I-NP

He PRP B-NP
ran VBD B-VP
. . O
"""


def _write(tmp_path, text, name="data.txt", encoding="utf-8"):
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def test_read_three_columns(tmp_path):
    X, y = read_conll(_write(tmp_path, CONLL3))
    assert X == [
        [("Confidence", "NN"), ("in", "IN"), ("the", "DT"), ("pound", "NN")],
        [("He", "PRP"), ("ran", "VBD"), (".", ".")],
    ]
    assert y == [["B-NP", "B-PP", "B-NP", "I-NP"], ["B-NP", "B-VP", "O"]]
    assert all(isinstance(tok, tuple) for sent in X for tok in sent)


def test_read_accepts_str_path_and_pathlike(tmp_path):
    path = _write(tmp_path, CONLL3)
    assert read_conll(str(path)) == read_conll(path)


def test_read_two_columns_gives_one_tuples(tmp_path):
    X, y = read_conll(_write(tmp_path, "Madrid B-LOC\nes O\n\nhola O\n"))
    assert X == [[("Madrid",), ("es",)], [("hola",)]]
    assert y == [["B-LOC", "O"], ["O"]]


def test_read_many_columns_and_target_column(tmp_path):
    path = _write(tmp_path, "a b c d\ne f g h\n")
    assert read_conll(path) == ([[("a", "b", "c"), ("e", "f", "g")]], [["d", "h"]])
    assert read_conll(path, target_column=0) == (
        [[("b", "c", "d"), ("f", "g", "h")]], [["a", "e"]])
    assert read_conll(path, target_column=2) == (
        [[("a", "b", "d"), ("e", "f", "h")]], [["c", "g"]])
    assert read_conll(path, target_column=-2) == read_conll(path, target_column=2)
    assert read_conll(path, target_column=-4) == read_conll(path, target_column=0)
    X, y = read_conll(path, target_column=None)
    assert X == [[("a", "b", "c", "d"), ("e", "f", "g", "h")]] and y is None


def test_read_tab_separated(tmp_path):
    path = _write(tmp_path, "New York\tNNP\tB-LOC\nis\tVBZ\tO\n\nok\tUH\tO\n")
    X, y = read_conll(path, sep="\t")
    assert X == [[("New York", "NNP"), ("is", "VBZ")], [("ok", "UH")]]
    assert y == [["B-LOC", "O"], ["O"]]
    # With the default whitespace splitting the space inside a field gives
    # line 1 four columns, so line 2 is reported.
    with pytest.raises(ValueError, match=r"line 2: expected 4 columns, found 3"):
        read_conll(path)


def test_read_tab_separated_keeps_empty_fields(tmp_path):
    X, y = read_conll(_write(tmp_path, "a\t\tO\nb\tx\tO\n"), sep="\t")
    assert X == [[("a", ""), ("b", "x")]]


def test_read_docstart_lines_are_dropped_and_break_sentences(tmp_path):
    text = (
        "-DOCSTART- -X- O\n\n"
        "a DT B-NP\nb NN I-NP\n"
        "-DOCSTART- -X- O\n"          # no blank line around it
        "c NN B-NP\n\n"
        "-DOCSTART- O\n"              # different column count: still dropped
        "\n"
        "d NN B-NP\n"
    )
    X, y = read_conll(_write(tmp_path, text))
    assert X == [[("a", "DT"), ("b", "NN")], [("c", "NN")], [("d", "NN")]]
    assert y == [["B-NP", "I-NP"], ["B-NP"], ["B-NP"]]


def test_read_docstart_with_tab_separator(tmp_path):
    X, _ = read_conll(_write(tmp_path, "-DOCSTART-\tO\n\na\tO\n"), sep="\t")
    assert X == [[("a",)]]


def test_read_multiple_and_whitespace_only_blank_lines(tmp_path):
    text = "\n\n  \na NN O\n\n\n \t \n\nb NN O\nc NN O\n\n\n\n"
    X, y = read_conll(_write(tmp_path, text))
    assert X == [[("a", "NN")], [("b", "NN"), ("c", "NN")]]
    assert y == [["O"], ["O", "O"]]


def test_read_without_trailing_newline(tmp_path):
    X, y = read_conll(_write(tmp_path, "a NN O\n\nb NN O\nc VB O"))
    assert X == [[("a", "NN")], [("b", "NN"), ("c", "VB")]]
    assert y[-1] == ["O", "O"]


@pytest.mark.parametrize("sep", [None, "\t"])
def test_read_windows_line_endings(tmp_path, sep):
    s = sep or " "
    text = f"a{s}NN{s}B-NP\r\nb{s}NN{s}I-NP\r\n\r\n\r\nc{s}VB{s}B-VP\r\n"
    path = _write(tmp_path, text)
    expected = ([[("a", "NN"), ("b", "NN")], [("c", "VB")]], [["B-NP", "I-NP"], ["B-VP"]])
    assert read_conll(path, sep=sep) == expected
    # A file object that keeps the "\r\n" (newline="") gives the same result.
    with open(path, encoding="utf-8", newline="") as f:
        assert read_conll(f, sep=sep) == expected


def test_read_file_objects(tmp_path):
    path = _write(tmp_path, CONLL3)
    expected = read_conll(path)
    assert read_conll(io.StringIO(CONLL3)) == expected
    with open(path, encoding="utf-8") as f:
        assert read_conll(f) == expected
        assert not f.closed
    with open(path, "rb") as f:
        assert read_conll(f) == expected


def test_read_n_columns(tmp_path):
    path = _write(tmp_path, "a NN O\nb NN O\n")
    assert read_conll(path, n_columns=3) == read_conll(path)
    with pytest.raises(ValueError, match=r"line 1: expected 2 columns, found 3"):
        read_conll(path, n_columns=2)


def test_read_latin1(tmp_path):
    text = "El DA O\nSeñor NC B-PER\nPérez NC I-PER\n\nAragón NC B-LOC\n"
    path = _write(tmp_path, text, encoding="latin-1")
    X, y = read_conll(path, encoding="latin-1")
    assert X == [[("El", "DA"), ("Señor", "NC"), ("Pérez", "NC")], [("Aragón", "NC")]]
    assert y == [["O", "B-PER", "I-PER"], ["B-LOC"]]


# ---------------------------------------------------------------------------
# read_conll on hostile input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("sep", [None, "\t"])
def test_read_drops_utf8_byte_order_mark(tmp_path, sep):
    s = sep or " "
    text = f"\ufeffHe{s}PRP{s}B-NP\nran{s}VBD{s}B-VP\n"
    expected = ([[("He", "PRP"), ("ran", "VBD")]], [["B-NP", "B-VP"]])
    path = _write(tmp_path, text)
    assert read_conll(path, sep=sep) == expected
    assert read_conll(io.StringIO(text), sep=sep) == expected
    assert read_conll(io.BytesIO(text.encode("utf-8")), sep=sep) == expected
    with open(path, "rb") as f:
        assert read_conll(f, sep=sep) == expected
    # only at the start of the file: elsewhere U+FEFF is a character of its word
    X, _ = read_conll(io.StringIO("a NN O\n\ufeffb NN O\n"))
    assert X[0][1] == ("\ufeffb", "NN")


def test_read_tab_separated_strips_spaces_around_fields(tmp_path):
    path = _write(tmp_path, " New York \tNNP\tB-LOC  \nis\t VBZ\tO  \r\n \t \nok\tUH\tO\n")
    X, y = read_conll(path, sep="\t")
    assert X == [[("New York", "NNP"), ("is", "VBZ")], [("ok", "UH")]]
    assert y == [["B-LOC", "O"], ["O"]]


def test_a_carriage_return_inside_a_line_is_refused(tmp_path):
    """A file with CR-only line ends read as one sentence of one token with
    hundreds of columns (and the CLI trained on it); a raw CR in a line is
    refused, naming the line."""
    path = _write(tmp_path, "a NN B-NP\rb NN I-NP\r\rc VB B-VP\r", name="mac.txt")
    with pytest.raises(ValueError, match=r"mac\.txt', line 1: a carriage return"):
        read_conll(path)
    with pytest.raises(ValueError, match="line 2: a carriage return"):
        read_conll(io.StringIO("a NN O\nb\rc NN O\n"))
    # CR LF line ends are line ends
    assert read_conll(io.StringIO("a NN O\r\nb NN O\r\n")) == ([[("a", "NN"), ("b", "NN")]],
                                                                 [["O", "O"]])


@pytest.mark.parametrize("char", ["\xa0", "\u2028", "\u2029", "\x85", "\u3000", "\x0c",
                                  "\x1c", "\u202f"])
def test_read_splits_on_ascii_spaces_and_tabs_and_lines_on_newline_only(tmp_path, char):
    """Other whitespace and line breaks are characters of their word, so
    columns and line numbers are those a reader of the file sees."""
    word = f"a{char}b"
    text = f"{word} NN O\nc\tNN  O\n\nd NN O\ne NN\n"
    path = _write(tmp_path, text[: text.index("e NN")], name="odd.txt")
    expected = ([[(word, "NN"), ("c", "NN")], [("d", "NN")]], [["O", "O"], ["O"]])
    assert read_conll(path) == expected
    assert read_conll(io.StringIO(text[: text.index("e NN")])) == expected
    with open(path, "rb") as f:
        assert read_conll(f) == expected
    path = _write(tmp_path, text, name="odd.txt")
    with pytest.raises(ValueError, match=r"odd\.txt', line 5: expected 3 columns, found 2"):
        read_conll(path)
    # a word that begins with the character: the first line still has 3 columns
    path = _write(tmp_path, f"{char}x NN O\ny NN\n", name="first.txt")
    with pytest.raises(ValueError, match=r"first\.txt', line 2: expected 3 columns, found 2"):
        read_conll(path)


def test_read_line_of_other_whitespace_is_a_token_not_a_break(tmp_path):
    path = _write(tmp_path, "a NN O\n\xa0\nb NN O\n", name="nbsp.txt")
    with pytest.raises(ValueError, match=r"nbsp\.txt', line 2: expected 3 columns, found 1"):
        read_conll(path)


def test_write_read_round_trip_with_unicode_whitespace_in_words(tmp_path):
    X = [[("a\xa0b", "NN"), ("c\u2028d", "NN\x85")], [("\u3000", "SYM")]]
    y = [["B-NP", "I-NP"], ["O"]]
    path = tmp_path / "u.txt"
    write_conll(path, X, y)
    assert read_conll(path) == (X, y)
    write_conll(path, X, y, sep="\t")
    assert read_conll(path, sep="\t") == (X, y)
    with pytest.raises(ValueError, match=r"sentence 0, token 0: .*cannot be read back"):
        write_conll(io.StringIO(), [[(" a", "NN")]], [["O"]], sep="\t")
    with pytest.raises(ValueError, match=r"sentence 0, token 0: .*cannot be read back"):
        write_conll(io.StringIO(), [[("a", "NN")]], [["O "]], sep="\t")


# ---------------------------------------------------------------------------
# read_conll error paths
# ---------------------------------------------------------------------------


def test_read_wrong_column_count_names_file_and_line(tmp_path):
    text = "a DT B-NP\nb NN I-NP\n\nc NN\nd NN O\n"
    path = _write(tmp_path, text, name="broken.conll")
    with pytest.raises(ValueError) as excinfo:
        read_conll(path)
    msg = str(excinfo.value)
    assert str(path) in msg
    assert "line 4" in msg
    assert "expected 3 columns, found 2" in msg


def test_read_wrong_column_count_later_line_and_extra_column(tmp_path):
    text = "a DT B-NP\n\n" * 3 + "x y z w\n"
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=r"line 7: expected 3 columns, found 4"):
        read_conll(path)


def test_read_wrong_column_count_in_stream_uses_name(tmp_path):
    path = _write(tmp_path, "a b c\nd e\n", name="named.txt")
    with open(path, encoding="utf-8") as f:
        with pytest.raises(ValueError, match=r"named\.txt.*line 2"):
            read_conll(f)
    with pytest.raises(ValueError, match=r"<stream>.*line 2"):
        read_conll(io.StringIO("a b c\nd e\n"))


def test_read_bad_encoding_names_file_line_and_suggests_latin1(tmp_path):
    text = "El DA O\n\nSeñor NC B-PER\n"
    path = _write(tmp_path, text, name="esp.latin1", encoding="latin-1")
    with pytest.raises(ValueError) as excinfo:
        read_conll(path)
    msg = str(excinfo.value)
    assert "esp.latin1" in msg
    assert "line 3" in msg
    assert "encoding='latin-1'" in msg
    # Same report when handed an open text file or a binary stream.
    with open(path, encoding="utf-8") as f:
        with pytest.raises(ValueError, match=r"esp\.latin1.*line 3.*latin-1"):
            read_conll(f)
    with pytest.raises(ValueError, match=r"line 3.*latin-1"):
        read_conll(io.BytesIO(path.read_bytes()))


def test_read_bad_encoding_far_into_a_large_file(tmp_path):
    text = "w NN O\n" * 50000 + "\n" + "caf\xe9 NN O\n"
    path = _write(tmp_path, text, encoding="latin-1")
    with pytest.raises(ValueError, match=r"line 50002\b"):
        read_conll(path)


def test_read_unknown_encoding(tmp_path):
    with pytest.raises(ValueError, match="Unknown encoding"):
        read_conll(_write(tmp_path, CONLL3), encoding="no-such-codec")


@pytest.mark.parametrize(
    "text", ["", "\n", "\n  \n\t\n", "-DOCSTART- -X- O\n\n", "-DOCSTART-\n"]
)
def test_read_empty_file(tmp_path, text):
    path = _write(tmp_path, text, name="empty.txt")
    with pytest.raises(ValueError, match=r"empty\.txt.*no sentences"):
        read_conll(path)


@pytest.mark.parametrize("target_column", [3, 10, -4])
def test_read_target_column_out_of_range(tmp_path, target_column):
    path = _write(tmp_path, CONLL3)
    with pytest.raises(ValueError, match="out of range"):
        read_conll(path, target_column=target_column)
    with pytest.raises(ValueError, match="out of range"):
        read_conll(path, target_column=target_column, n_columns=3)


@pytest.mark.parametrize("target_column", ["1", 1.0, True, [0]])
def test_read_target_column_wrong_type(tmp_path, target_column):
    with pytest.raises(ValueError, match="target_column"):
        read_conll(_write(tmp_path, CONLL3), target_column=target_column)


def test_read_single_column_needs_target_none(tmp_path):
    path = _write(tmp_path, "a\nb\n\nc\n")
    with pytest.raises(ValueError, match="single column"):
        read_conll(path)
    X, y = read_conll(path, target_column=None)
    assert X == [[("a",), ("b",)], [("c",)]] and y is None


@pytest.mark.parametrize("kwargs", [{"n_columns": 0}, {"n_columns": 2.0},
                                    {"sep": ""}, {"sep": 3}])
def test_read_bad_options(tmp_path, kwargs):
    with pytest.raises(ValueError):
        read_conll(_write(tmp_path, CONLL3), **kwargs)


# ---------------------------------------------------------------------------
# write_conll
# ---------------------------------------------------------------------------


def test_write_layout_gold_and_predicted():
    X = [[("He", "PRP"), ("ran", "VBD")], [("Yes", "UH")]]
    gold = [["B-NP", "B-VP"], ["O"]]
    pred = [["B-NP", "I-VP"], ["B-INTJ"]]
    buf = io.StringIO()
    write_conll(buf, X, gold, pred)
    assert buf.getvalue() == (
        "He PRP B-NP B-NP\nran VBD B-VP I-VP\n\nYes UH O B-INTJ\n\n"
    )


def test_write_without_labels_and_custom_sep():
    buf = io.StringIO()
    write_conll(buf, [["a", "b"], ["c"]], sep="\t")  # str tokens are 1 column
    assert buf.getvalue() == "a\nb\n\nc\n\n"
    buf = io.StringIO()
    write_conll(buf, [[("New York", "NNP")]], [["B-LOC"]], sep="\t")
    assert buf.getvalue() == "New York\tNNP\tB-LOC\n\n"


def test_write_read_round_trip(tmp_path):
    X, y = make_chunking_corpus(50, random_state=0)
    path = tmp_path / "out.txt"
    write_conll(path, X, y)
    assert read_conll(path) == (X, y)
    # Gold and predicted columns: read back either column as the target.
    pred = [list(reversed(tags)) for tags in y]
    write_conll(path, X, y, pred)
    X2, pred2 = read_conll(path)
    assert pred2 == pred
    assert X2 == [[tok + (tag,) for tok, tag in zip(s, t)] for s, t in zip(X, y)]
    assert read_conll(path, target_column=-2)[1] == y


def test_write_read_round_trip_file_object_and_tab(tmp_path):
    X = [[("New York", "NNP"), ("is", "VBZ")], [("big", "JJ")]]
    y = [np.array(["B-LOC", "O"]), ("O",)]  # arrays / tuples of labels are fine
    buf = io.StringIO()
    write_conll(buf, X, y, sep="\t")
    buf.seek(0)
    assert read_conll(buf, sep="\t") == (X, [["B-LOC", "O"], ["O"]])


def test_write_read_round_trip_latin1(tmp_path):
    X, y = [[("Señor", "NC"), ("Pérez", "NC")]], [["B-PER", "I-PER"]]
    path = tmp_path / "latin.txt"
    write_conll(path, X, y, encoding="latin-1")
    assert path.read_bytes() == "Señor NC B-PER\nPérez NC I-PER\n\n".encode("latin-1")
    assert read_conll(path, encoding="latin-1") == (X, y)


_FIELD = st.text(alphabet=string.ascii_letters + string.digits + string.punctuation
                 + "éñü€\xa0\u2028\u2029\x85\x0c\u3000", min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    sents=st.lists(st.lists(st.tuples(_FIELD, _FIELD, _FIELD), min_size=1, max_size=6),
                   min_size=1, max_size=5)
)
def test_write_read_round_trip_property(sents):
    sents = [[tok for tok in s if tok[0] != "-DOCSTART-"] or [("w", "p", "t")]
             for s in sents]
    X = [[tok[:2] for tok in s] for s in sents]
    y = [[tok[2] for tok in s] for s in sents]
    buf = io.StringIO()
    write_conll(buf, X, y)
    buf.seek(0)
    assert read_conll(buf) == (X, y)


def test_write_number_of_sentences_mismatch():
    with pytest.raises(ValueError, match=r"label column 0 has 1 sentences but X has 2"):
        write_conll(io.StringIO(), [[("a", "b")], [("c", "d")]], [["O"]])


def test_write_sentence_length_mismatch_names_sentence():
    X = [[("a", "b")], [("c", "d"), ("e", "f")]]
    with pytest.raises(ValueError, match=r"sentence 1 has 2 tokens but label column 1"):
        write_conll(io.StringIO(), X, [["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match=r"sentence 0"):
        write_conll(io.StringIO(), X, ["O", ["O", "O"]])


@pytest.mark.parametrize(
    "X, match",
    [
        ([[("a", "b")], []], r"sentence 1 is empty"),
        ([[("a", "b")], [("c",)]],
         r"sentence 1, token 0 has 1 column\(s\) \(with labels\), expected 2"),
        ([[("a b", "c")]], r"sentence 0, token 0"),
        ([[("a", "")]], r"sentence 0, token 0"),
        ([[("a", "b\n")]], r"sentence 0, token 0"),
        ([[("a", "b\tc")]], r"sentence 0, token 0"),
    ],
)
def test_write_invalid_sentences(X, match):
    with pytest.raises(ValueError, match=match):
        write_conll(io.StringIO(), X)


@pytest.mark.parametrize("field", ["a\tb", "a\nb", "a\rb"])
def test_write_tab_separator_rejects_tabs_and_line_breaks(field):
    write_conll(io.StringIO(), [[("a b", "c")]], sep="\t")  # spaces are fine
    with pytest.raises(ValueError, match=r"sentence 0, token 0"):
        write_conll(io.StringIO(), [[(field, "c")]], sep="\t")


@pytest.mark.parametrize("sep", ["", "\n", None])
def test_write_bad_sep(sep):
    with pytest.raises(ValueError, match="sep"):
        write_conll(io.StringIO(), [[("a", "b")]], sep=sep)


def test_write_does_not_close_stream_and_overwrites_path(tmp_path):
    buf = io.StringIO()
    write_conll(buf, [[("a", "b")]])
    assert not buf.closed
    path = tmp_path / "o.txt"
    path.write_text("old content\n")
    write_conll(path, [[("a", "b")]], [["O"]])
    assert path.read_text() == "a b O\n\n"


# ---------------------------------------------------------------------------
# make_chunking_corpus
# ---------------------------------------------------------------------------

ALLOWED_POS = {
    "DT", "JJ", "JJR", "JJS", "NN", "NNS", "NNP", "VBZ", "VBD", "VBP", "VB", "VBN",
    "VBG", "MD", "TO", "IN", "RB", "RBR", "RP", "PRP", "PRP$", "CC", "CD", ",", ".",
    "WDT", "WP", "WRB", "POS", "$",
}


def _is_iob2(tags):
    prev = "O"
    for tag in tags:
        if tag != "O" and not re.fullmatch(r"[BI]-[A-Z]+", tag):
            return False
        if tag.startswith("I-") and prev[2:] != tag[2:]:
            return False
        prev = tag
    return True


@functools.lru_cache(maxsize=None)
def _corpus(n, seed):
    return make_chunking_corpus(n, random_state=seed)


def test_corpus_determinism():
    X1, y1 = make_chunking_corpus(300, random_state=42)
    X2, y2 = make_chunking_corpus(300, random_state=42)
    assert X1 == X2 and y1 == y2
    X3, _ = make_chunking_corpus(300, random_state=43)
    assert X3 != X1
    # A RandomState instance is used as is (and advanced).
    rs = np.random.RandomState(42)
    assert make_chunking_corpus(300, random_state=rs) == (X1, y1)
    assert make_chunking_corpus(300, random_state=rs)[0] != X1


@pytest.mark.parametrize("n", [0, -3, 2.5, "10", None, True])
def test_corpus_validates_n_sentences(n):
    with pytest.raises(ValueError, match="n_sentences"):
        make_chunking_corpus(n)


def test_corpus_default_size_and_types():
    X, y = make_chunking_corpus(random_state=0)
    assert len(X) == len(y) == 1000
    for sent, tags in zip(X[:50], y[:50]):
        assert isinstance(sent, list) and isinstance(tags, list)
        assert len(sent) == len(tags)
        for tok in sent:
            assert isinstance(tok, tuple) and len(tok) == 2
            assert all(isinstance(f, str) and f and not any(c.isspace() for c in f)
                       for f in tok)
    assert make_chunking_corpus(1, random_state=0)[0][0] == X[0]


def test_corpus_statistics():
    X, y = _corpus(3000, 0)
    lengths = np.array([len(s) for s in X])
    assert lengths.min() >= 5 and lengths.max() <= 40
    assert 15 <= lengths.mean() <= 20
    vocab = {w for s in X for w, _ in s}
    assert 200 <= len(vocab) <= 1000
    pos = {p for s in X for _, p in s}
    assert pos <= ALLOWED_POS
    assert {"DT", "JJ", "NN", "NNS", "NNP", "VBZ", "VBD", "VB", "MD", "TO", "IN", "RB",
            "PRP", "CC", "CD", ",", "."} <= pos
    for sent, tags in zip(X, y):
        assert sent[-1] == (".", ".") and tags[-1] == "O"
        assert all(t == "O" for (w, _), t in zip(sent, tags) if w in {",", "."})
    chunks = {t[2:] for tags in y for t in tags if t != "O"}
    assert {"NP", "VP", "PP", "ADJP", "ADVP", "SBAR", "PRT"} <= chunks


def test_corpus_tags_are_valid_iob2():
    X, y = _corpus(3000, 0)
    assert all(_is_iob2(tags) for tags in y)


def test_corpus_ambiguous_words():
    X, y = _corpus(3000, 0)
    pos_of = defaultdict(set)
    chunk_of = defaultdict(set)
    for sent, tags in zip(X, y):
        for (w, p), t in zip(sent, tags):
            pos_of[w].add(p)
            chunk_of[w].add(t)
    assert {"IN", "DT", "WDT"} <= pos_of["that"]
    assert {"B-SBAR", "B-NP"} <= chunk_of["that"]
    assert {"NNS", "VBZ"} <= pos_of["plans"]
    assert {"NNS", "VBZ"} <= pos_of["runs"]
    assert {"NN", "VB"} <= pos_of["rate"]
    assert {"NN", "VB", "VBD"} <= pos_of["cut"]
    assert {"IN", "VB"} <= pos_of["like"]
    assert {"RP", "IN"} <= pos_of["up"] and {"RP", "IN"} <= pos_of["down"]
    assert {"JJR", "RBR"} <= pos_of["more"]
    assert {"B-PP", "I-VP", "B-VP"} <= chunk_of["to"]
    assert {"B-PP", "B-SBAR"} <= chunk_of["after"]
    assert {"I-NP", "O"} <= chunk_of["and"]
    n_multi_pos = sum(len(v) > 1 for v in pos_of.values())
    assert n_multi_pos >= 50


def test_corpus_has_adjacent_noun_phrases():
    X, y = _corpus(3000, 0)
    n_tokens = sum(len(t) for t in y)
    adjacent = sum(a.startswith(("B-NP", "I-NP")) and b == "B-NP"
                   for tags in y for a, b in zip(tags, tags[1:]))
    assert adjacent / n_tokens > 0.03


def _baseline_accuracy(train, test, use_previous_tag):
    """Most frequent tag per (word, POS) [and previous gold tag], with backoff."""
    table = defaultdict(Counter)
    unigram = defaultdict(Counter)
    by_pos = defaultdict(Counter)
    overall = Counter()
    for sent, tags in zip(*train):
        prev = "<s>"
        for tok, tag in zip(sent, tags):
            table[(prev,) + tok][tag] += 1
            unigram[tok][tag] += 1
            by_pos[tok[1]][tag] += 1
            overall[tag] += 1
            prev = tag
    correct = total = 0
    for sent, tags in zip(*test):
        prev = "<s>"
        for tok, tag in zip(sent, tags):
            counts = (use_previous_tag and table.get((prev,) + tok)) \
                or unigram.get(tok) or by_pos.get(tok[1]) or overall
            correct += counts.most_common(1)[0][0] == tag
            total += 1
            prev = tag
    return correct / total


def test_corpus_needs_context():
    train, test = _corpus(3000, 0), _corpus(1000, 1)
    unigram = _baseline_accuracy(train, test, use_previous_tag=False)
    context = _baseline_accuracy(train, test, use_previous_tag=True)
    # Each (word, POS) in isolation is not enough ...
    assert unigram < 0.90
    # ... but the corpus is learnable once the previous tag is known.
    assert context > 0.95
    assert context - unigram >= 0.05
    # Even on its own training data the unigram tagger stays well below 100%.
    assert _baseline_accuracy(train, train, use_previous_tag=False) < 0.90


def test_corpus_size():
    X, _ = make_chunking_corpus(5000, random_state=0)
    assert len(X) == 5000


# ---------------------------------------------------------------------------
# Loaders (no shared data needed)
# ---------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh empty home directory, with neither SKLSTRUCT_DATA nor NLTK_DATA set
    and NLTK's system directories out of the way."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SKLSTRUCT_DATA", raising=False)
    monkeypatch.delenv("NLTK_DATA", raising=False)
    system = loaders._nltk_data_dirs()[1:]  # what follows ~/nltk_data
    monkeypatch.setattr(loaders, "_nltk_data_dirs",
                        lambda: [d for d in _real_nltk_dirs() if d not in system])
    return tmp_path / "home"


_real_nltk_dirs = loaders._nltk_data_dirs


def test_get_data_home(home, monkeypatch, tmp_path):
    assert get_data_home() == str(home / "sklstruct_data")
    assert get_data_home(tmp_path / "x") == str(tmp_path / "x")
    assert get_data_home("~/y") == str(home / "y")
    monkeypatch.setenv("SKLSTRUCT_DATA", "~/z")
    assert get_data_home() == str(home / "z")
    assert get_data_home(tmp_path) == str(tmp_path)
    monkeypatch.setenv("SKLSTRUCT_DATA", "")
    assert get_data_home() == str(home / "sklstruct_data")
    assert not (home / "sklstruct_data").exists()  # nothing is created


def test_nltk_data_dirs_follow_nltk(monkeypatch, tmp_path):
    monkeypatch.setenv("NLTK_DATA", os.pathsep.join([str(tmp_path / "a"), "", "b"]))
    monkeypatch.setenv("HOME", str(tmp_path))
    dirs = _real_nltk_dirs()
    assert dirs[:3] == [str(tmp_path / "a"), "b", str(tmp_path / "nltk_data")]
    assert os.path.join(sys.prefix, "share", "nltk_data") in dirs
    if sys.platform.startswith("linux"):
        assert "/usr/share/nltk_data" in dirs


def test_loaders_without_data_raise_error_naming_where_they_looked(home):
    default = home / "sklstruct_data"
    with pytest.raises(FileNotFoundError) as excinfo:
        load_conll2000()
    message = str(excinfo.value)
    assert repr(str(default / "conll2000" / "train.txt")) in message
    assert "(the default data home)" in message and "SKLSTRUCT_DATA" in message
    with pytest.raises(FileNotFoundError, match=r"esp\.train.*SKLSTRUCT_DATA"):
        load_conll2002_esp()


def test_loaders_default_data_home(home):
    (home / "sklstruct_data" / "conll2000").mkdir(parents=True)
    (home / "sklstruct_data" / "conll2000" / "test.txt").write_text("He PRP B-NP\n")
    assert load_conll2000("test") == ([[("He", "PRP")]], [["B-NP"]])


def test_loaders_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"conll2000.*train\.txt.*\(data_home\)"):
        load_conll2000(data_home=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"conll2002.*esp\.testa"):
        load_conll2002_esp("testa", data_home=tmp_path)


def test_loaders_invalid_subset(tmp_path):
    with pytest.raises(ValueError, match=r"'test'.*'train'"):
        load_conll2000("dev", data_home=tmp_path)
    with pytest.raises(ValueError, match=r"'testa'.*'testb'.*'train'"):
        load_conll2002_esp("test", data_home=tmp_path)


def test_loaders_read_local_copies(tmp_path, monkeypatch):
    (tmp_path / "conll2000").mkdir()
    (tmp_path / "conll2002").mkdir()
    (tmp_path / "conll2000" / "test.txt").write_text("He PRP B-NP\nran VBD B-VP\n")
    (tmp_path / "conll2002" / "esp.testb").write_bytes(
        "-DOCSTART- -DOCSTART- O\n\nPérez NC B-PER\n".encode("latin-1"))
    expected = ([[("He", "PRP"), ("ran", "VBD")]], [["B-NP", "B-VP"]])
    assert load_conll2000("test", data_home=tmp_path) == expected
    assert load_conll2000("test", data_home=str(tmp_path)) == expected
    monkeypatch.setenv("SKLSTRUCT_DATA", str(tmp_path))
    assert load_conll2000("test") == expected
    with pytest.raises(FileNotFoundError, match=r"train\.txt' \(\$SKLSTRUCT_DATA\)"):
        load_conll2000("train")
    with pytest.raises(ValueError, match="latin-1"):
        load_conll2002_esp("testb")
    assert load_conll2002_esp("testb", encoding="latin-1") == (
        [[("Pérez", "NC")]], [["B-PER"]])


# ---------------------------------------------------------------------------
# The Penn Treebank sample
# ---------------------------------------------------------------------------


def test_parsing_does_not_import_datasets():
    """datasets produces data for the estimators, trees included: it imports
    sklstruct.parsing.tree, never the other way round."""
    import ast
    import pathlib

    import sklstruct.parsing

    assert not hasattr(sklstruct.parsing, "load_treebank")
    for path in pathlib.Path(sklstruct.parsing.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert "datasets" not in (node.module or ""), path.name


def test_load_treebank(ptb_sample_raw):
    sample = ptb_sample_raw
    trees, ids = load_treebank(data_dir(), files=[1, "wsj_0002.mrg", 3], return_file_ids=True)
    assert ids.dtype.kind == "i" and list(np.unique(ids)) == [1, 2, 3]
    assert len(trees) == len(ids) and trees[0].leaves()[:2] == ["Pierre", "Vinken"]
    assert trees[0] == preprocess(sample[0])
    raw = load_treebank(data_dir(), files=[1], preprocess=False)
    assert raw[0] == sample[0]
    collapsed = load_treebank(data_dir(), files=[1], collapse_unary=True)
    assert [expand_unary(t) for t in collapsed] == trees[: len(collapsed)]
    with pytest.raises(ValueError, match="files must hold"):
        load_treebank(data_dir(), files=["foo.txt"])
    with pytest.raises(FileNotFoundError, match="wsj_9999"):
        load_treebank(data_dir(), files=[9999])


@pytest.fixture(scope="session")
def treebank_dir():
    """The sample's directory, found before a test's ``home`` fixture hides it."""
    return require_data("treebank", "combined")


def _link_treebank(target, source):
    """``target`` made a directory holding links to files 2 and 10 of the sample."""
    target.mkdir(parents=True)
    for name in ["wsj_0010.mrg", "wsj_0002.mrg"]:
        (target / name).symlink_to(source / name)
    return target


def test_load_treebank_all_files_in_numeric_order(tmp_path, treebank_dir):
    _link_treebank(tmp_path / "treebank" / "combined", treebank_dir)
    (tmp_path / "treebank" / "combined" / "README").write_text("not a treebank file")
    trees, ids = load_treebank(tmp_path, return_file_ids=True)
    assert ids[0] == 2 and ids[-1] == 10 and np.all(np.diff(ids) >= 0)
    assert trees == load_treebank(tmp_path, files=[2, 10])


def test_load_treebank_default_locations(treebank_dir, home, monkeypatch, tmp_path):
    """$SKLSTRUCT_DATA, else ~/sklstruct_data, then NLTK's directories; the
    error names every place looked in."""
    expected = load_treebank(treebank_dir.parent.parent, files=[2])
    with pytest.raises(FileNotFoundError) as excinfo:
        load_treebank(files=[2])
    message = str(excinfo.value)
    for place in [home / "sklstruct_data" / "treebank" / "combined",
                  home / "nltk_data" / "corpora" / "treebank" / "combined"]:
        assert repr(str(place)) in message
    assert "(the default data home)" in message and "(NLTK)" in message

    _link_treebank(home / "nltk_data" / "corpora" / "treebank" / "combined", treebank_dir)
    assert load_treebank(files=[2]) == expected
    nltk_env = tmp_path / "nltk_env"
    _link_treebank(nltk_env / "corpora" / "treebank" / "combined", treebank_dir)
    monkeypatch.setenv("NLTK_DATA", str(nltk_env))
    assert load_treebank(files=[2]) == expected
    with pytest.raises(FileNotFoundError) as excinfo:
        load_treebank(files=[2], data_home=tmp_path)  # data_home: only there
    assert "nltk" not in str(excinfo.value).lower()
    _link_treebank(home / "sklstruct_data" / "treebank" / "combined", treebank_dir)
    (home / "sklstruct_data" / "treebank" / "combined" / "wsj_0002.mrg").unlink()
    with pytest.raises(FileNotFoundError, match="sklstruct_data.*wsj_0002"):
        load_treebank(files=[2])  # ~/sklstruct_data comes before NLTK's directories
    monkeypatch.setenv("SKLSTRUCT_DATA", str(tmp_path / "env"))
    _link_treebank(tmp_path / "env" / "treebank" / "combined", treebank_dir)
    assert load_treebank(files=[2]) == expected  # $SKLSTRUCT_DATA replaces the default


def test_load_treebank_missing_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"treebank/combined' \(data_home\)"):
        load_treebank(tmp_path)


# ---------------------------------------------------------------------------
# Real corpora
# ---------------------------------------------------------------------------

CONLL2000_COUNTS = {"train.txt": (8936, 211727), "test.txt": (2012, 47377)}
CONLL2002_ESP_COUNTS = {
    "esp.train": (8323, 264715),
    "esp.testa": (1915, 52923),
    "esp.testb": (1517, 51533),
}


@pytest.mark.parametrize("name", sorted(CONLL2000_COUNTS))
def test_conll2000_counts(name):
    path = require_data("conll2000", name)
    X, y = _read_cached(str(path))
    n_sent, n_tok = CONLL2000_COUNTS[name]
    assert len(X) == len(y) == n_sent
    assert sum(len(s) for s in X) == sum(len(t) for t in y) == n_tok
    assert X[0][0] == (("Confidence", "NN") if name == "train.txt" else ("Rockwell", "NNP"))
    assert all(len(tok) == 2 for s in X for tok in s)
    tags = {t for ts in y for t in ts}
    assert {"B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "O"} <= tags
    assert all(t == "O" or re.fullmatch(r"[BI]-[A-Z]+", t) for t in tags)
    assert all(_is_iob2(ts) for ts in y)


def test_conll2000_loader():
    path = require_data("conll2000", "train.txt")
    X, y = load_conll2000("train", data_home=path.parent.parent)
    assert (X, y) == _read_cached(str(path))
    X_test, _ = load_conll2000("test", data_home=path.parent.parent)
    assert len(X_test) == CONLL2000_COUNTS["test.txt"][0]


@pytest.mark.parametrize("name", sorted(CONLL2002_ESP_COUNTS))
def test_conll2002_esp_counts(name):
    path = require_data("conll2002", name)
    X, y = read_conll(path, n_columns=3)
    n_sent, n_tok = CONLL2002_ESP_COUNTS[name]
    assert len(X) == len(y) == n_sent
    assert sum(len(s) for s in X) == n_tok
    assert all(len(tok) == 2 for s in X for tok in s)
    tags = {t for ts in y for t in ts}
    assert tags <= {"O"} | {f"{b}-{c}" for b in "BI" for c in ("PER", "LOC", "ORG", "MISC")}
    assert {"O", "B-PER", "I-PER", "B-LOC", "B-ORG", "B-MISC"} <= tags
    # IOB2: every I-X follows B-X or I-X.  The distributed files each contain
    # one entity cut by a sentence break, i.e. one sentence starting with I-X.
    bad = [ts for ts in y if not _is_iob2(ts)]
    assert len(bad) <= 1
    assert all(ts[0].startswith("I-") and _is_iob2(["B-" + ts[0][2:]] + ts[1:])
               for ts in bad)
    subset = name.split(".")[1]
    assert load_conll2002_esp(subset, data_home=path.parent.parent) == (X, y)


def test_conll2002_esp_latin1_copy(tmp_path):
    path = require_data("conll2002", "esp.testa")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:3000]
    text = "".join(lines)
    assert any(ord(c) > 127 for c in text)
    latin = tmp_path / "esp.testa"
    latin.write_bytes(text.encode("latin-1"))
    assert read_conll(latin, encoding="latin-1") == read_conll(io.StringIO(text))
    with pytest.raises(ValueError, match=r"esp\.testa.*line \d+.*latin-1"):
        read_conll(latin)
