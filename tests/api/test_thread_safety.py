"""The thread-safety contract (:mod:`sklstruct._publish`), for every registered
estimator and the vectorizers: threads predicting while another thread
refits the same estimator and changes its parameters never crash and never
mix two models; each result is the serial result of the model before a
fit or of the model after it."""
import copy
import sys
import threading

import numpy as np
import pytest
from sklearn.base import clone

from sklstruct import (DictSequenceVectorizer, M3NTagger, SequenceVectorizer,
                       StructuredPerceptronTagger, TokenTransformer)
from sklstruct._registry import ESTIMATORS, PARSERS
from sklstruct.parsing import Tree
from _oracles import make, outcome

# ConvergenceWarning is expected here: short fits: the models only need to exist
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

# two training sets of the same width whose models differ in labels and weights
_RNG = np.random.default_rng(0)
X = [_RNG.normal(size=(3 + i % 4, 5)) for i in range(12)]
Y_A = [np.where(x[:, 0] > 0, "a", "b") for x in X]
Y_B = [np.array(["b", "c", "d"])[(np.argmax(x[:, 1:4], axis=1))] for x in X]

TOY_A = ["(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
         "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))",
         "(S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog))))"]
TOY_B = ["(S (VP (VB see) (NP (DT the) (NN dog))) (. .))",
         "(FRAG (NP (DT a) (NN cat)) (. .))",
         "(S (NP (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog))))"]
WORDS = [["the", "dog", "sees", "a", "cat"], ["a", "cat", "."], ["dog", "barks"]]

SENTENCES_A = [["the", "dog"], ["a", "cat", "sleeps"]]
SENTENCES_B = [["Big", "dogs", "bark", "!"], ["cats", "sleep"]]


def _trees(strings):
    trees = [Tree.fromstring(s) for s in strings]
    return [t.leaves() for t in trees], trees


def _tagger_calls(model):
    calls = {"predict": lambda m: m.predict(X),
             "kbest": lambda m: m.predict_kbest(X[:4], k=2),
             "score": lambda m: m.score(X, Y_A)}
    if hasattr(model, "predict_marginals"):
        calls["marginals"] = lambda m: m.predict_marginals(X[:4])
        calls["confidence"] = lambda m: m.predict_confidence(X[:4])
    return calls


def cases():
    """(name, estimator, fit A, fit B, {call name: call}) of every estimator."""
    for name in sorted(ESTIMATORS):
        cls = ESTIMATORS[name]
        if name in PARSERS:
            est = make(cls, max_iter=3)
            (xa, ta), (xb, tb) = _trees(TOY_A), _trees(TOY_B)
            yield (name, est, lambda m, xa=xa, ta=ta: m.fit(xa, ta),
                   lambda m, xb=xb, tb=tb: m.fit(xb, tb),
                   {"predict": lambda m: m.predict(WORDS)})
            continue
        est = make(cls, max_iter=2, random_state=0)
        yield (name, est, lambda m: m.fit(X, Y_A), lambda m: m.fit(X, Y_B), _tagger_calls(est))
    est = M3NTagger(kernel="poly", max_iter=2, random_state=0)
    yield ("m3n-poly", est, lambda m: m.fit(X, Y_A), lambda m: m.fit(X, Y_B),
           _tagger_calls(est))
    yield ("SequenceVectorizer", SequenceVectorizer(["word", "shape"], window=1),
           lambda m: m.fit(SENTENCES_A), lambda m: m.fit(SENTENCES_B),
           {"transform": lambda m: m.transform(SENTENCES_A + SENTENCES_B)})
    dicts_a = [[{"w": w} for w in s] for s in SENTENCES_A]
    dicts_b = [[{"w": w, "n": len(w)} for w in s] for s in SENTENCES_B]
    yield ("DictSequenceVectorizer", DictSequenceVectorizer(),
           lambda m: m.fit(dicts_a), lambda m: m.fit(dicts_b),
           {"transform": lambda m: m.transform(dicts_a + dicts_b)})
    from sklearn.preprocessing import StandardScaler
    yield ("TokenTransformer", TokenTransformer(StandardScaler(with_mean=False)),
           lambda m: m.fit(X[:6]), lambda m: m.fit(X[6:]),
           {"transform": lambda m: m.transform(X)})
    from sklstruct import EmbeddingFeatures, SentenceFeatureUnion
    vec_rng = np.random.default_rng(1)
    vectors = {w: vec_rng.normal(size=4) for w in ("the", "dog", "a", "cat", "cats", "bark")}
    sentences = SENTENCES_A + SENTENCES_B
    yield ("EmbeddingFeatures", EmbeddingFeatures(vectors, kmeans=(2,), random_state=0),
           lambda m: m.set_params(window=0).fit(SENTENCES_A),
           lambda m: m.set_params(window=1).fit(SENTENCES_B),
           {"transform": lambda m: m.transform(sentences)})
    union = SentenceFeatureUnion([("words", SequenceVectorizer(["word"])),
                                  ("emb", EmbeddingFeatures(vectors))])
    yield ("SentenceFeatureUnion", union, lambda m: m.fit(SENTENCES_A),
           lambda m: m.fit(SENTENCES_B), {"transform": lambda m: m.transform(sentences)})


CASES = {case[0]: case for case in cases()}


@pytest.fixture
def fast_switching():
    # switch threads every few microseconds, so that predictions interleave
    # with every step of a fit
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.parametrize("name", sorted(CASES))
def test_predictions_during_refits_and_set_params_come_from_one_model(name, fast_switching):
    _, est, fit_a, fit_b, calls = CASES[name]
    est = clone(est)
    model_a, model_b = copy.deepcopy(fit_a(clone(est))), copy.deepcopy(fit_b(clone(est)))
    expected = {c: {outcome(call, model_a), outcome(call, model_b)}
                for c, call in calls.items()}
    fit_a(est)
    n_jobs = [p for p in ("n_jobs",) if p in est.get_params()]
    stop, seen, errors = threading.Event(), [], []

    def predict():
        while not stop.is_set():
            for c, call in calls.items():
                seen.append((c, outcome(call, est)))

    def refit():
        try:
            for i in range(6):
                (fit_b if i % 2 == 0 else fit_a)(est)
                if n_jobs:
                    est.set_params(n_jobs=2 if i % 2 else None)
        except BaseException as exc:        # reported below, not lost in the thread
            errors.append(exc)
        finally:
            stop.set()

    threads = [threading.Thread(target=predict) for _ in range(2)]
    threads.append(threading.Thread(target=refit))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen
    mixed = [(c, o[:200]) for c, o in seen if o not in expected[c]]
    assert not mixed, mixed
    # after the last refit (model A) the estimator predicts as model A, serially
    for c, call in calls.items():
        assert outcome(call, est) == outcome(call, model_a), c


def test_a_failed_fit_publishes_nothing_and_set_params_during_a_fit_stays():
    from sklstruct._publish import publishes

    class Probe(StructuredPerceptronTagger):
        @publishes
        def fit(self, X, y):
            outer.set_params(max_iter=7)    # another thread's set_params, meanwhile
            super().fit.__wrapped__(self, X, y)
            raise KeyboardInterrupt

    outer = Probe(max_iter=1, random_state=0)
    with pytest.raises(KeyboardInterrupt):
        outer.fit(X, Y_B)
    assert not hasattr(outer, "classes_") and outer.max_iter == 7


def test_set_params_during_a_fit_is_kept():
    from sklstruct._publish import publishes

    class Probe(StructuredPerceptronTagger):
        @publishes
        def fit(self, X, y):
            outer.set_params(verbose=1)
            return super().fit.__wrapped__(self, X, y)

    outer = Probe(max_iter=1, random_state=0)
    outer.fit(X, Y_A)
    assert outer.verbose == 1 and list(outer.classes_) == ["a", "b"]
