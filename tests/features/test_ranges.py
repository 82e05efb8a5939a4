"""The template language's disjunctive ranges (``lower[-4..-1]``: every
token of the range under one feature name, a value met twice counting 2)
and the ``long_shape`` atom, by hand on small sentences; the compiled
featurizer is checked against the Python oracle with ranges in
tests/features/test_featurize.py."""
import pickle

import pytest

from sklstruct.features import SequenceVectorizer
from sklstruct.serialization import load_model, save_model

SENT = [("The", "DT"), ("U.S.", "NNP"), ("well-known", "JJ"), ("1,000", "CD")]


def features(templates, X=None, **params):
    """token_features of one sentence (SENT by default)."""
    X = [SENT] if X is None else X
    return SequenceVectorizer(templates, **params).fit(X).token_features(X)[0]


def test_disjunctive_ranges(tmp_path):
    # lower[-2..-1]: the lower-cased words one and two tokens back, wherever
    # they are, under one name; a value met twice adds up
    X = [[("A", "x"), ("a", "y"), ("b", "x"), ("c", "z")]]
    vec = SequenceVectorizer(["lower[-2..-1]", "is_title[+1..+2]", "word[1..2]|pos"],
                             window=2).fit(X)
    # ranges are explicit offsets: never window-expanded; one name each
    assert vec.templates_ == ["lower[-2..-1]", "is_title[+1..+2]", "word[+1..+2]|pos"]
    feats = vec.token_features(X)[0]
    assert feats[0] == ["lower[-2..-1]=__BOS__", "lower[-2..-1]=__BOS__",
                        "word[+1..+2]|pos=a|x", "word[+1..+2]|pos=b|x"]
    assert feats[1] == ["lower[-2..-1]=__BOS__", "lower[-2..-1]=a",
                        "word[+1..+2]|pos=b|y", "word[+1..+2]|pos=c|y"]
    assert feats[3] == ["lower[-2..-1]=a", "lower[-2..-1]=b",
                        "word[+1..+2]|pos=__EOS__|z", "word[+1..+2]|pos=__EOS__|z"]
    (m,) = vec.transform(X)
    names = vec.get_feature_names_out()
    assert dict(zip(names[m[2].indices], m[2].data)) == {
        "lower[-2..-1]=a": 2.0, "word[+1..+2]|pos=c|x": 1.0, "word[+1..+2]|pos=__EOS__|x": 1.0}
    assert dict(zip(names[m[0].indices], m[0].data)) == {
        "lower[-2..-1]=__BOS__": 2.0, "word[+1..+2]|pos=a|x": 1.0,
        "word[+1..+2]|pos=b|x": 1.0}
    # the flag fires once per title-case neighbour in the range
    assert SequenceVectorizer(["is_title[-3..-1]"]).fit(X).transform(X)[0].toarray().ravel(
        ).tolist() == [0.0, 1.0, 1.0, 1.0]
    # boundary="skip": no feature beyond the sentence
    assert features(["lower[-2..-1]"], boundary="skip")[:2] == [[], ["lower[-2..-1]=the"]]
    # canonical names re-parse to the same instances, through pickle too
    again = SequenceVectorizer(vec.templates_).fit(X)
    assert again.templates_ == vec.templates_
    assert (again.transform(X)[0] != m).nnz == 0
    restored = pickle.loads(pickle.dumps(vec))
    assert (restored.transform(X)[0] != m).nnz == 0
    save_model(vec, tmp_path / "vec.skl")
    loaded = load_model(tmp_path / "vec.skl")
    assert loaded.templates_ == vec.templates_ and (loaded.transform(X)[0] != m).nnz == 0
    assert features(["word[-1..-1]", "word[+0..+0]"]) == features(["word[-1]", "word"])


@pytest.mark.parametrize(
    "template, message",
    [
        ("word[-1..-2]", "empty range"),
        ("word[-1..]", "cannot parse"),
        ("word[..+1]", "cannot parse"),
        ("word[-1..+1..+2]", "cannot parse"),
        ("word[-1001..+1]", "offset '-1001' is too large"),
        ("word[-1..+1001]", "offset '\\+1001' is too large"),
        ("word[-1000..+1000]|pos[-1000..+1000]", "give more than 10000 instances of 2 atoms"),
        ("word[-1000..+1000]|" + "|".join(["pos"] * 5000),
         "give 2001 instances of 5001 atoms; at most 10000 instances of 100000 atoms"),
        ("|".join(["word[-1..+1]"] * 9100), "give more than 10000 instances"),
    ],
)
def test_malformed_ranges(template, message):
    with pytest.raises(ValueError, match=f"Malformed template '.*'.*{message}"):
        SequenceVectorizer(["word", template]).fit([SENT])


def test_long_shape_keeps_the_runs_shape_collapses():
    words = ["Confidence", "U.S.", "1,000", "well-known", "Ärger", "x", "", "ÀB12c"]
    assert features(["long_shape", "shape"], [words]) == [
        [f"long_shape={a}", f"shape={b}"] for a, b in zip(
            ["Xxxxxxxxxx", "X.X.", "d,ddd", "xxxx-xxxxx", "Xxxxx", "x", "", "XXddx"],
            ["Xx", "X.X.", "d,d", "x-x", "Xx", "x", "", "Xdx"])]
