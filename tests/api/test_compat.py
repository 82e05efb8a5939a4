"""sklstruct.compat: sklearn-crfsuite's CRF (the behaviours its own test
suite checks, written here anew), its weights against CRFsuite's, and
from_crfsuite.  benchmarks/run_sklearn_crfsuite_suite.py runs
sklearn-crfsuite's suite itself against it."""
import inspect
import os
import pickle
from itertools import product

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_val_score

from sklstruct.compat import CRF, from_crfsuite

ALGORITHMS = ["lbfgs", "l2sgd", "ap", "pa", "arow"]

#: sklearn-crfsuite's CRF.__init__ (0.5.0): names and defaults, in order.
SIGNATURE = ["algorithm", "min_freq", "all_possible_states", "all_possible_transitions", "c1",
             "c2", "max_iterations", "num_memories", "epsilon", "period", "delta",
             "linesearch", "max_linesearch", "calibration_eta", "calibration_rate",
             "calibration_samples", "calibration_candidates", "calibration_max_trials",
             "pa_type", "c", "error_sensitive", "averaging", "variance", "gamma", "verbose",
             "model_filename", "keep_tempfiles", "trainer_cls"]


@pytest.fixture
def weather():
    """A ten-token sentence of weather words (numeric, string and bytes
    values, an empty token) and its labels."""
    x = [{"walk": 1, "shop": 0.5}, {"walk": 1}, {"walk": 1, "clean": 0.5},
         {"shop": 0.5, "clean": 0.5}, {"walk": 0.5, "clean": 1}, {"clean": 1, "shop": 0.1},
         {"walk": 1, "shop": 0.5}, {}, {"clean": 1},
         {"weather": "rain".encode(), "clean": 1}]
    y = ["sunny"] * 3 + ["rainy"] * 3 + ["sunny"] * 2 + ["rainy"] * 2
    return x, y


def test_signature_and_defaults_are_sklearn_crfsuites():
    params = inspect.signature(CRF.__init__).parameters
    assert list(params)[1:] == SIGNATURE
    defaults = {name: p.default for name, p in params.items() if name != "self"}
    assert defaults == {**dict.fromkeys(SIGNATURE), "verbose": False, "keep_tempfiles": False}
    crf = CRF("pa", pa_type=2)
    assert clone(crf).get_params() == crf.get_params()


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_fit_predict_score_pickle(weather, algorithm):
    x, y = weather
    crf = CRF(algorithm).fit([x], [y])
    pred = crf.predict([x])
    assert isinstance(pred, np.ndarray) and pred.dtype == object
    single = crf.predict_single(x)
    assert isinstance(single, list) and all(isinstance(t, str) for t in single)
    assert list(pred[0]) == single
    expected = 1.0 if algorithm != "ap" else 0.8
    assert crf.score([x], [y]) >= expected
    if algorithm != "ap":
        assert (pred == y).all() and single == y
    again = pickle.loads(pickle.dumps(crf))
    assert again.algorithm == algorithm
    assert again.predict_single(x) == single
    assert crf.training_log_.iterations and crf.training_log_.last_iteration["num"] >= 1


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_marginals_and_tagger(weather, algorithm):
    x, y = weather
    crf = CRF(algorithm).fit([x], [y])
    marginals = crf.predict_marginals([x])
    assert len(marginals) == 1 and len(marginals[0]) == len(x)
    labels = crf.tagger_.labels()
    assert labels == ["sunny", "rainy"]           # CRFsuite's order: first appearance
    for m in marginals[0]:
        assert set(m) == set(labels) and abs(sum(m.values()) - 1) < 1e-9
    tagger = crf.tagger_
    tagger.set(x)
    assert tagger.marginal("rainy", 3) == pytest.approx(marginals[0][3]["rainy"])
    assert tagger.tag() == crf.predict_single(x)
    # P(y | x) of every labelling of a 4-token prefix sums to 1
    tagger.set(x[:4])
    total = sum(tagger.probability(list(seq)) for seq in product(labels, repeat=4))
    assert total == pytest.approx(1.0)
    info = tagger.info()
    assert set(info.labels) == set(labels) and info.state_features == crf.state_features_


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_predict_before_fit_raises(weather, algorithm):
    with pytest.raises(NotFittedError):
        CRF(algorithm).predict([weather[0]])


@pytest.mark.parametrize("algorithm", ["lbfgs", "pa"])
def test_verbose_and_holdout(weather, algorithm, capsys):
    x, y = weather
    crf = CRF(algorithm, verbose=True).fit([x, x], [y, y], X_dev=[x], y_dev=[y])
    out = capsys.readouterr().out
    assert "Holdout" in out and ("Iteration" in out or "Epoch" in out)
    last = crf.training_log_.last_iteration
    assert last["item_accuracy_float"] == 1.0 and last["instance_accuracy_float"] == 1.0
    with pytest.raises(ValueError, match="both X_dev and y_dev"):
        crf.fit([x], [y], [x])


def test_model_filename(weather, tmp_path):
    x, y = weather
    path = str(tmp_path / "model.bin")
    crf = CRF(model_filename=path).fit([x], [y])
    assert os.path.exists(path)
    loaded = CRF(model_filename=path)
    assert loaded.score([x], [y]) == 1.0
    assert pickle.loads(pickle.dumps(crf)).score([x], [y]) == 1.0
    assert CRF(model_filename=str(tmp_path / "absent")).tagger_ is None
    # the file is sklstruct's pickle-free format; a pickle there is refused
    np.load(path, allow_pickle=False).close()
    bad = tmp_path / "pickled.bin"
    bad.write_bytes(pickle.dumps(crf))
    with pytest.raises(ValueError, match="neither a CRFsuite model nor one written"):
        CRF(model_filename=str(bad)).predict([x])


def test_cross_validation(weather):
    x, y = weather
    scores = cross_val_score(CRF(), [x] * 10, [y] * 10, cv=5, n_jobs=2)
    assert scores.mean() == 1.0


def test_attributes(weather):
    x, y = weather
    crf = CRF()
    for name in ("tagger_", "size_", "classes_", "num_attributes_", "attributes_",
                 "state_features_", "transition_features_", "training_log_"):
        assert getattr(crf, name) is None
    crf.fit([x] * 20, [y] * 20)
    assert crf.size_ > 1000
    assert crf.classes_ == ["sunny", "rainy"]
    assert crf.num_attributes_ == len(crf.attributes_) > 0
    # a bytes value is decoded; a string value is named key:value, as CRFsuite names it
    assert set(crf.attributes_) == {"walk", "shop", "clean", "weather:rain"}
    assert all(isinstance(w, float) and w != 0 for w in crf.state_features_.values())
    assert {a for a, _ in crf.state_features_} <= set(crf.attributes_)
    assert {label for _, label in crf.state_features_} <= set(crf.classes_)
    assert crf.transition_features_ and all(
        a in crf.classes_ and b in crf.classes_ for a, b in crf.transition_features_)


def test_parameters_the_algorithm_does_not_take(weather):
    x, y = weather
    with pytest.raises(ValueError, match="c1: not a parameter of algorithm='ap'"):
        CRF("ap", c1=0.1).fit([x], [y])
    with pytest.raises(ValueError, match="pa_type"):
        CRF("pa", pa_type=3).fit([x], [y])
    with pytest.raises(ValueError, match="algorithm"):
        CRF("sgd").fit([x], [y])
    with pytest.raises(ValueError, match="trainer_cls"):
        CRF(trainer_cls=object).fit([x], [y])
    with pytest.raises(ValueError, match="UTF-8"):
        CRF().fit([[{"a": b"\xff"}]], [["x"]])


def test_bytes_labels_and_ragged_sentences(weather):
    x, y = weather
    crf = CRF().fit([x, x[:4]], [[t.encode() for t in y], [t.encode() for t in y[:4]]])
    pred = crf.predict([x, x[:4]])
    assert pred.shape == (2,) and list(pred[1]) == y[:4]


# -- against CRFsuite ------------------------------------------------------------------------
def random_corpus(n_sentences, seed):
    rng = np.random.RandomState(seed)
    X, Y = [], []
    for _ in range(n_sentences):
        xs, ys = [], []
        for t in range(rng.randint(3, 9)):
            w = rng.randint(12)
            xs.append({"w": f"w{w}", "suffix": f"s{w % 4}", "bias": 1.0, "v": float(rng.rand())})
            ys.append("ABC"[(w + (t > 2)) % 3])
        X.append(xs)
        Y.append(ys)
    return X, Y


def crfsuite_model(X, Y, algorithm, params, path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    for x, y in zip(X, Y):
        trainer.append(x, y)
    trainer.set_params(params)
    trainer.train(str(path))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(path))
    return tagger


def max_difference(a, b):
    return max(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


@pytest.mark.parametrize("c1, c2, extra", [(0.5, 0.1, {}), (0.0, 0.3, {}),
                                           (0.2, 0.05, {"min_freq": 2,
                                                        "all_possible_transitions": True})])
def test_lbfgs_weights_are_crfsuites(tmp_path, c1, c2, extra):
    """Run to convergence, OWL-QN (c1 > 0) and L-BFGS reach CRFsuite's
    weights on the same features (CRFsuite writes 6 significant digits)."""
    X, Y = random_corpus(40, 0)
    names = {"min_freq": "feature.minfreq",
             "all_possible_transitions": "feature.possible_transitions"}
    params = {"c1": c1, "c2": c2, "max_iterations": 1000, "epsilon": 1e-9, "delta": 1e-12,
              **{names[k]: v for k, v in extra.items()}}
    info = crfsuite_model(X, Y, "lbfgs", params, tmp_path / "m.crfsuite").info()
    crf = CRF(c1=c1, c2=c2, epsilon=1e-9, delta=1e-12, **extra).fit(X, Y)
    assert set(crf.state_features_) <= set(info.state_features) | {
        k for k, v in crf.state_features_.items() if abs(v) < 1e-5}
    assert max_difference(crf.state_features_, info.state_features) < 1e-4
    assert max_difference(crf.transition_features_, info.transitions) < 1e-4
    if c1 > 0:   # L1 zeroes weights
        assert len(crf.state_features_) < len(CRF(c1=0, c2=c2).fit(X, Y).state_features_)


@pytest.mark.parametrize("algorithm, params", [
    ("ap", {}), ("pa", {"pa_type": 0}), ("pa", {"pa_type": 1, "c": 0.05}),
    ("pa", {"pa_type": 2, "averaging": False, "error_sensitive": False}),
    ("arow", {"variance": 2.0, "gamma": 0.5})])
def test_online_weights_are_crfsuites(tmp_path, algorithm, params):
    """On one training sentence (CRFsuite's shuffling, by the C library's
    rand(), cannot be reproduced; one sentence makes the order moot) the
    online updates give CRFsuite's weights."""
    X, Y = random_corpus(1, 3)
    X, Y = [X[0] * 2], [Y[0] * 2]
    native = {{"pa_type": "type"}.get(k, k): v for k, v in params.items()}
    info = crfsuite_model(X, Y, algorithm, {**native, "max_iterations": 7},
                          tmp_path / "m.crfsuite").info()
    crf = CRF(algorithm, max_iterations=7, **params).fit(X, Y)
    assert max_difference(crf.state_features_, info.state_features) < 1e-5
    assert max_difference(crf.transition_features_, info.transitions) < 1e-5


def test_from_crfsuite_predicts_crfsuites_labels(tmp_path):
    X, Y = random_corpus(60, 1)
    X_test, _ = random_corpus(30, 2)
    # a key holding ':' and a value holding ':' and '=': CRFsuite's names are ambiguous
    X = [[{**t, "a:b": "c:d=e"} for t in x] for x in X]
    X_test = [[{**t, "a:b": "c:d=e"} for t in x] for x in X_test]
    path = tmp_path / "m.crfsuite"
    tagger = crfsuite_model(X, Y, "lbfgs", {"c1": 0.1, "c2": 0.01}, path)
    crf = from_crfsuite(path)
    assert [crf.predict_single(x) for x in X_test] == [tagger.tag(x) for x in X_test]
    assert crf.classes_ == tagger.labels()
    tagger.set(X_test[0])
    marginals = crf.predict_marginals_single(X_test[0])
    for t, m in enumerate(marginals):
        for label, p in m.items():
            assert p == pytest.approx(tagger.marginal(label, t), abs=1e-5)
    assert crf.state_features_ == pytest.approx(tagger.info().state_features)
    # a CRF constructed with the name of a CRFsuite file reads it
    assert CRF(model_filename=str(path)).predict_single(X_test[1]) == tagger.tag(X_test[1])
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"lCRFnot a model")
    with pytest.raises(ValueError, match="CRFsuite"):
        from_crfsuite(bad)
