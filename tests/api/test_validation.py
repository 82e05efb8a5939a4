"""Bad input gets a ValueError that names the problem and its place; nothing crashes."""
import numpy as np
import pytest
import scipy.sparse as sp

from sklstruct import LaRankTagger, SDMTagger, StructuredPerceptronTagger
from sklstruct._registry import TAGGERS
from _oracles import make

# ConvergenceWarning is expected here: fits of a few iterations on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ESTIMATORS = list(TAGGERS.values())


def data(n=4, F=3):
    rng = np.random.default_rng(0)
    X = [sp.csr_matrix(rng.random((i + 2, F))) for i in range(n)]
    y = [np.array(["a", "b"])[np.arange(i + 2) % 2] for i in range(n)]
    return X, y


@pytest.fixture(params=ESTIMATORS)
def fitted(request):
    X, y = data()
    return make(request.param, max_iter=1).fit(X, y), X, y


@pytest.mark.parametrize("mutate, message", [
    (lambda X, y: (X[:3], y), "y: has 4 label sequences but X has 3 sentences"),
    (lambda X, y: (X, y[:-1] + [y[-1][:-1]]), r"y\[3\]: has 4 labels but X\[3\] has 5 tokens"),
    (lambda X, y: ([], []), "no sentences"),
    (lambda X, y: (X[:1] + [sp.csr_matrix((0, 3))] + X[2:], y), r"X\[1\]: sentence is empty"),
    (lambda X, y: (X[:2] + [sp.csr_matrix(np.ones((4, 2)))] + X[3:], y), r"X\[2\]: has 2 features; expected 3"),
    (lambda X, y: (X[:1] + [np.full((3, 3), np.nan)] + X[2:], y), r"X\[1\], token 0: .*finite"),
    (lambda X, y: (X[:3] + [np.full((5, 3), np.inf)], y), r"X\[3\], token 0: .*finite"),
    (lambda X, y: (X, None), "y: is required"),
    (lambda X, y: (X, y[:3] + ["abab"]), r"y\[3\]: expected a sequence of labels"),
    (lambda X, y: (sp.vstack(X).tocsr(), y), "list of per-sentence"),
    (lambda X, y: (np.ones((5, 3)), y), "list of per-sentence"),
    (lambda X, y: (X[:1] + [np.ones(3)] + X[2:], y), r"X\[1\]: expected a 2-D"),
    (lambda X, y: (X[:1] + [np.array([["x", "y", "z"]] * 3)] + X[2:], y), r"X\[1\]: features must be real numbers"),
    (lambda X, y: (X, [list(t) for t in y[:3]] + [[1] * 5]), "labels must be"),
])
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_fit_input(mutate, message, cls):
    X, y = mutate(*data())
    with pytest.raises(ValueError, match=message):
        make(cls, max_iter=1).fit(X, y)


@pytest.mark.parametrize("params, message", [
    (dict(k=0), "'k' parameter"),
    (dict(k=1.5), "'k' parameter"),
    (dict(max_iter=0), "'max_iter' parameter"),
    (dict(average="yes"), "'average' parameter"),
    (dict(shuffle=None), "'shuffle' parameter"),
    (dict(random_state="seed"), "'random_state' parameter"),
])
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_parameters(params, message, cls):
    X, y = data()
    if not set(params) <= set(cls().get_params()):
        return                     # (the CRF has no k, averaging, shuffling or seed)
    with pytest.raises(ValueError, match=message):
        cls(**params).fit(X, y)


@pytest.mark.parametrize("cls, params, message", [
    (SDMTagger, dict(C=0), "'C' parameter"),
    (SDMTagger, dict(tol=-1), "'tol' parameter"),
    (SDMTagger, dict(kappa=-0.1), "'kappa' parameter"),
    (SDMTagger, dict(max_working_set=1), "'max_working_set' parameter"),
    (SDMTagger, dict(cost="f1"), "'cost' parameter"),
    (LaRankTagger, dict(n_reprocess=-1), "'n_reprocess' parameter"),
    (LaRankTagger, dict(n_optimize=1.5), "'n_optimize' parameter"),
    (LaRankTagger, dict(max_smo_iter=0), "'max_smo_iter' parameter"),
])
def test_bad_dual_parameters(cls, params, message):
    X, y = data()
    with pytest.raises(ValueError, match=message):
        cls(**params).fit(X, y)


def test_predict_checks_feature_count_and_fit(fitted):
    model, X, y = fitted
    with pytest.raises(ValueError, match=r"X\[0\]: has 5 features; expected 3"):
        model.predict([np.ones((2, 5))])
    with pytest.raises(ValueError, match="finite"):
        model.predict([np.full((2, 3), np.nan)])
    with pytest.raises(ValueError, match="empty"):
        model.predict([np.ones((0, 3))])
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        StructuredPerceptronTagger().predict(X)


def test_continuing_with_other_features_or_labels(fitted):
    model, X, y = fitted
    if hasattr(model, "partial_fit"):
        with pytest.raises(ValueError, match="features"):
            model.partial_fit([np.ones((2, 5))], [["a", "b"]])
        with pytest.raises(ValueError, match="not seen"):
            model.partial_fit(X[:1], [["a", "zz"]])
    elif "warm_start" in model.get_params():  # the dual learners, the CRF: warm_start
        model.set_params(warm_start=True)
        with pytest.raises(ValueError, match="features"):
            model.fit([np.ones((2, 5))] + X[1:], y)
        with pytest.raises(ValueError, match="not seen"):
            model.fit(X, [["a", "zz"]] + y[1:])
    if "average" in model.get_params():
        model.set_params(warm_start=True, average=not model.average)
        with pytest.raises(ValueError, match="average"):
            model.fit(X, y)


def test_malformed_sparse_rows_rejected(fitted):
    bad = sp.csr_matrix((np.array([1.0]), np.array([0]), np.array([0, 1])), shape=(1, 2))
    bad.indices[0] = 7  # out of bounds column index, as a corrupted matrix could have
    model, X, y = fitted
    with pytest.raises(ValueError):
        model.predict([bad])


def test_score_checks_y(fitted):
    model, X, y = fitted
    with pytest.raises(ValueError, match="labels but"):
        model.score(X, [t[:-1] for t in y])
    with pytest.raises(ValueError, match="predict_kbest|k must"):
        model.predict_kbest(X, k=0)


@pytest.mark.parametrize("cls", [c for name, c in TAGGERS.items() if name != "crf"])
def test_a_bag_given_to_a_tagger_without_a_bag_fit_says_what_does_fit_on_bags(cls):
    """Only CRFTagger (and ParameterMixingTagger, the vectorizers, a Pipeline
    of them) fit on dask bags; the others say a list is needed and what does
    fit on bags, before anything is computed (no client needed)."""
    db = pytest.importorskip("dask.bag")
    X, y = data()
    with pytest.raises(TypeError, match=r"got a dask Bag, where a list is needed .*CRFTagger, "
                                        "ParameterMixingTagger"):
        make(cls, max_iter=1).fit(db.from_sequence(X, npartitions=2),
                                  db.from_sequence(y, npartitions=2))


def test_what_reads_an_iterable_still_takes_a_bag():
    """Functions that take any iterable (read once) compute a bag as they
    read it, as before."""
    db = pytest.importorskip("dask.bag")
    from sklstruct.metrics import token_accuracy_score

    y = [["a", "b"], ["b"]]
    assert token_accuracy_score(db.from_sequence(y, npartitions=2), y) == 1.0
