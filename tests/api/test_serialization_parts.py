"""Model files of the scikit-learn parts (issue 33): the k-means clusterings of
EmbeddingFeatures and the transformers of TokenTransformer are stored as
their parameters and arrays, never pickled; a round trip inside a pipeline
transforms and predicts bit for bit; what holds code is refused when saved,
and a garbled part is refused when loaded, saying why."""
import json
import warnings

import numpy as np
import pytest
from _model_files import find, npy, read_zip, write_zip
from sklearn.cluster import MiniBatchKMeans
from sklearn.decomposition import PCA, TruncatedSVD
from sklearn.kernel_approximation import Nystroem, PolynomialCountSketch, RBFSampler
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, MaxAbsScaler, Normalizer, StandardScaler

import sklstruct
from sklstruct import (CRFTagger, EmbeddingFeatures, M3NTagger, StructuredPerceptronTagger,
                       TokenTransformer, feature_set, load_model, save_model)
from sklstruct.datasets import make_chunking_corpus


@pytest.fixture(scope="module")
def corpus():
    X, y = make_chunking_corpus(150, random_state=11)
    return X[:100], y[:100], X[100:]


def round_trip(model, tmp_path):
    save_model(model, tmp_path / "model.skls")
    with np.load(tmp_path / "model.skls", allow_pickle=False) as npz:   # (no pickle in it)
        assert all(npz[name].dtype != object for name in npz.files if name != "model.json")
    return load_model(tmp_path / "model.skls")


def same_features(a, b):
    """Bit for bit the same StackedSentences."""
    for name in ("data", "indices", "indptr"):
        x, y = getattr(a.matrix, name), getattr(b.matrix, name)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name
    assert a.matrix.shape == b.matrix.shape and np.array_equal(a.offsets, b.offsets)


def same_labels(a, b):
    assert len(a) == len(b) and all(np.array_equal(p, q) for p, q in zip(a, b))


def quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y)


def vectors_of(X, n=80, dim=5):
    words = sorted({tok[0] for s in X for tok in s})[:n]
    rng = np.random.default_rng(3)
    return {w: rng.normal(size=dim) for w in words}


# -- round trips -------------------------------------------------------------------------

@pytest.mark.parametrize("tagger", [StructuredPerceptronTagger, CRFTagger])
def test_kmeans_embedding_features_round_trip_in_a_pipeline(corpus, tmp_path, tagger):
    Xtr, ytr, Xte = corpus
    embeddings = EmbeddingFeatures(vectors_of(Xtr), kmeans=(4, 9), window=1, random_state=0)
    model = quiet_fit(make_pipeline(feature_set("S2", embeddings=embeddings),
                                    tagger(max_iter=3, random_state=0)
                                    if tagger is StructuredPerceptronTagger
                                    else tagger(max_iter=3)), Xtr, ytr)
    again = round_trip(model, tmp_path)
    same_features(model[0].transform(Xte), again[0].transform(Xte))
    same_labels(model.predict(Xte), again.predict(Xte))
    saved, loaded = (dict(m[0].transformers_)["embeddings"] for m in (model, again))
    assert np.array_equal(saved.clusters_, loaded.clusters_)
    # the clusterings themselves: the same centers, the same predictions
    rng = np.random.default_rng(0)
    points = rng.normal(size=(200, 5))
    for a, b in zip(saved.kmeans_, loaded.kmeans_):
        assert type(b) is MiniBatchKMeans
        assert a.cluster_centers_.tobytes() == b.cluster_centers_.tobytes()
        assert a.cluster_centers_.dtype == b.cluster_centers_.dtype
        assert np.array_equal(a.predict(points), b.predict(points))
        assert np.array_equal(a.labels_, b.labels_) and a.inertia_ == b.inertia_
        assert repr(a.get_params()) == repr(b.get_params())


TRANSFORMERS = [
    Nystroem(kernel="poly", degree=2, coef0=1, gamma=0.5, n_components=30, random_state=0),
    Nystroem(n_components=20, random_state=1),
    RBFSampler(gamma="scale", n_components=25, random_state=0),
    PolynomialCountSketch(degree=2, n_components=32, random_state=0),
    MaxAbsScaler(),
    StandardScaler(with_mean=False),
    Normalizer(),
    TruncatedSVD(6, random_state=0),
    make_pipeline(MaxAbsScaler(), Nystroem(n_components=15, random_state=0)),
    sklstruct.make_pipeline(Normalizer(), "passthrough", TruncatedSVD(4, random_state=0)),
]


@pytest.mark.parametrize("transformer", TRANSFORMERS, ids=lambda t: type(t).__name__)
def test_token_transformer_round_trips_in_a_pipeline(corpus, tmp_path, transformer):
    Xtr, ytr, Xte = corpus
    model = quiet_fit(make_pipeline(feature_set("S1"), TokenTransformer(transformer),
                                    M3NTagger(max_iter=2, random_state=0)), Xtr, ytr)
    again = round_trip(model, tmp_path)
    same_features(model[:-1].transform(Xte), again[:-1].transform(Xte))
    same_labels(model.predict(Xte), again.predict(Xte))
    assert type(again[1].transformer_) is type(model[1].transformer_)
    assert repr(again.get_params()) == repr(model.get_params())
    # unfitted, it keeps its parameters
    unfitted = round_trip(TokenTransformer(transformer), tmp_path)
    assert repr(unfitted.get_params()) == repr(TokenTransformer(transformer).get_params())


# -- what cannot be saved ----------------------------------------------------------------------

def test_what_holds_code_is_refused_when_saved(corpus, tmp_path):
    Xtr, ytr, _ = corpus
    cases = [
        (TokenTransformer(FunctionTransformer(np.log1p)),
         "TokenTransformer's transformer is or holds a FunctionTransformer, which cannot be "
         "stored in a model file: it applies a Python function"),
        (TokenTransformer(make_pipeline(MaxAbsScaler(), FunctionTransformer())),
         "holds a FunctionTransformer"),
        (TokenTransformer(PCA(3)), "holds a PCA, which cannot be stored.*only around "
                                   "scikit-learn's Nystroem"),
        (TokenTransformer(Nystroem(kernel=lambda a, b: float(a @ b))),
         "Nystroem's parameter kernel is a Python function"),
    ]
    for model, message in cases:
        with pytest.raises(TypeError, match=message):
            save_model(model, tmp_path / "x.skls")
        with pytest.raises(TypeError, match=message):      # fitted, in a pipeline
            save_model(make_pipeline(feature_set("S1"), model), tmp_path / "x.skls")
    assert not list(tmp_path.iterdir())


# -- garbled parts are refused --------------------------------------------------------------

@pytest.fixture(scope="module")
def parts_file(corpus, tmp_path_factory):
    """A model file of a pipeline with both parts: k-means embeddings and a
    TokenTransformer of a count sketch and a Nystroem map."""
    Xtr, ytr, Xte = corpus
    features = feature_set("S1", embeddings=EmbeddingFeatures(vectors_of(Xtr),
                                                              kmeans=(4,), random_state=0))
    model = quiet_fit(make_pipeline(features, TokenTransformer(make_pipeline(
        PolynomialCountSketch(n_components=16, random_state=0),
        Nystroem(n_components=10, random_state=0))), StructuredPerceptronTagger(
            max_iter=2, random_state=0)), Xtr, ytr)
    path = tmp_path_factory.mktemp("parts") / "parts.skls"
    save_model(model, path)
    return path, model, Xte


def state_of(meta, name, fitted="n_features_in_"):
    """The state of the fitted object (with ``fitted``) of class ``name`` in a
    model file's JSON."""
    return find(meta["model"], lambda n: isinstance(n, dict) and n.get("class") == name
                and fitted in n["state"])["state"]


def test_garbled_parts_are_refused_with_a_reason(parts_file, tmp_path):
    path, model, Xte = parts_file
    same_labels(load_model(path).predict(Xte), model.predict(Xte))
    entries = read_zip(path)

    def edited(edit):
        meta = json.loads(entries["model.json"])
        edit(meta)
        return meta

    def replace(name, attribute, array):
        """The entry of ``name``'s ``attribute`` replaced, its header announced."""
        meta = json.loads(entries["model.json"])
        node = state_of(meta, name)[attribute]
        node.update(shape=list(array.shape), dtype=array.dtype.str)
        return {**entries, node["entry"]: npy(array), "model.json": json.dumps(meta).encode()}

    n_features = model[1].n_features_in_
    kmeans = "sklearn.cluster.MiniBatchKMeans"
    sketch = "sklearn.kernel_approximation.PolynomialCountSketch"
    nystroem = "sklearn.kernel_approximation.Nystroem"
    cases = [
        (edited(lambda m: state_of(m, kmeans).update(n_features_in_=7)),
         "cluster_centers_ must have shape \\(4, 7\\)"),
        (replace(kmeans, "cluster_centers_", np.zeros((4, 5), dtype=np.int64)),
         "cluster_centers_ must be an array of kind 'f'"),
        (edited(lambda m: state_of(m, kmeans).update(n_clusters=3)),
         "cluster_centers_ must have shape \\(3, 5\\)"),
        (edited(lambda m: state_of(m, kmeans).update(init="evil")),
         "The 'init' parameter of MiniBatchKMeans must be"),
        (edited(lambda m: state_of(m, kmeans).update(_counts=[1])),
         "has no attribute '_counts'"),
        (replace(sketch, "indexHash_", np.full((2, n_features), 99)),
         "indexHash_ holds values outside \\[0, 16\\)"),
        (replace(nystroem, "normalization_", np.zeros((3, 3))),
         "normalization_ must have shape \\(10, 10\\)"),
        (edited(lambda m: state_of(m, nystroem).update(kernel="os.system")),
         "The 'kernel' parameter of Nystroem must be"),
        (edited(lambda m: state_of(m, "TokenTransformer").update(n_features_in_=3)),
         "transformer_ was fitted on other than n_features_in_=3 features"),
        (edited(lambda m: state_of(m, "TokenTransformer").update(
            transformer_={"t": "ref", "v": 0})),
         "transformer_ must be a fitted transformer of Nystroem"),
        (edited(lambda m: state_of(m, "EmbeddingFeatures", "vectors_").update(
            _n_kmeans={"t": "tuple", "v": [5]})),
         "kmeans_ must hold a fitted MiniBatchKMeans"),
    ]
    for k, (content, message) in enumerate(cases):
        bad = write_zip(tmp_path / f"bad{k}.skls", content if "model.json" in content
                        else entries, None if "model.json" in content else content)
        with pytest.raises(ValueError, match=message):
            load_model(bad)


def test_word_vectors_are_stored_as_one_matrix(corpus, tmp_path):
    """A dict of word vectors (EmbeddingFeatures' ``vectors``) is one array
    entry with its words in the JSON, not an entry per word; a file whose
    words and rows disagree is refused."""
    Xtr, ytr, Xte = corpus
    vectors = vectors_of(Xtr)
    model = quiet_fit(make_pipeline(feature_set("S2", embeddings=EmbeddingFeatures(
        vectors, window=1)), StructuredPerceptronTagger(max_iter=2, random_state=0)), Xtr, ytr)
    path = tmp_path / "model.skls"
    save_model(model, path)
    entries = read_zip(path)
    meta = json.loads(entries["model.json"])
    node = find(meta["model"], lambda n: isinstance(n, dict) and n.get("t") == "vectors")
    assert node["keys"] == list(vectors) and len(entries) < len(vectors)
    again = load_model(path)
    same_labels(model.predict(Xte), again.predict(Xte))
    loaded = dict(again[0].transformers_)["embeddings"].vectors
    assert list(loaded) == list(vectors)
    assert all(loaded[w].tobytes() == v.tobytes() for w, v in vectors.items())
    for edit in (lambda n: n["keys"].pop(), lambda n: n["keys"].__setitem__(1, n["keys"][0]),
                 lambda n: n["keys"].__setitem__(0, 3)):
        meta = json.loads(entries["model.json"])
        edit(find(meta["model"], lambda n: isinstance(n, dict) and n.get("t") == "vectors"))
        bad = write_zip(tmp_path / "bad.skls", entries, meta)
        with pytest.raises(ValueError, match="one matrix row per distinct string key"):
            load_model(bad)
