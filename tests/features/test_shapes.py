"""The word shapes (``shape``, ``long_shape``) on any script: checked
against spaCy's ``word_shape`` where the two rules agree, and by the
properties a shape must have whatever the Unicode text."""
import unicodedata
from itertools import groupby

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklstruct.features import SequenceVectorizer, word_shape
from sklstruct.features._tokens import long_shape

# every kind of character: cased and caseless letters, titlecase, digits of
# several scripts, combining marks, punctuation, symbols, spaces
ANY_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


def _capped(shape, n=4):
    # spaCy keeps at most four of a run of one symbol
    return "".join(c * min(len(list(g)), n) for c, g in groupby(shape))


def _spacy_reads_alike(s):
    # spaCy tests isalpha before case: a titlecase letter is its "x", a
    # cased symbol (a circled letter, a Roman numeral) is kept; it does not
    # normalise, so a combining mark is kept
    return all(unicodedata.category(c) not in ("Lt", "Mn", "Mc", "Me")
               and (c.isalpha() or not (c.isupper() or c.islower())) for c in s)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_long_shape_is_spacys_shape_with_runs_kept(s):
    lex_attrs = pytest.importorskip("spacy.lang.lex_attrs")
    s = unicodedata.normalize("NFC", s)
    if _spacy_reads_alike(s):
        assert _capped(long_shape(s)) == lex_attrs.word_shape(s)


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_shape_has_no_letter_digit_or_mark_and_ignores_normalization(s):
    shape = long_shape(s)
    assert all(c in "Xxd" or not (c.isalpha() or c.isdigit()
                                  or unicodedata.category(c)[0] == "M") for c in shape)
    for form in ("NFC", "NFD"):
        assert long_shape(unicodedata.normalize(form, s)) == shape
    assert word_shape(s) == "".join(c for c, _ in groupby(shape))


def test_scripts_without_case_and_titlecase_letters():
    words = ["東京都", "カタカナ", "القاهرة", "हिन्दी", "Москва", "ǅemal", "١٢٣", "e\u0301te\u0301"]
    assert [long_shape(w) for w in words] == [
        "xxx", "xxxx", "xxxxxxx", "xxx", "Xxxxxx", "Xxxxx", "ddd", "xxx"]
    assert [word_shape(w) for w in words] == ["x", "x", "x", "x", "Xx", "Xx", "d", "x"]
    # the atom of the templates reads the same function
    v = SequenceVectorizer(["shape", "long_shape"], window=0).fit([words])
    assert sorted(v.vocabulary_) == sorted(
        {f"shape={word_shape(w)}" for w in words} | {f"long_shape={long_shape(w)}" for w in words})
