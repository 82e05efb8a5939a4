"""Real data: CoNLL-2000 chunking on a subset, with an F1 floor (full runs: benchmarks/)."""
import numpy as np
import pytest
from _data import require_data

from sklstruct import LaRankTagger, SDMTagger, StructuredPerceptronTagger, feature_set
from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_report


@pytest.fixture(scope="module")
def conll2000_subset():
    X_train, y_train = read_conll(require_data("conll2000", "train.txt"))
    X_test, y_test = read_conll(require_data("conll2000", "test.txt"))
    return X_train[:2000], y_train[:2000], X_test[:600], y_test[:600]


@pytest.mark.parametrize("k, floor", [(1, 0.90), (3, 0.90)])
def test_conll2000_subset_f1_floor(conll2000_subset, k, floor):
    X_train, y_train, X_test, y_test = conll2000_subset
    vec = feature_set("chunking")
    model = StructuredPerceptronTagger(k=k, max_iter=5, random_state=0)
    model.fit(vec.fit_transform(X_train), y_train)
    report = chunk_report(y_test, model.predict(vec.transform(X_test)))
    assert report.f1 >= floor, str(report)
    # the IOB1 corpus is scored by conlleval's rules: every chunk type is present
    assert {"NP", "VP", "PP"} <= set(report.per_type)
    # averaging helps on real data, as it should
    plain = StructuredPerceptronTagger(k=k, max_iter=5, random_state=0, average=False)
    plain.fit(vec.transform(X_train), y_train)
    assert chunk_report(y_test, plain.predict(vec.transform(X_test))).f1 < report.f1


def test_conll2002_spanish_ner_subset():
    X_train, y_train = read_conll(require_data("conll2002", "esp.train"))
    X_test, y_test = read_conll(require_data("conll2002", "esp.testa"))
    vec = feature_set("S3", window=1)
    model = StructuredPerceptronTagger(max_iter=5, random_state=0)
    model.fit(vec.fit_transform(X_train[:3000]), y_train[:3000])
    report = chunk_report(y_test[:800], model.predict(vec.transform(X_test[:800])))
    assert report.f1 >= 0.60, str(report)
    assert set(report.per_type) == {"PER", "LOC", "ORG", "MISC"}


@pytest.mark.parametrize("model, floor", [
    (SDMTagger(k=2, C=0.1, max_iter=3, random_state=0), 0.90),
    (LaRankTagger(k=2, n_reprocess=2, C=0.1, random_state=0), 0.89),
], ids=["sdm", "larank"])
def test_conll2000_subset_dual_learners(conll2000_subset, model, floor):
    X_train, y_train, X_test, y_test = conll2000_subset
    vec = feature_set("chunking")
    model.fit(vec.fit_transform(X_train), y_train)
    report = chunk_report(y_test, model.predict(vec.transform(X_test)))
    assert report.f1 >= floor, str(report)
    assert 0 < model.n_support_ <= model._dual.n_sequences


@pytest.mark.parametrize("name", ["swvp", "swvm"])
def test_conll2000_subset_weighted_violations(conll2000_subset, name):
    from sklstruct import SWVMTagger, SWVPTagger
    X_train, y_train, X_test, y_test = conll2000_subset
    vec = feature_set("chunking")
    model = {"swvp": SWVPTagger(max_iter=5, random_state=0),
             "swvm": SWVMTagger(k=3, C=0.1, max_iter=5, random_state=0)}[name]
    model.fit(vec.fit_transform(X_train), y_train)
    report = chunk_report(y_test, model.predict(vec.transform(X_test)))
    assert report.f1 >= 0.90, str(report)


def test_conll2000_subset_crf(conll2000_subset):
    """The CRF (log loss, L-BFGS) on the subset: an F1 floor like the perceptron's."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sklstruct import CRFTagger

    X_train, y_train, X_test, y_test = conll2000_subset
    vec = feature_set("chunking")
    model = CRFTagger(C=10.0, max_iter=40, n_jobs=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(vec.fit_transform(X_train), y_train)
    report = chunk_report(y_test, model.predict(vec.transform(X_test)))
    assert report.f1 >= 0.90, str(report)
    marginals = model.predict_marginals(vec.transform(X_test[:50]))
    np.testing.assert_allclose(np.concatenate(marginals).sum(axis=1), 1.0)


@pytest.mark.parametrize("params", [dict(), dict(solver="smo", max_iter=4),
                                    dict(solver="working_set", max_iter=4)],
                         ids=["sgd", "smo", "working_set"])
def test_conll2000_subset_m3n(conll2000_subset, params):
    """M3NTagger with its default SMD steps, its structured SMO baseline and
    the working-set dual solver: an F1
    floor, and the objective J of eq. 4 falls pass by pass at the start."""
    from sklstruct import M3NTagger

    X_train, y_train, X_test, y_test = conll2000_subset
    vec = feature_set("chunking")
    model = M3NTagger(**{"max_iter": 5, "random_state": 0, **params})
    model.fit(vec.fit_transform(X_train), y_train)
    report = chunk_report(y_test, model.predict(vec.transform(X_test)))
    assert report.f1 >= 0.90, str(report)
    assert np.all(np.diff(model.objective_curve_[:3]) < 0)
