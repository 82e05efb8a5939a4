"""Tests for sklstruct.features."""
import pickle
from collections.abc import Sequence
import random

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction import FeatureHasher
from sklearn.pipeline import make_pipeline

from sklstruct.features import BOS, EOS, SequenceVectorizer, word_shape

SENT = [("The", "DT"), ("U.S.", "NNP"), ("well-known", "JJ"), ("1,000", "CD")]


def features(templates, X=None, **params):
    """token_features of one sentence (SENT by default)."""
    X = [SENT] if X is None else X
    return SequenceVectorizer(templates, **params).fit(X).token_features(X)[0]


def nonzero_columns(matrix, row):
    return set(matrix.indices[matrix.indptr[row] : matrix.indptr[row + 1]].tolist())


# ---------------------------------------------------------------------------
# Hand-checked features
# ---------------------------------------------------------------------------


def test_column_and_derived_templates():
    feats = features(["word", "lower", "pos", "col1", "prefix2", "suffix3",
                      "shape", "suffix1(pos)", "lower(col1)"])
    assert feats[0] == ["word=The", "lower=the", "pos=DT", "col1=DT", "prefix2=Th",
                        "suffix3=The", "shape=Xx", "suffix1(pos)=T", "lower(col1)=dt"]
    assert feats[1] == ["word=U.S.", "lower=u.s.", "pos=NNP", "col1=NNP",
                        "prefix2=U.", "suffix3=.S.", "shape=X.X.", "suffix1(pos)=P",
                        "lower(col1)=nnp"]
    assert [f[6] for f in feats[2:]] == ["shape=x-x", "shape=d,d"]
    # Affixes longer than the word give the whole word.
    assert features(["prefix9"])[0] == ["prefix9=The"]


def test_word_shape_is_the_shape_atom():
    words = ["Confidence", "U.S.", "1,000", "well-known", "Ärger", "x", "", "ÀB12c"]
    assert [word_shape(w) for w in words] == ["Xx", "X.X.", "d,d", "x-x", "Xx", "x", "",
                                              "Xdx"]
    feats = features(["shape"], [words[:4]])
    assert feats == [[f"shape={word_shape(w)}"] for w in words[:4]]


@pytest.mark.parametrize(
    "flag, firing",
    [
        ("is_title", [0, 1]),
        ("is_upper", [1]),
        ("is_lower", [2]),
        ("is_digit", [5]),
        ("has_digit", [3, 5]),
        ("has_hyphen", [2]),
        ("has_dot", [1]),
        ("title_dot", [1]),
        ("first_upper", [0, 1]),
        ("first_lower", [2]),
        ("first_alnum", [0, 1, 2, 3, 5]),
        ("is_punct", [4]),
    ],
)
def test_flags_fire_only_when_true(flag, firing):
    X = [SENT + [(",", ","), ("7", "CD")]]
    feats = features([flag], X)
    assert [i for i, f in enumerate(feats) if f] == firing
    assert all(f == [flag] for f in feats if f)


def test_is_digit():
    assert features(["is_digit"], [["12", "1.5", "a"]]) == [["is_digit"], [], []]


def test_offsets_and_boundaries():
    feats = features(["word[-1]", "pos[+2]", "suffix2[1]", "word[0]"])
    assert feats[0] == ["word[-1]=" + BOS, "pos[+2]=JJ", "suffix2[+1]=S.", "word=The"]
    assert feats[1] == ["word[-1]=The", "pos[+2]=CD", "suffix2[+1]=wn", "word=U.S."]
    assert feats[2] == ["word[-1]=U.S.", "pos[+2]=" + EOS, "suffix2[+1]=00",
                        "word=well-known"]
    assert feats[3] == ["word[-1]=well-known", "pos[+2]=" + EOS,
                        "suffix2[+1]=" + EOS, "word=1,000"]


def test_flags_do_not_fire_beyond_the_sentence():
    feats = features(["first_alnum[-1]", "first_alnum[+1]"])
    assert feats == [["first_alnum[+1]"], ["first_alnum[-1]", "first_alnum[+1]"],
                     ["first_alnum[-1]", "first_alnum[+1]"], ["first_alnum[-1]"]]


def test_offsets_do_not_cross_sentences():
    X = [[("a", "A"), ("b", "B")], [("c", "C")]]
    feats = SequenceVectorizer(["word[-1]", "word[+1]"]).fit(X).token_features(X)
    assert feats == [
        [["word[-1]=" + BOS, "word[+1]=b"], ["word[-1]=a", "word[+1]=" + EOS]],
        [["word[-1]=" + BOS, "word[+1]=" + EOS]],
    ]


def test_conjunctions():
    feats = features(["pos[-1]|pos[0]", "word|pos", "is_title|pos", "is_title|has_dot",
                      "lower[-1]|lower|lower[+1]"])
    assert feats[0] == ["pos[-1]|pos=" + BOS + "|DT", "word|pos=The|DT",
                        "is_title|pos=1|DT", "lower[-1]|lower|lower[+1]=__BOS__|the|u.s."]
    assert feats[1] == ["pos[-1]|pos=DT|NNP", "word|pos=U.S.|NNP",
                        "is_title|pos=1|NNP", "is_title|has_dot",
                        "lower[-1]|lower|lower[+1]=the|u.s.|well-known"]
    assert feats[3] == ["pos[-1]|pos=JJ|CD", "word|pos=1,000|CD",
                        "lower[-1]|lower|lower[+1]=well-known|1,000|__EOS__"]


def test_window_expansion_and_bias():
    vec = SequenceVectorizer(["bias", "word", "pos|pos[+1]", "pos[-1] | pos"],
                             window=1).fit([SENT])
    assert vec.templates_ == ["bias", "word[-1]", "word", "word[+1]", "pos|pos[+1]",
                              "pos[-1]|pos"]
    feats = vec.token_features([SENT])[0]
    assert feats[0] == ["bias", "word[-1]=__BOS__", "word=The", "word[+1]=U.S.",
                        "pos|pos[+1]=DT|NNP", "pos[-1]|pos=__BOS__|DT"]
    vec2 = SequenceVectorizer(["word|pos", "is_upper"], window=2).fit([SENT])
    assert vec2.templates_ == [
        "word[-2]|pos[-2]", "word[-1]|pos[-1]", "word|pos", "word[+1]|pos[+1]",
        "word[+2]|pos[+2]", "is_upper[-2]", "is_upper[-1]", "is_upper",
        "is_upper[+1]", "is_upper[+2]",
    ]
    assert vec2.token_features([SENT])[0][0][-1:] == ["is_upper[+1]"]


def test_templates_are_canonical_and_deduplicated():
    vec = SequenceVectorizer(
        ["col0", "word[0]", "col:word[+01]", "word[+1]", "col:pos", "suffix2(col0)"]
    ).fit([SENT])
    assert vec.templates_ == ["word", "word[+1]", "pos", "suffix2"]
    # Canonical templates re-parse to themselves.
    again = SequenceVectorizer(vec.templates_).fit([SENT])
    assert again.templates_ == vec.templates_


def test_transform_values_shapes_and_names():
    X = [SENT, SENT[:2]]
    vec = SequenceVectorizer(["bias", "word", "pos[-1]|pos"])
    Xt = vec.fit_transform(X)
    assert isinstance(Xt, Sequence) and len(Xt) == 2   # a StackedSentences
    assert [m.shape for m in Xt] == [(4, vec.n_features_out_), (2, vec.n_features_out_)]
    assert all(sp.issparse(m) and m.format == "csr" and m.dtype == np.float64
               for m in Xt)
    names = vec.get_feature_names_out()
    assert list(names) == sorted(vec.vocabulary_)
    assert all(vec.vocabulary_[n] == i for i, n in enumerate(names))
    dense = Xt[0].toarray()
    assert set(dense.ravel().tolist()) == {0.0, 1.0}
    assert [names[j] for j in np.flatnonzero(dense[1])] == sorted(
        ["bias", "word=U.S.", "pos[-1]|pos=DT|NNP"])
    # fit_transform == fit().transform()
    Xt2 = SequenceVectorizer(["bias", "word", "pos[-1]|pos"]).fit(X).transform(X)
    assert all((a != b).nnz == 0 for a, b in zip(Xt, Xt2))


# ---------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------


def test_min_freq():
    X = [["a", "b", "a"], ["a", "c", "b"]]
    vec = SequenceVectorizer(["word", "word[-1]"], min_freq=2).fit(X)
    # word=a x3, word=b x2, word[-1]=__BOS__ x2, word[-1]=a x2
    assert sorted(vec.vocabulary_) == ["word=a", "word=b", "word[-1]=__BOS__",
                                       "word[-1]=a"]
    assert vec.n_features_out_ == 4
    with pytest.raises(ValueError, match="min_freq=10"):
        SequenceVectorizer(["word"], min_freq=10).fit(X)
    with pytest.raises(ValueError, match="No feature fires"):
        SequenceVectorizer(["is_digit"]).fit(X)


def test_unseen_features_ignored_and_columns_stable():
    vec = SequenceVectorizer(["bias", "word", "suffix2"]).fit([["the", "cat"]])
    n = vec.n_features_out_
    (m,) = vec.transform([["the", "dog", "zebra"]])
    assert m.shape == (3, n)
    names = vec.get_feature_names_out()
    rows = [sorted(names[j] for j in nonzero_columns(m, t)) for t in range(3)]
    assert rows == [["bias", "suffix2=he", "word=the"], ["bias"], ["bias"]]


# ---------------------------------------------------------------------------
# Hashing
# ---------------------------------------------------------------------------


def test_hashing():
    X = [SENT, SENT[::-1]]
    templates = ["bias", "word", "pos[-1]|pos", "is_title", "suffix3"]
    vec = SequenceVectorizer(templates, window=1, hashing=True, n_features=2**12)
    Xt = vec.fit_transform(X)
    assert not hasattr(vec, "vocabulary_")
    assert vec.n_features_out_ == 2**12
    assert [m.shape for m in Xt] == [(4, 2**12), (4, 2**12)]
    assert all((m.data > 0).all() for m in Xt)
    # Same token features -> same columns.
    assert nonzero_columns(Xt[0], 1) & nonzero_columns(Xt[1], 2)
    assert nonzero_columns(Xt[0], 1) == nonzero_columns(vec.transform([SENT])[0], 1)
    # Identical to FeatureHasher fed with token_features.
    hasher = FeatureHasher(2**12, input_type="string", alternate_sign=False)
    for m, sentence in zip(Xt, vec.token_features(X)):
        assert (m != hasher.transform(sentence)).nnz == 0
    with pytest.raises(ValueError, match="hashing"):
        vec.get_feature_names_out()


def test_hashing_collisions_add_up():
    vec = SequenceVectorizer(["word", "lower", "suffix3", "prefix3"], hashing=True,
                             n_features=1)
    (m,) = vec.fit_transform([["Abc", "x"]])
    assert m.toarray().tolist() == [[4.0], [4.0]]


def test_refit_with_hashing_drops_vocabulary():
    vec = SequenceVectorizer(["word"]).fit([["a"]])
    vec.set_params(hashing=True).fit([["a"]])
    assert not hasattr(vec, "vocabulary_")


# ---------------------------------------------------------------------------
# token_features <-> transform consistency
# ---------------------------------------------------------------------------

ALL_TEMPLATES = [
    "bias", "word", "lower", "pos", "col2", "prefix1", "suffix2", "shape",
    "is_title", "is_upper", "has_digit", "first_lower", "title_dot", "has_hyphen",
    "pos[-1]|pos", "word[+1]|pos", "is_title|pos[-2]", "suffix1(pos)[+1]",
    "is_upper|first_alnum[-1]",
]

words = st.sampled_from(["the", "The", "U.S.", "A-1", "x", "3", "__BOS__", "a|b",
                         "ÉTÉ", "", ",", "dog"])
tokens = st.tuples(words, st.sampled_from(["DT", "NN", "B|C", "."]),
                   st.sampled_from(["B-NP", "O"]))
corpora = st.lists(st.lists(tokens, min_size=1, max_size=6), min_size=1, max_size=4)


def check_consistency(vec, X):
    Xt = vec.transform(X)
    feats = vec.token_features(X)
    assert len(Xt) == len(feats) == len(X)
    for m, sentence_feats, sentence in zip(Xt, feats, X):
        assert m.shape == (len(sentence), vec.n_features_out_)
        for t, token_feats in enumerate(sentence_feats):
            expected = {vec.vocabulary_[f] for f in token_feats if f in vec.vocabulary_}
            assert nonzero_columns(m, t) == expected
            assert len(set(token_feats)) == len(token_feats)


@settings(max_examples=60, deadline=None)
@given(
    train=corpora,
    test=corpora,
    templates=st.lists(st.sampled_from(ALL_TEMPLATES), min_size=1, max_size=6),
    window=st.integers(0, 2),
    min_freq=st.integers(1, 2),
)
def test_token_features_match_transform(train, test, templates, window, min_freq):
    vec = SequenceVectorizer(templates, window=window, min_freq=min_freq)
    try:
        vec.fit(train)
    except ValueError as exc:  # nothing fires, or everything is pruned
        assert "No feature" in str(exc)
        return
    check_consistency(vec, train)
    check_consistency(vec, test)
    # Feature names really are TEMPLATE=VALUE (or the template itself).
    for sentence in vec.token_features(train):
        for token_feats in sentence:
            for f in token_feats:
                assert f.split("=", 1)[0] in vec.templates_


def test_token_features_unfitted_uses_parameters():
    vec = SequenceVectorizer(["word"], window=1)
    assert vec.token_features([["a", "b"]]) == [
        [["word[-1]=__BOS__", "word=a", "word[+1]=b"],
         ["word[-1]=a", "word=b", "word[+1]=__EOS__"]]
    ]
    assert not hasattr(vec, "templates_")


# ---------------------------------------------------------------------------
# Input formats
# ---------------------------------------------------------------------------


def test_str_tuple_list_dict_and_array_tokens_agree():
    words_ = ["He", "reckons", "the"]
    tags = ["PRP", "VBZ", "DT"]
    inputs = [
        [list(zip(words_, tags))],
        [[list(p) for p in zip(words_, tags)]],
        [[{"word": w, "pos": p} for w, p in zip(words_, tags)]],
        [np.array(list(zip(words_, tags)))],
    ]
    templates = ["word", "suffix2[-1]", "pos", "pos[-1]|word"]
    expected = features(templates, inputs[0])
    for X in inputs[1:]:
        assert features(templates, X) == expected
        assert all((a != b).nnz == 0 for a, b in zip(
            SequenceVectorizer(templates).fit(inputs[0]).transform(X),
            SequenceVectorizer(templates).fit(inputs[0]).transform(inputs[0])))
    str_templates = ["word", "suffix2[-1]", "shape|is_title"]
    assert features(str_templates, [words_]) == features(str_templates, inputs[0])
    # Mixed token kinds in one corpus.
    mixed = [["He", ("reckons", "VBZ"), {"word": "the", "pos": "DT"}]]
    assert features(["word", "word[+1]"], mixed) == features(["word", "word[+1]"],
                                                             inputs[0])


def test_dict_keys_and_tuple_columns():
    X = [[{"word": "Ran", "pos": "VBD", "lemma": "run"}]]
    assert features(["col:lemma", "suffix2(col:lemma)", "is_upper(col:lemma)",
                     "pos"], X) == [["col:lemma=run", "suffix2(col:lemma)=un", "pos=VBD"]]
    X = [[("Ran", "VBD", "B-VP")]]
    assert features(["col2", "col1[-1]|col2"], X) == [
        ["col2=B-VP", "col1[-1]|col2=__BOS__|B-VP"]]


def test_sentences_may_be_tuples_and_corpus_a_generator():
    X = (tuple(s) for s in [SENT, SENT])
    Xt = SequenceVectorizer(["word"]).fit_transform(X)
    assert len(Xt) == 2


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template, message",
    [
        ("wrod", "unknown template name 'wrod'"),
        ("lemma", "col:KEY"),
        ("word[-1", "cannot parse 'word\\[-1'"),
        ("word[x]", "cannot parse"),
        ("word|", "cannot parse ''"),
        ("suffix0", "N >= 1"),
        ("prefix", "unknown template name 'prefix'"),
        ("bias[-1]", "'bias' takes no column"),
        ("bias|word", "'bias' cannot be part of a conjunction"),
        ("word(pos)", "takes no column argument"),
        ("suffix2(foo)", "'foo' is not a column"),
        ("word=x", "cannot parse"),
    ],
)
def test_malformed_templates(template, message):
    with pytest.raises(ValueError, match=f"Malformed template '.*'.*{message}"):
        SequenceVectorizer(["word", template]).fit([SENT])


def test_template_list_errors():
    with pytest.raises(ValueError, match="at least one template"):
        SequenceVectorizer([]).fit([SENT])
    with pytest.raises(ValueError, match="position 1 must be a string"):
        SequenceVectorizer(["word", 3]).fit([SENT])
    with pytest.raises(ValueError, match="templates"):
        SequenceVectorizer("word").fit([SENT])


def test_parameter_errors():
    for params in [{"window": -1}, {"min_freq": 0}, {"n_features": 0},
                   {"hashing": "yes"}]:
        with pytest.raises(ValueError):
            SequenceVectorizer(["word"], **params).fit([SENT])
    with pytest.raises(ValueError, match="min_freq=2 cannot be used with hashing"):
        SequenceVectorizer(["word"], hashing=True, min_freq=2).fit([SENT])


@pytest.mark.parametrize(
    "X, templates, error, message",
    [
        ([], ["word"], ValueError, "X: contains no sentences"),
        ("a sentence", ["word"], TypeError,
         "X: expected a list of sentences .*; got str"),
        ([SENT, []], ["word"], ValueError, "X\\[1\\]: sentence is empty"),
        ([SENT, "abc"], ["word"], TypeError,
         "X\\[1\\]: expected a sequence of tokens; got str"),
        ([SENT, [("a", "B"), ("b",)]], ["pos"], ValueError,
         "X\\[1\\], token 1: no column 'pos' in \\('b',\\)"),
        ([["a", "b"], ["c"]], ["word", "pos[-1]"], ValueError,
         "X\\[0\\], token 0: no column 'pos'"),
        ([[("a", "B")], [{"word": "c"}]], ["pos"], ValueError,
         "X\\[1\\], token 0: no column 'pos'"),
        ([[{"word": "c", "pos": "X"}]], ["col1"], ValueError,
         "X\\[0\\], token 0: no column 'col1'"),
        ([[("c", "X")]], ["col:lemma"], ValueError,
         "X\\[0\\], token 0: no column 'col:lemma'"),
        ([["a", "b"], ["c", 3]], ["word"], TypeError,
         "X\\[1\\], token 1: unsupported token type int"),
        ([[("a", "B"), None]], ["word"], TypeError,
         "X\\[0\\], token 1: unsupported token type NoneType"),
        ([[("a", "B")], [("b", 7)]], ["pos"], TypeError,
         "X\\[1\\], token 0: the value of column 'pos' must be a string; got 7"),
        ([[{"word": None}]], ["word"], TypeError,
         "the value of column 'word' must be a string; got None"),
    ],
)
def test_input_errors(X, templates, error, message):
    vec = SequenceVectorizer(templates)
    with pytest.raises(error, match=message):
        vec.fit(X)
    with pytest.raises(error, match=message):
        vec.token_features(X)


@pytest.mark.parametrize(
    "X, error, message",
    [
        ([], ValueError, "X: contains no sentences"),
        ([SENT, SENT, []], ValueError, "X\\[2\\]: sentence is empty"),
        ([SENT, ["word"]], ValueError, "X\\[1\\], token 0: no column 'pos'"),
        ([[("a", "B"), 1.5]], TypeError, "X\\[0\\], token 1: unsupported token type float"),
    ],
)
def test_transform_errors(X, error, message):
    vec = SequenceVectorizer(["word", "pos"]).fit([SENT])
    with pytest.raises(error, match=message):
        vec.transform(X)


def test_transform_before_fit():
    with pytest.raises(NotFittedError):
        SequenceVectorizer().transform([SENT])
    with pytest.raises(NotFittedError):
        SequenceVectorizer().get_feature_names_out()


# ---------------------------------------------------------------------------
# scikit-learn integration
# ---------------------------------------------------------------------------


def test_clone_get_set_params():
    vec = SequenceVectorizer(["word", "pos"], window=2, min_freq=3)
    assert vec.get_params() == {"templates": ["word", "pos"], "window": 2,
                                "min_freq": 3, "hashing": False,
                                "n_features": 2**20, "boundary": "symbol",
                                "n_jobs": None, "clusters": None,
                                "missing_columns": "raise"}
    other = clone(vec)
    assert other is not vec and other.get_params() == vec.get_params()
    other.set_params(window=0, hashing=True)
    assert other.window == 0 and other.hashing and vec.window == 2
    fitted = SequenceVectorizer(["word"]).fit([SENT])
    assert not hasattr(clone(fitted), "vocabulary_")
    assert "window=2" in repr(vec)


def test_pickle_round_trip():
    vec = SequenceVectorizer(["bias", "word", "pos[-1]|pos", "shape"], window=1)
    vec.fit([SENT])
    X = [SENT[::-1], SENT]
    restored = pickle.loads(pickle.dumps(vec))
    assert restored.vocabulary_ == vec.vocabulary_
    assert restored.templates_ == vec.templates_
    assert all((a != b).nnz == 0 for a, b in zip(vec.transform(X),
                                                restored.transform(X)))
    assert restored.token_features(X) == vec.token_features(X)


class _CountRows(BaseEstimator):
    """Dummy sequence 'tagger': predicts the feature count of each token."""

    def fit(self, X, y=None):
        assert all(sp.issparse(m) for m in X)
        self.n_features_ = X[0].shape[1]
        return self

    def predict(self, X):
        assert all(m.shape[1] == self.n_features_ for m in X)
        return [np.asarray(m.sum(axis=1)).ravel().astype(int).tolist() for m in X]


def test_inside_pipeline():
    y = [["B-NP", "I-NP", "I-NP", "O"]]
    pipe = make_pipeline(SequenceVectorizer(["bias", "word", "pos"]), _CountRows())
    pipe.fit([SENT], y)
    assert pipe.predict([SENT]) == [[3, 3, 3, 3]]
    assert pipe.predict([[("new", "DT")]]) == [[2]]
    assert pipe[0].get_feature_names_out()[0] == "bias"
    clone(pipe).set_params(sequencevectorizer__window=1).fit([SENT], y)


# ---------------------------------------------------------------------------
# Feature sets of Altun et al. (2003)
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# A larger synthetic corpus
# ---------------------------------------------------------------------------


def test_synthetic_corpus():
    rng = random.Random(0)
    vocab = ["w%d" % i for i in range(2000)] + ["The", "U.S.", "co-op", "42"]
    tags = ["NN", "DT", "VB", "JJ", "IN"]
    X = [[(rng.choice(vocab), rng.choice(tags)) for _ in range(rng.randint(1, 40))]
         for _ in range(2400)]
    n_tokens = sum(map(len, X))
    assert n_tokens > 45000
    templates = ["bias", "word", "lower", "pos", "suffix2", "suffix3", "shape",
                 "pos[-1]|pos", "word|pos", "is_title", "has_digit"]
    vec = SequenceVectorizer(templates, window=1)
    Xt = vec.fit_transform(X)
    assert len(Xt) == len(X)
    assert sum(m.shape[0] for m in Xt) == n_tokens
    names = vec.get_feature_names_out()
    for s in (0, 1, len(X) - 1):
        sentence = X[s]
        last = len(sentence) - 1
        for t in {0, last // 2, last}:
            word, tag = sentence[t]
            prev_tag = sentence[t - 1][1] if t > 0 else BOS
            next_word = sentence[t + 1][0] if t < last else EOS
            got = {names[j] for j in nonzero_columns(Xt[s], t)}
            assert {"bias", f"word={word}", f"pos={tag}", f"word[+1]={next_word}",
                    f"pos[-1]={prev_tag}", f"pos[-1]|pos={prev_tag}|{tag}",
                    f"suffix3={word[-3:]}"} <= got
            assert ("is_title" in got) == word.istitle()
            assert len(got) == Xt[s][t].nnz
    # transform of the same data gives the same matrices.
    again = vec.transform(X[:50])
    assert all((a != b).nnz == 0 for a, b in zip(again, Xt[:50]))


def test_equal_names_within_a_template_are_counted_together():
    # A literal "__BOS__" and the boundary marker give the same name.
    X = [[("__BOS__", "a"), ("y", "c")], [("x", "a"), ("y", "b")]]
    vec = SequenceVectorizer(["word[-1]"], min_freq=2).fit(X)
    assert sorted(vec.vocabulary_) == ["word[-1]=__BOS__"]
    check_consistency(vec, X)


def test_bars_in_values_do_not_merge_conjunctions():
    # Regression: ("a|b", "c") and ("a", "b|c") both gave "pos[-1]|pos=a|b|c".
    X = [[("x", "a|b"), ("y", "c")], [("x", "a"), ("y", "b|c")]]
    vec = SequenceVectorizer(["pos[-1]|pos"]).fit(X)
    feats = vec.token_features(X)
    assert feats[0][1] == ["pos[-1]|pos=a\\|b|c"]
    assert feats[1][1] == ["pos[-1]|pos=a|b\\|c"]
    # Escaping covers the backslash too: ("a\\", "b|c") vs ("a|b\\", "c").
    X = [[("a\\", "b|c")], [("a|b\\", "c")], [("a\\", "b")]]
    names = [f[0] for s in SequenceVectorizer(["word|pos"]).token_features(X) for f in s]
    assert names == ["word|pos=a\\\\|b\\|c", "word|pos=a\\|b\\\\|c",
                     "word|pos=a\\|b"]  # no bar in a value: as before
    assert len(set(names)) == 3
    check_consistency(vec, [[("x", "a|b"), ("y", "c")]])
    # A single value is never escaped.
    assert features(["word"], [["a|b"]]) == [["word=a|b"]]


# ---------------------------------------------------------------------------
# Hostile input: bounded sizes, clear errors, unambiguous names
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("window", [10**6, 1001, 2**63, -1])
def test_window_is_bounded(window):
    # Regression: window=10**6 expanded to 2 million templates and hung.
    with pytest.raises(ValueError, match="'window' parameter.*\\[0, 1000\\]"):
        SequenceVectorizer(["word"], window=window).fit([SENT])
    with pytest.raises(ValueError, match="'window' parameter"):
        SequenceVectorizer(["word"], window=window).token_features([SENT])


def test_largest_window_and_offset_work():
    vec = SequenceVectorizer(["word"], window=1000).fit([["a", "b"]])
    assert len(vec.templates_) == 2001
    assert vec.token_features([["a"]])[0][0][999:1002] == [
        "word[-1]=__BOS__", "word=a", "word[+1]=__EOS__"]
    assert features(["word[-1000]", "word[+1000]"], [["a"]]) == [
        ["word[-1000]=__BOS__", "word[+1000]=__EOS__"]]


def test_template_instances_are_bounded():
    templates = [f"col:k{i}" for i in range(10)]
    with pytest.raises(ValueError, match="expand to 10010 template instances of 10010 "
                       "atoms; at most 10000 instances of 100000 atoms"):
        SequenceVectorizer(templates, window=500).fit([SENT])
    with pytest.raises(ValueError, match="10001 templates; at most 10000"):
        SequenceVectorizer(["word"] * 10001).fit([SENT])
    conjunction = "|".join(f"word[{i}]" for i in range(-500, 501))  # 1001 atoms, 1002 with pos
    with pytest.raises(ValueError, match="templates\\[:100\\] with window=0 already "
                       "expand to 100 template instances of 100200 atoms"):
        SequenceVectorizer([conjunction + f"|pos[{i}]" for i in range(100)]).fit([SENT])
    with pytest.raises(ValueError, match="more than 100000 atoms"):
        SequenceVectorizer(["|".join(["word"] * 100001)]).fit([SENT])
    # duplicates are not counted twice
    assert len(SequenceVectorizer([conjunction] * 200).fit([SENT]).templates_) == 1


@pytest.mark.parametrize(
    "template, message",
    [
        ("word[99999999999999999999]", "offset '99999999999999999999' is too large; "
         "at most 1000"),
        ("pos[-1001]", "offset '-1001' is too large"),
        ("word[" + "9" * 5000 + "]", "offset '9999.*' is too large"),
        ("suffix2(pos)[1001]|word", "offset '1001'"),
        ("prefix" + "9" * 5000, "prefix length '9999.*' is too large; at most 1000000"),
        ("col99999999999999999999", "column number '9999.*' is too large"),
        ("suffix3(col99999999999)", "column number"),
        ("word[٣]", "cannot parse"),  # only ASCII digits
    ],
)
def test_huge_numbers_in_templates(template, message):
    # Regression: a huge offset gave OverflowError, a 5000-digit one Python's
    # "Exceeds the limit (4300 digits)".
    with pytest.raises(ValueError, match=f"Malformed template '.*'.*{message}"):
        SequenceVectorizer([template]).fit([SENT])


def test_leading_zeros_are_not_too_large():
    vec = SequenceVectorizer(["word[" + "0" * 50 + "1]", "col000001", "prefix0002"])
    assert vec.fit([SENT]).templates_ == ["word[+1]", "col1", "prefix2"]


def test_bool_parameters_are_refused():
    for param in ("window", "min_freq", "n_features"):
        with pytest.raises(TypeError, match=f"{param}=True must be an int"):
            SequenceVectorizer(["word"], **{param: True}).fit([SENT])


@pytest.mark.parametrize(
    "X, error, message",
    [
        (None, TypeError, "X: expected a list of sentences .*; got None"),
        (3, TypeError, "got int"),
        ({("a",)}, TypeError, "got set"),
        ([{"a", "b"}], TypeError, "X\\[0\\]: expected a sequence of tokens; got set"),
        ([[b"bytes"]], TypeError, "X\\[0\\], token 0: unsupported token type bytes"),
        ([["a", np.int64(3)]], TypeError, "X\\[0\\], token 1: unsupported token type int64"),
        ([[{"word": float("nan")}]], TypeError, "X\\[0\\], token 0: the value of column "
         "'word' must be a string; got nan \\(float\\)"),
        ([[{"word": b"a"}]], TypeError, "got b'a' \\(bytes\\)"),
        ([[(None, "a")]], TypeError, "got None"),
        ([[np.array([1, 2])]], TypeError, "got np.int64\\(1\\)|got 1 "),
    ],
)
def test_more_input_errors(X, error, message):
    with pytest.raises(error, match=message):
        SequenceVectorizer(["word"]).fit(X)
    with pytest.raises(error, match=message):
        SequenceVectorizer(["word"]).fit([["a"]]).transform(X)


def test_first_bad_token_is_named():
    # the error names the first bad token, whatever the order of types in a set
    X = [["a", "b"], ["c", 2.5, None, 7]]
    with pytest.raises(TypeError, match="X\\[1\\], token 1: unsupported token type float"):
        SequenceVectorizer(["word"]).fit(X)


def test_long_reprs_are_cut_in_messages():
    huge = ("w" * 10**5, "NN")
    with pytest.raises(ValueError) as info:
        SequenceVectorizer(["col5"]).fit([[huge]])
    assert len(str(info.value)) < 300
    with pytest.raises(ValueError) as info:
        SequenceVectorizer(["x" * 10**5]).fit([SENT])
    assert len(str(info.value)) < 400


def test_lone_surrogates_hash():
    # Regression: hashing=True raised UnicodeEncodeError on a lone surrogate.
    X = [["\ud800", "a"], [("b\udcff", "x")]]
    vec = SequenceVectorizer(["word", "word[-1]|word"], hashing=True, n_features=64)
    Xt = vec.fit_transform(X)
    assert [m.nnz for m in Xt] == [4, 2]
    plain = SequenceVectorizer(["word"], hashing=True, n_features=2**12)
    hasher = FeatureHasher(2**12, input_type="string", alternate_sign=False)
    assert (plain.fit_transform([["a", "bé"]])[0]
            != hasher.transform([["word=a"], ["word=bé"]])).nnz == 0
    assert "word=\ud800" in SequenceVectorizer(["word"]).fit(X).vocabulary_


def test_sentences_are_read_once():
    class Once:
        """A sentence that can be iterated only once (and lies about its length)."""

        def __init__(self, tokens):
            self.tokens = iter(tokens)

        def __len__(self):
            return 99

        def __iter__(self):
            return self.tokens

    vec = SequenceVectorizer(["word", "word[+1]"])
    assert vec.fit([Once(["a", "b"])]).token_features([Once(["a", "b"])]) == [
        [["word=a", "word[+1]=b"], ["word=b", "word[+1]=__EOS__"]]]


# -- property-based: random sentences never crash, names never collide -------

odd_strings = st.one_of(
    st.text(max_size=4),
    st.sampled_from(["|", "\\", "\\|", "|\\", "||", "", "=", "a=b", " ", "__BOS__",
                     "__EOS__", "\ud800", "[1]", "word", "\x00", "\u2028"]),
)
odd_values = st.one_of(odd_strings, st.sampled_from(
    [None, float("nan"), 1, b"x", ("a",), np.str_("np")]))
odd_tokens = st.one_of(
    odd_strings,
    st.tuples(odd_strings, odd_strings),
    st.lists(odd_strings, min_size=1, max_size=3),
    st.dictionaries(st.sampled_from(["word", "pos", "x", "|", "", 1, None]), odd_values,
                    max_size=3),
    st.dictionaries(st.sampled_from(["word", "pos"]), odd_strings, min_size=2),
    st.sampled_from([None, 1.5, b"b", np.array(["w", "t"])]),
)
odd_templates = st.one_of(
    st.sampled_from(ALL_TEMPLATES + ["col:x", "word|col:x", "pos|pos[+1]|word",
                                     "suffix2(col:|)", "col:word|lower(pos)[-2]"]),
    st.text(max_size=12),
)


def transform_or_error(params, X):
    """(vocabulary, dense matrices) of fit_transform, or the error's type."""
    try:
        vec = SequenceVectorizer(**params)
        Xt = vec.fit_transform(X)
    except (ValueError, TypeError) as exc:
        assert str(exc)  # errors say something
        return type(exc)
    vocabulary = getattr(vec, "vocabulary_", None)
    assert [m.shape[0] for m in Xt] == [len(s) for s in X]
    again = vec.transform(X)
    assert all((a != b).nnz == 0 for a, b in zip(Xt, again))
    return vocabulary, [m.toarray().tolist() for m in Xt]


@settings(max_examples=150, deadline=None)
@given(X=st.lists(st.lists(odd_tokens, min_size=1, max_size=4), max_size=3),
       templates=st.lists(odd_templates, min_size=1, max_size=4),
       window=st.integers(0, 2), hashing=st.booleans())
def test_random_sentences_never_crash(X, templates, window, hashing):
    params = dict(templates=templates, window=window, hashing=hashing, n_features=16)
    first = transform_or_error(params, X)
    # Equal inputs (copies, not the same objects) give equal outputs.
    copy = [[t.copy() if isinstance(t, (dict, list, np.ndarray)) else t for t in s]
            for s in X]
    second = transform_or_error(params, copy)
    if isinstance(first, type):
        assert first is second
    else:
        assert first[0] == second[0]
        assert np.array_equal(np.asarray(first[1], dtype=object),
                              np.asarray(second[1], dtype=object))


@settings(max_examples=150, deadline=None)
@given(X=st.lists(st.lists(st.tuples(*[st.one_of(st.text("a|\\", max_size=3),
                                                 odd_strings)] * 3),
                           min_size=1, max_size=6), min_size=1, max_size=6))
def test_different_tokens_never_share_a_conjunction(X):
    # a small alphabet with "|" and "\\", so that a collision would be found
    templates = ["word|pos", "pos[-1]|pos", "word|pos|col2", "word|is_upper(pos)"]
    feats = SequenceVectorizer(templates).token_features(X)
    seen = {}
    for sentence, sentence_feats in zip(X, feats):
        for t, (token, names) in enumerate(zip(sentence, sentence_feats)):
            values = {"word|pos": token[:2], "word|pos|col2": token,
                      "word|is_upper(pos)": (token[0], token[1].isupper())}
            if t > 0:  # inside the sentence: no boundary marker
                values["pos[-1]|pos"] = (sentence[t - 1][1], token[1])
            for name in names:
                template = name.split("=", 1)[0]
                if template in values:
                    assert seen.setdefault(name, values[template]) == values[template]


def test_boundary_skip_and_position_flags():
    """boundary="skip": an atom beyond the sentence gives no feature (alone
    or in a conjunction); is_first / is_last mark the sentence's ends and
    read no column; refitting keeps the fitted boundary for transform."""
    X = [[("He", "PRP"), ("reckons", "VBZ"), ("so", "RB")], [("Go", "VB")]]
    templates = ["word[-1]", "pos[-1]|pos", "is_title[+1]", "is_first", "is_last",
                 "is_last[-1]"]
    skip = SequenceVectorizer(templates, boundary="skip").fit(X)
    assert skip.token_features(X) == [
        [["is_first"],
         ["word[-1]=He", "pos[-1]|pos=PRP|VBZ"],
         ["word[-1]=reckons", "pos[-1]|pos=VBZ|RB", "is_last"]],
        [["is_first", "is_last"]]]
    symbol = SequenceVectorizer(templates).fit(X)
    assert symbol.token_features(X)[1] == [
        ["word[-1]=__BOS__", "pos[-1]|pos=__BOS__|VB", "is_first", "is_last"]]
    assert skip.transform(X)[0].toarray().sum(axis=1).tolist() == [1, 2, 3]
    skip.set_params(boundary="symbol")          # not refitted: transform as fitted
    assert skip.transform(X)[0].toarray().sum(axis=1).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="column"):
        SequenceVectorizer(["is_first(pos)"]).fit(X)
    with pytest.raises(ValueError, match="boundary"):
        SequenceVectorizer(boundary="pad").fit(X)


def test_position_flags_are_not_window_expanded():
    vec = SequenceVectorizer(["word", "is_first", "is_last"], window=1)
    X = [[("He", "PRP"), ("reckons", "VBZ")]]
    vec.fit(X)
    assert vec.templates_ == ["word[-1]", "word", "word[+1]", "is_first", "is_last"]


def test_transform_keeps_the_fitted_mode_and_width_after_set_params():
    """hashing or n_features changed by set_params after fit: transform hashed
    with the new settings into a matrix of the fitted width, marked trusted,
    and the tagger read outside coef_ (a segfault in a pipeline's predict)."""
    from sklearn.pipeline import make_pipeline

    from sklstruct import StructuredPerceptronTagger

    X = [[("He", "PRP"), ("reckons", "VBZ")], [("the", "DT"), ("deficit", "NN")]] * 5
    y = [["B-NP", "B-VP"], ["B-NP", "I-NP"]] * 5
    for fitted, later in ((dict(hashing=False), dict(hashing=True, n_features=2**20)),
                          (dict(hashing=True, n_features=16), dict(n_features=2**20)),
                          (dict(hashing=True, n_features=16), dict(hashing=False))):
        pipe = make_pipeline(SequenceVectorizer(["word", "pos"], **fitted),
                             StructuredPerceptronTagger(max_iter=2, random_state=0)).fit(X, y)
        vec = pipe[0]
        expected = vec.transform(X)
        width = vec.n_features_out_
        vec.set_params(**later)
        got = vec.transform(X)
        assert got.matrix.shape[1] == width
        assert (got.matrix != expected.matrix).nnz == 0
        assert [p.tolist() for p in pipe.predict(X)] == y


def test_token_transformer_names_the_transformer_and_the_sentence():
    """A transformer that returned the wrong shape or non-finite values was
    reported against internal objects ('offsets: must start at 0 ...',
    'matrix, token 0')."""
    import scipy.sparse as sp
    from sklearn.preprocessing import FunctionTransformer

    from sklstruct import TokenTransformer

    X = [sp.csr_matrix(np.ones((2, 3))), sp.csr_matrix(np.ones((1, 3)))]

    def nan_at_last(a):
        z = np.ones((3, 2))
        z[2, 1] = np.nan
        return z

    for f, error, message in (
            (lambda a: np.zeros((1, 2)), ValueError, "FunctionTransformer returned 1 rows for 3"),
            (lambda a: np.zeros(3), ValueError, "1 dimension"),
            (nan_at_last, ValueError, r"non-finite value for X\[1\], token 0"),
            (lambda a: np.array([["x", "y"]] * 3), TypeError, "not real numbers")):
        with pytest.raises(error, match=message):
            TokenTransformer(FunctionTransformer(f)).fit_transform(X)
    Z = TokenTransformer(FunctionTransformer(lambda a: a * 2)).fit_transform(X)
    assert Z[1].toarray().tolist() == [[2.0, 2.0, 2.0]]


def test_a_too_wide_hashing_vectorizer_is_named_as_the_cause_of_a_memory_error():
    """The weights of 2**31 - 1 hashed columns: the MemoryError hinted at k
    and sentence length, not at the width."""
    from sklearn.pipeline import make_pipeline

    from sklstruct import StructuredPerceptronTagger

    X, y = [[("a", "b"), ("c", "d")]] * 3, [["A", "B"]] * 3
    pipe = make_pipeline(SequenceVectorizer(["word"], hashing=True, n_features=2**31 - 1),
                         StructuredPerceptronTagger(max_iter=1))
    with pytest.raises(MemoryError, match=r"2147483647 features x 2 labels.*n_features"):
        pipe.fit(X, y)
