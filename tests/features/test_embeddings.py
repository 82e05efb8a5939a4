"""EmbeddingFeatures (word vectors as token features, Turian et al.'s
scaling, k-means clusters) and SentenceFeatureUnion: exact features against
a per-token reference, the union against scipy's hstack, pipelines, input
checks, and gensim's training when gensim is installed."""
import pickle
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from sklstruct import (EmbeddingFeatures, SentenceFeatureUnion, SequenceVectorizer,
                       StructuredPerceptronTagger)
from sklstruct.chain import StackedSentences

VECTORS = {"the": [1.0, 0.0], "cat": [0.0, 1.0], "sat": [1.0, 1.0], "on": [-1.0, 2.0]}
SENTENCES = [["the", "cat", "sat"], ["on", "the", "dog"], ["The"]]


def _std(vectors):
    return np.std(np.array(list(vectors.values()), dtype=float))


def reference(vectors, X, scale=0.1, window=0, unknown="zero", lowercase=False,
              clusters=None, ks=()):
    """The features token by token, straight from the definition."""
    table = {w: np.asarray(v, dtype=float) for w, v in vectors.items()}
    factor = 1.0 if scale is None else scale / _std(vectors)
    table = {w: v * factor for w, v in table.items()}
    dim = len(next(iter(table.values())))
    mean = np.mean(list(table.values()), axis=0)
    rows = []
    for s in X:
        words = [t if isinstance(t, str) else t["word"] if isinstance(t, dict) else t[0]
                 for t in s]
        if lowercase:
            words = [w.lower() for w in words]
        for p in range(len(words)):
            vec, hot = [], []
            for o in range(-window, window + 1):
                q = p + o
                if not 0 <= q < len(words):
                    vec.append(np.zeros(dim))
                elif words[q] in table:
                    vec.append(table[words[q]])
                else:
                    vec.append(mean if unknown == "mean" else np.zeros(dim))
            for i, k in enumerate(ks):
                for o in range(-window, window + 1):
                    block = np.zeros(k)
                    q = p + o
                    if 0 <= q < len(words) and words[q] in table:
                        block[clusters[words[q]][i]] = 1.0
                    hot.append(block)
            rows.append(np.concatenate(vec + hot))
    return np.array(rows)


def test_scaled_vectors_exactly():
    emb = EmbeddingFeatures(VECTORS).fit(SENTENCES)
    factor = 0.1 / _std(VECTORS)
    assert emb.scale_factor_ == pytest.approx(factor, rel=1e-15)
    assert np.std(emb.vectors_) == pytest.approx(0.1)
    Xt = emb.transform(SENTENCES)
    assert isinstance(Xt, StackedSentences) and len(Xt) == 3
    assert Xt.matrix.dtype == np.float64 and Xt.offsets.tolist() == [0, 3, 6, 7]
    dense = Xt.matrix.toarray()
    np.testing.assert_allclose(dense, reference(VECTORS, SENTENCES), rtol=1e-15)
    np.testing.assert_allclose(dense[2], np.array([1.0, 1.0]) * factor)    # "sat"
    assert not dense[5].any() and not dense[6].any()        # "dog", "The": unknown
    assert Xt.matrix.has_canonical_format
    # the validating constructor accepts what transform built without checks
    StackedSentences(Xt.matrix, Xt.offsets, Xt.keys)
    assert emb.get_feature_names_out().tolist() == ["emb0", "emb1"]


def test_scale_none_and_unknown_mean_and_lowercase():
    emb = EmbeddingFeatures(VECTORS, scale=None, unknown="mean", lowercase=True)
    dense = emb.fit_transform(SENTENCES).matrix.toarray()
    np.testing.assert_array_equal(dense[[0, 1, 2, 3, 4]], [[1, 0], [0, 1], [1, 1], [-1, 2],
                                                           [1, 0]])
    np.testing.assert_allclose(dense[5], [0.25, 1.0])       # "dog": the mean vector
    np.testing.assert_array_equal(dense[6], [1, 0])         # "The" lower-cased
    np.testing.assert_allclose(emb.unknown_vector_, [0.25, 1.0])
    np.testing.assert_allclose(dense, reference(VECTORS, SENTENCES, scale=None,
                                                unknown="mean", lowercase=True))


def test_window_features_and_names():
    emb = EmbeddingFeatures(VECTORS, window=2).fit(SENTENCES)
    dense = emb.transform(SENTENCES).matrix.toarray()
    assert dense.shape == (7, 10)
    np.testing.assert_allclose(dense, reference(VECTORS, SENTENCES, window=2), rtol=1e-15)
    names = emb.get_feature_names_out().tolist()
    assert names[:4] == ["emb0[-2]", "emb1[-2]", "emb0[-1]", "emb1[-1]"]
    assert names[4:6] == ["emb0", "emb1"] and names[-1] == "emb1[+2]"


def test_kmeans_blocks_reproducible():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    # three well separated groups of vectors
    vectors = {w: rng.normal(size=3) * 0.1 + 5 * np.eye(3)[i % 3] for i, w in enumerate(words)}
    X = [[words[j] if j < 60 else "oov" for j in rng.integers(0, 70, size=rng.integers(1, 8))]
         for _ in range(20)]
    emb = EmbeddingFeatures(vectors, kmeans=(3, 5), window=1, random_state=0).fit(X)
    assert [km.n_clusters for km in emb.kmeans_] == [3, 5]
    assert emb.clusters_.shape == (60, 2)
    np.testing.assert_array_equal(emb.clusters_[:, 0], emb.kmeans_[0].labels_)
    groups = emb.clusters_[:, 0].reshape(20, 3)
    assert (groups == groups[0]).all() and len(set(groups[0])) == 3   # the three groups
    clusters = {w: emb.clusters_[emb.vocabulary_[w]] for w in words}
    Xt = emb.transform(X)
    np.testing.assert_allclose(Xt.matrix.toarray(),
                               reference(vectors, X, window=1, clusters=clusters, ks=(3, 5)),
                               rtol=1e-12)
    names = emb.get_feature_names_out().tolist()
    assert len(names) == Xt.n_features == 3 * 3 + 3 * 3 + 3 * 5
    assert names[9:12] == ["kmeans3[-1]=0", "kmeans3[-1]=1", "kmeans3[-1]=2"]
    assert names[12] == "kmeans3=0" and names[-1] == "kmeans5[+1]=4"
    again = EmbeddingFeatures(vectors, kmeans=(3, 5), window=1, random_state=0).fit(X)
    np.testing.assert_array_equal(again.clusters_, emb.clusters_)
    assert (again.transform(X).matrix != Xt.matrix).nnz == 0
    # a single int is one clustering
    assert EmbeddingFeatures(vectors, kmeans=4, random_state=0).fit(X).clusters_.shape == (60, 1)


def test_random_corpora_against_reference():
    rng = np.random.default_rng(1)
    for trial in range(5):
        vocab = [f"v{i}" for i in range(int(rng.integers(5, 15)))]
        vectors = {w: rng.normal(size=4) for w in vocab}
        vectors[vocab[0]][1] = 0.0          # an exact zero is no stored entry
        pool = vocab + ["unk1", "unk2"]
        X = [[pool[j] for j in rng.integers(0, len(pool), size=rng.integers(1, 6))]
             for _ in range(8)]
        window, unknown = int(trial % 3), ("zero", "mean")[trial % 2]
        emb = EmbeddingFeatures(vectors, window=window, unknown=unknown, kmeans=(2,),
                                random_state=trial).fit(X)
        clusters = {w: emb.clusters_[emb.vocabulary_[w]] for w in vocab}
        Xt = emb.transform(X)
        assert not (Xt.matrix.data == 0).any()
        np.testing.assert_allclose(Xt.matrix.toarray(),
                                   reference(vectors, X, window=window, unknown=unknown,
                                             clusters=clusters, ks=(2,)), rtol=1e-12)


def test_token_kinds_and_keys():
    emb = EmbeddingFeatures(VECTORS).fit(SENTENCES)
    tuples = [[(w, "NN") for w in s] for s in SENTENCES]
    dicts = [[{"word": w, "pos": "NN"} for w in s] for s in SENTENCES]
    base = emb.transform(SENTENCES)
    for X in (tuples, dicts, iter(SENTENCES)):
        Xt = emb.transform(X)
        assert (Xt.matrix != base.matrix).nnz == 0
        np.testing.assert_array_equal(Xt.keys, base.keys)
    # the word keys of SequenceVectorizer: a tag dictionary can follow either
    np.testing.assert_array_equal(base.keys, SequenceVectorizer().fit_transform(SENTENCES).keys)


class FakeKeyedVectors:
    """gensim KeyedVectors' interface: key_to_index, vectors, lookups."""

    def __init__(self, vectors, oov=None):
        self.key_to_index = {w: i for i, w in enumerate(vectors)}
        self.vectors = np.array(list(vectors.values()), dtype=np.float32)
        self.oov = oov

    def __contains__(self, word):
        return word in self.key_to_index or self.oov is not None

    def __getitem__(self, word):
        if word in self.key_to_index:
            return self.vectors[self.key_to_index[word]]
        if self.oov is None:
            raise KeyError(word)
        return np.asarray(self.oov, dtype=np.float32)


class LookupOnly:
    """Only lookups: the vocabulary is what X has."""

    def __init__(self, vectors):
        self._v = vectors

    def __contains__(self, word):
        return word in self._v

    def __getitem__(self, word):
        return self._v[word]


def test_keyed_vectors_interfaces():
    kv = EmbeddingFeatures(FakeKeyedVectors(VECTORS), scale=None).fit(SENTENCES)
    assert kv.vectors_.dtype == np.float32 and list(kv.vocabulary_) == list(VECTORS)
    plain = EmbeddingFeatures(VECTORS, scale=None).fit(SENTENCES)
    assert (kv.transform(SENTENCES).matrix != plain.transform(SENTENCES).matrix).nnz == 0
    # words outside the table are looked up at transform (FastText's n-grams)
    oov = EmbeddingFeatures(FakeKeyedVectors(VECTORS, oov=[3.0, 4.0]), kmeans=2,
                            random_state=0).fit(SENTENCES)
    dense = oov.transform([["dog"]]).matrix.toarray()
    np.testing.assert_allclose(dense[0, :2], np.array([3.0, 4.0]) * oov.scale_factor_,
                               rtol=1e-6)
    assert dense[0, 2:].sum() == 1.0            # a predicted cluster
    # look-up only: the vocabulary is the words of X found in it
    lk = EmbeddingFeatures(LookupOnly(VECTORS), scale=None).fit([["the", "cat", "dog"]])
    assert sorted(lk.vocabulary_) == ["cat", "the"]
    np.testing.assert_array_equal(lk.transform([["sat", "dog"]]).matrix.toarray(),
                                  [[1, 1], [0, 0]])


def test_clone_pickle_and_params():
    emb = EmbeddingFeatures(VECTORS, kmeans=(2,), window=1, random_state=0)
    assert clone(emb).get_params() == emb.get_params()
    emb.fit(SENTENCES)
    back = pickle.loads(pickle.dumps(emb))
    assert (back.transform(SENTENCES).matrix != emb.transform(SENTENCES).matrix).nnz == 0
    # the fitted window and k-means sizes hold until the next fit
    emb.set_params(window=0)
    assert emb.transform(SENTENCES).n_features == len(emb.get_feature_names_out()) == 12
    with pytest.raises(ValueError, match="pandas"):
        emb.set_output(transform="pandas")


@pytest.mark.parametrize("vectors, error, match", [
    ({"the": [1.0, np.nan]}, ValueError, r"vectors\['the'\]: value nan .*not finite"),
    ({"the": [1.0, 2.0], "cat": [np.inf, 0.0]}, ValueError, r"vectors\['cat'\].*not finite"),
    ({"the": [1.0, 2.0], "cat": [1.0]}, ValueError,
     r"vectors\['cat'\]: has 1 dimensions, but vectors\['the'\] has 2"),
    ({"the": [1.0, 2.0], 3: [1.0, 0.0]}, TypeError, "key 3 is not a string"),
    ({"the": "ab"}, TypeError, r"vectors\['the'\]: not a vector of real numbers"),
    ({"the": [[1.0, 2.0]]}, ValueError, r"vectors\['the'\]: expected a 1-D vector"),
    ({"the": []}, ValueError, "0 dimensions"),
    ({}, ValueError, "contains no vectors"),
    ({"the": [1.0, 1.0]}, ValueError, "standard deviation"),
    (42, TypeError, "mapping of words to vectors"),
])
def test_bad_vectors(vectors, error, match):
    with pytest.raises(error, match=match):
        EmbeddingFeatures(vectors).fit(SENTENCES)


@pytest.mark.parametrize("X, error, match", [
    ([], ValueError, "X: contains no sentences"),
    ([["the"], []], ValueError, r"X\[1\]: sentence is empty"),
    ([["the", 3]], TypeError, r"X\[0\], token 1"),
    ([[("the",), (4,)]], TypeError, r"X\[0\], token 1"),
    ([[{"pos": "DT"}]], ValueError, r"X\[0\], token 0: no column 'word'"),
    ("the cat", TypeError, "expected a list of sentences"),
])
def test_bad_sentences(X, error, match):
    with pytest.raises(error, match=match):
        EmbeddingFeatures(VECTORS).fit(X)
    emb = EmbeddingFeatures(VECTORS).fit(SENTENCES)
    with pytest.raises(error, match=match):
        emb.transform(X)


@pytest.mark.parametrize("params, match", [
    (dict(kmeans=(5,)), r"kmeans\[0\]=5: more clusters than the 4 vectors"),
    (dict(kmeans=(2, 2)), "twice"),
    (dict(kmeans=(2, True)), r"kmeans\[1\]"),
    (dict(kmeans=(0,)), r"kmeans\[0\]"),
    (dict(dim=True), "dim"),
    (dict(window=-1), "window"),
    (dict(scale=0.0), "scale"),
    (dict(unknown="random"), "unknown"),
    (dict(train="word2vec"), "both given"),
    (dict(vectors=None), "neither given"),
    (dict(train="glove"), "train"),
])
def test_bad_parameters(params, match):
    params = {"vectors": VECTORS, **params}
    with pytest.raises(ValueError, match=match):
        EmbeddingFeatures(**params).fit(SENTENCES)


def test_train_params_owned_by_the_estimator():
    with pytest.raises(ValueError, match="'seed' is set by EmbeddingFeatures; use its "
                       "parameter random_state"):
        EmbeddingFeatures(train="word2vec", train_params={"seed": 3}).fit(SENTENCES)


def test_not_fitted():
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        EmbeddingFeatures(VECTORS).transform(SENTENCES)


# -- the union -------------------------------------------------------------------------

def _union(**kw):
    return SentenceFeatureUnion([("words", SequenceVectorizer(["word", "shape"], window=1)),
                                 ("emb", EmbeddingFeatures(VECTORS, window=1, kmeans=(2,),
                                                           random_state=0))], **kw)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_union_is_hstack(n_jobs):
    union = _union(n_jobs=n_jobs).fit(SENTENCES)
    Xt = union.transform(SENTENCES)
    words = union.named_transformers_["words"].transform(SENTENCES)
    emb = union.named_transformers_["emb"].transform(SENTENCES)
    expected = sp.hstack([words.matrix, emb.matrix], format="csr")
    assert Xt.matrix.shape == expected.shape
    assert (Xt.matrix != expected).nnz == 0 and Xt.matrix.has_canonical_format
    np.testing.assert_array_equal(Xt.offsets, words.offsets)
    np.testing.assert_array_equal(Xt.keys, words.keys)
    assert (union.fit_transform(SENTENCES).matrix != expected).nnz == 0
    names = union.get_feature_names_out()
    assert len(names) == Xt.n_features
    assert names[0].startswith("words__") and names[-1] == "emb__kmeans2[+1]=1"
    # a list of matrices and a StackedSentences output give the same union
    listed = SentenceFeatureUnion([("a", _AsList(VECTORS)), ("b", EmbeddingFeatures(VECTORS))])
    Z = listed.fit_transform(SENTENCES)
    single = EmbeddingFeatures(VECTORS).fit_transform(SENTENCES).matrix
    assert (Z.matrix != sp.hstack([single, single])).nnz == 0
    np.testing.assert_array_equal(Z.keys, EmbeddingFeatures(VECTORS).fit_transform(
        SENTENCES).keys)   # the keys of the first transformer that has them


def test_union_weights_params_and_drop():
    union = _union(transformer_weights={"emb": 2.0}).fit(SENTENCES)
    plain = _union().fit(SENTENCES)
    n_words = plain.named_transformers_["words"].transform(SENTENCES).n_features
    a, b = union.transform(SENTENCES).matrix, plain.transform(SENTENCES).matrix
    np.testing.assert_allclose(a[:, n_words:].toarray(), 2 * b[:, n_words:].toarray())
    params = union.get_params()
    assert params["emb__window"] == 1 and "words__templates" in params
    union.set_params(emb__window=0, words="drop")
    Xt = union.fit(SENTENCES).transform(SENTENCES)
    assert [n for n, _ in union.transformers_] == ["emb"] and Xt.n_features == 2 + 2
    c = clone(union)
    assert c.get_params()["emb__window"] == 0 and c.transformer_list[0] == ("words", "drop")
    back = pickle.loads(pickle.dumps(union))
    assert (back.transform(SENTENCES).matrix != Xt.matrix).nnz == 0


class _AsList:
    """A sentence transformer returning a list of CSR matrices (no keys)."""

    def __init__(self, vectors, drop_last=False, drop_sentence=False):
        self.vectors = vectors
        self.drop_last = drop_last
        self.drop_sentence = drop_sentence

    def get_params(self, deep=True):
        return {"vectors": self.vectors, "drop_last": self.drop_last,
                "drop_sentence": self.drop_sentence}

    def set_params(self, **params):
        self.__dict__.update(params)
        return self

    def fit(self, X, y=None):
        self.emb_ = EmbeddingFeatures(self.vectors).fit(X)
        return self

    def transform(self, X):
        out = list(self.emb_.transform(X))
        if self.drop_last:
            out[-1] = out[-1][:-1] if out[-1].shape[0] > 1 else out[-1]
            out[1] = out[1][:-1]
        if self.drop_sentence:
            out = out[:-1]
        return out

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)


def test_union_checks():
    bad = SentenceFeatureUnion([("emb", EmbeddingFeatures(VECTORS)),
                                ("short", _AsList(VECTORS, drop_last=True))])
    with pytest.raises(ValueError, match=r"X\[1\]: transformer 'short' gave 2 tokens, but "
                       "transformer 'emb' gave 3"):
        bad.fit_transform(SENTENCES)
    bad = SentenceFeatureUnion([("emb", EmbeddingFeatures(VECTORS)),
                                ("fewer", _AsList(VECTORS, drop_sentence=True))])
    with pytest.raises(ValueError, match="transformer 'fewer' gave 2 sentences, but "
                       "transformer 'emb' gave 3"):
        bad.fit(SENTENCES).transform(SENTENCES)
    with pytest.raises(ValueError, match="not unique"):
        SentenceFeatureUnion([("a", EmbeddingFeatures(VECTORS)),
                              ("a", EmbeddingFeatures(VECTORS))]).fit(SENTENCES)
    with pytest.raises(TypeError, match=r"transformer_list\[0\]: expected a \(name, "):
        SentenceFeatureUnion([EmbeddingFeatures(VECTORS)]).fit(SENTENCES)
    with pytest.raises(TypeError, match="'x' is not a transformer"):
        SentenceFeatureUnion([("x", 3)]).fit(SENTENCES)
    with pytest.raises(ValueError, match="no transformer"):
        SentenceFeatureUnion([("x", "drop")]).fit(SENTENCES)
    with pytest.raises(ValueError, match="'nope' is not a transformer's name"):
        _union(transformer_weights={"nope": 1.0}).fit(SENTENCES)
    with pytest.raises(ValueError, match="X: contains no sentences"):
        _union().fit([])
    # an output that is not feature matrices is named
    from sklstruct import BrownClusters
    with pytest.raises((TypeError, ValueError), match="transformer 'brown'"):
        SentenceFeatureUnion([("brown", BrownClusters(2))]).fit_transform(SENTENCES)


def test_pipeline_union_to_tagger():
    X = [["the", "cat", "sat"], ["on", "the", "mat"], ["the", "dog", "sat", "on", "it"]] * 4
    y = [["D", "N", "V"], ["P", "D", "N"], ["D", "N", "V", "P", "N"]] * 4
    pipe = make_pipeline(_union(), StructuredPerceptronTagger(max_iter=5, random_state=0))
    pipe.fit(X, y)
    pred = pipe.predict(X)
    assert [len(p) for p in pred] == [len(s) for s in X]
    assert pipe.score(X, y) > 0.9
    assert [len(p) for p in clone(pipe).fit(X, y).predict([["a", "cat"]])] == [2]
    back = pickle.loads(pickle.dumps(pipe))
    assert all((a == b).all() for a, b in zip(back.predict(X), pred))


# -- gensim ------------------------------------------------------------------------------

CORPUS = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "sat", "on", "a", "log"],
          ["the", "dog", "ran"], ["a", "cat", "ran"]] * 10


def test_training_without_gensim_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "gensim", None)
    with pytest.raises(ImportError, match="needs gensim, an optional dependency"):
        EmbeddingFeatures(train="word2vec").fit(CORPUS)


@pytest.mark.parametrize("train", ["word2vec", "fasttext"])
def test_gensim_training(train):
    pytest.importorskip("gensim")
    params = dict(train=train, dim=8, train_params={"min_count": 1, "epochs": 2},
                  kmeans=(2,), random_state=0)
    emb = EmbeddingFeatures(**params).fit(CORPUS)
    assert emb.model_ is not None and emb.vectors_.shape == (9, 8)
    assert np.std(emb.vectors_) == pytest.approx(0.1, rel=1e-5)
    again = EmbeddingFeatures(**params).fit(CORPUS)
    np.testing.assert_array_equal(again.vectors_, emb.vectors_)      # same seed, same model
    Xt = emb.transform([["the", "zebra"]]).matrix.toarray()
    assert Xt.shape == (2, 10) and Xt[0, 8:].sum() == 1
    # FastText gives an unseen word a vector from its n-grams; word2vec none
    assert Xt[1].any() == (train == "fasttext")
    emb2 = pickle.loads(pickle.dumps(emb))
    np.testing.assert_array_equal(emb2.transform([["the", "zebra"]]).matrix.toarray(), Xt)


def test_gensim_min_count_too_high():
    pytest.importorskip("gensim")
    with pytest.raises(ValueError, match="min_count"):
        EmbeddingFeatures(train="word2vec", dim=4, random_state=0).fit([["a", "b"]])
