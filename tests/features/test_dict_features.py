"""DictSequenceVectorizer: sklearn-crfsuite's feature dicts in, the taggers'
input out."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline

from sklstruct import (CRFTagger, DictSequenceVectorizer, SequenceVectorizer,
                       StructuredPerceptronTagger)
from sklstruct.datasets import make_chunking_corpus
from sklstruct.metrics import get_scorer

# ConvergenceWarning is expected here: short CRF fits on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def test_the_same_features_give_the_same_model():
    """A SequenceVectorizer's features written as dicts (its token feature
    names as keys) train the same tagger: identical predictions."""
    X, y = make_chunking_corpus(300, random_state=1)
    vec = SequenceVectorizer(["word", "pos", "suffix2", "pos[-1]|pos"], window=1)
    dicts = [[{name: True for name in token} for token in sentence]
             for sentence in vec.token_features(X)]
    lists = [[list(token) for token in sentence] for sentence in vec.token_features(X)]
    models = [make_pipeline(v, StructuredPerceptronTagger(max_iter=3, random_state=0))
              for v in (vec, DictSequenceVectorizer(), DictSequenceVectorizer())]
    preds = [m.fit(data[:240], y[:240]).predict(data[240:])
             for m, data in zip(models, (X, dicts, lists))]
    for a, b, c in zip(*preds):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert sorted(models[1][0].get_feature_names_out()) == sorted(
        vec.fit(X[:240]).get_feature_names_out())


def tutorial_features(sentence, i):
    """sklearn-crfsuite's tutorial ``word2features``, on (word, POS) tokens."""
    word, postag = sentence[i]
    features = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:],
                "word[-2:]": word[-2:], "word.isupper()": word.isupper(),
                "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
                "postag": postag, "postag[:2]": postag[:2]}
    for side, j, edge in (("-1", i - 1, "BOS"), ("+1", i + 1, "EOS")):
        if 0 <= j < len(sentence):
            w, p = sentence[j]
            features.update({f"{side}:word.lower()": w.lower(),
                             f"{side}:word.istitle()": w.istitle(),
                             f"{side}:word.isupper()": w.isupper(),
                             f"{side}:postag": p, f"{side}:postag[:2]": p[:2]})
        else:
            features[edge] = True
    return features


#: The tutorial's features as templates (with boundary="skip").
TUTORIAL_TEMPLATES = (["bias", "lower", "suffix3", "suffix2", "is_upper", "is_title", "is_digit",
                       "pos", "prefix2(pos)", "is_first", "is_last"]
                      + [f"{t}[{k}]" for k in (-1, 1)
                         for t in ("lower", "is_title", "is_upper", "pos", "prefix2(pos)")])


def test_the_tutorial_features_as_templates():
    """With ``boundary="skip"`` and the is_first / is_last flags, templates
    give exactly sklearn-crfsuite's tutorial features: the same number of
    features on every token, and the same model."""
    X, y = make_chunking_corpus(300, random_state=2)
    dicts = [[tutorial_features(s, i) for i in range(len(s))] for s in X]
    vec = SequenceVectorizer(TUTORIAL_TEMPLATES, boundary="skip")
    dvec = DictSequenceVectorizer()
    A, B = vec.fit_transform(X), dvec.fit_transform(dicts)
    assert A.shape == B.shape
    np.testing.assert_array_equal(np.diff(A.matrix.indptr), np.diff(B.matrix.indptr))
    np.testing.assert_array_equal(A.matrix.data, 1.0)
    np.testing.assert_array_equal(B.matrix.data, 1.0)
    preds = [StructuredPerceptronTagger(max_iter=3, random_state=0).fit(Z[:240], y[:240])
             .predict(Z[240:]) for Z in (A, B)]
    for a, b in zip(*preds):
        np.testing.assert_array_equal(a, b)
    # the default boundary gives the neighbours' __BOS__ / __EOS__ values instead
    first = SequenceVectorizer(TUTORIAL_TEMPLATES).fit(X).token_features(X[:1])[0][0]
    assert "lower[-1]=__BOS__" in first and "is_first" in first


def test_crfsuite_formats():
    X = [[{"w": "the", "upper": False, "emb": {"0": 0.5, "1": -2.0}, "tags": ["a", "b"],
           "odd key=:|": 1},
          ["bias", "w=cat"]]]
    vec = DictSequenceVectorizer()
    Xt = vec.fit_transform(X)
    names = list(vec.get_feature_names_out())
    assert names == sorted(["w=the", "upper", "emb:0", "emb:1", "tags:a", "tags:b",
                            "odd key=:|", "bias", "w=cat"])
    row = dict(zip(names, Xt[0].toarray()[0]))
    assert row["emb:1"] == -2.0 and row["emb:0"] == 0.5 and row["upper"] == 0
    assert Xt[0][1].nnz == 2 and Xt[0].shape == (2, 9)
    # unseen attributes are ignored; the output is stacked like SequenceVectorizer's
    Xt2 = vec.transform([[{"w": "unseen", "bias": 2.0}]])
    assert Xt2[0].toarray()[0, names.index("bias")] == 2.0 and Xt2[0].nnz == 1
    np.testing.assert_array_equal(vec.transform(X)[0].toarray(), Xt[0].toarray())


@pytest.mark.parametrize("X, error, message", [
    ([[{"w": float("nan")}]], ValueError, r"X\[0\]\[0\]: feature 'w' has the value nan"),
    ([[{"w": 1}], [{"w": None}]], TypeError, r"X\[1\]\[0\]: feature 'w' has a value of type"),
    ([[{"w": 1}], []], ValueError, r"X\[1\]: the sentence is empty"),
    ([[{"w": 1}], "abc"], TypeError, r"X\[1\]"),
    ([[{"w": 1}, 5]], TypeError, r"X\[0\]\[1\]: expected a dict"),
    ([[["a", 3]]], TypeError, "a feature list holds a int"),
])
def test_bad_input_is_named(X, error, message):
    vec = DictSequenceVectorizer()
    with pytest.raises(error, match=message):
        vec.fit(X)
    assert not hasattr(vec, "vocabulary_")


def test_pipeline_clone_and_cross_validation():
    X, y = make_chunking_corpus(120, random_state=2)
    dicts = [[{"word": w, "pos": p, "pos[-1]": s[t - 1][1] if t else "BOS"}
              for t, (w, p) in enumerate(s)] for s in X]
    model = make_pipeline(DictSequenceVectorizer(), CRFTagger(C=1.0, max_iter=30))
    scores = cross_val_score(clone(model), dicts, y, cv=2, scoring=get_scorer("chunk_f1"),
                             error_score="raise")
    assert np.all(scores > 0.5)


def test_hostile_feature_dicts_get_errors_that_name_the_token_and_feature():
    """An int too large for a float raised OverflowError without a place; a value
    above 1e100 was reported against the stacked matrix ('matrix, token 3');
    all-empty dicts gave 'matrix: has 0 features'; a self-containing or
    3,000-deep nested dict gave RecursionError."""
    selfish = {}
    selfish["me"] = selfish
    deep = cur = {}
    for _ in range(3000):
        cur["k"] = {}
        cur = cur["k"]
    cases = [([[{"a": 1}, {"a": 10**400}]], r"X\[0\]\[1\]: feature 'a' has an integer value"),
             ([[{"a": 1}], [{"a": 1}, {"b": {"c": 1e101}}]],
              r"X\[1\]\[1\]: feature 'b:c' has the value 1e\+101"),
             ([[{}, {}], [{}]], "no token has a feature"),
             ([[selfish]], r"X\[0\]\[0\]: features nested deeper than 100 levels"),
             ([[{"a": 1}, deep]], r"X\[0\]\[1\]: features nested deeper")]
    for X, message in cases:
        with pytest.raises(ValueError, match=message):
            DictSequenceVectorizer().fit(X)
