"""SequenceVectorizer on Dask bags (a LocalCluster of two worker processes):
the vocabulary of a serial fit, the features of a serial transform, the
client never given the sentences."""
import numpy as np
import pytest

from sklstruct import SequenceVectorizer, feature_set
from sklstruct.chain import StackedSentences
from sklstruct.datasets import make_chunking_corpus

pytest.importorskip("distributed")
import dask.bag as db  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def sentences():
    X, _ = make_chunking_corpus(120, random_state=4)
    return X


@pytest.mark.parametrize("make", [
    lambda: SequenceVectorizer(("word", "pos", "suffix2", "word[-1]|word"), window=1),
    lambda: SequenceVectorizer(("word", "pos", "shape"), window=1, min_freq=2),
    lambda: SequenceVectorizer(("word", "pos"), hashing=True, n_features=2 ** 12),
    lambda: feature_set("chunking"),
], ids=["templates", "min_freq", "hashing", "preset"])
def test_the_vocabulary_and_features_of_a_serial_fit(client, sentences, make):
    serial = make().fit(sentences)
    bag = db.from_sequence(sentences, npartitions=5)
    on_bag = make().fit(bag)
    assert on_bag.templates_ == serial.templates_
    assert getattr(on_bag, "vocabulary_", None) == getattr(serial, "vocabulary_", None)
    expected = serial.transform(sentences)
    for Z in (on_bag.transform(bag), make().fit_transform(bag)):
        # a partition stays one stacked matrix (not a matrix per sentence)
        assert isinstance(Z.to_delayed()[0].compute(), StackedSentences)
        got = Z.compute()
        assert len(got) == len(sentences)
        for a, b in zip(got, expected):
            assert (a != b).nnz == 0 and a.shape == b.shape


def test_partitions_with_different_columns_are_refused(client, sentences):
    words = [[t[0] for t in s] for s in sentences[:10]]
    bag = db.from_sequence(list(sentences[:10]) + words, npartitions=2)
    with pytest.raises(ValueError, match="same columns"):
        feature_set("chunking").fit(bag)


def test_an_empty_bag_and_empty_partitions(client, sentences):
    with pytest.raises(ValueError, match="no sentence"):
        SequenceVectorizer().fit(db.from_sequence([], npartitions=1))
    bag = db.from_sequence(sentences[:3], npartitions=3).filter(lambda s: len(s) > 0)
    vec = SequenceVectorizer(("word",)).fit(bag.repartition(5))
    assert vec.vocabulary_ == SequenceVectorizer(("word",)).fit(sentences[:3]).vocabulary_


def test_a_pipeline_fits_and_predicts_on_bags(client, sentences):
    """Pipeline(vectorizer, CRFTagger) fitted on bags is the pipeline fitted
    on lists (to rounding); predict on a bag is a bag, computed on the
    workers; the fitted pipeline predicts on lists as any other."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.pipeline import make_pipeline

    from sklstruct import CRFTagger
    from sklstruct.datasets import make_chunking_corpus

    X, y = make_chunking_corpus(120, random_state=4)
    make = lambda: make_pipeline(SequenceVectorizer(("word", "pos"), window=1),
                                 CRFTagger(max_iter=15))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        serial = make().fit(X, y)
        bags = make().fit(db.from_sequence(X, npartitions=4), db.from_sequence(y, npartitions=4))
    np.testing.assert_allclose(bags[-1].coef_, serial[-1].coef_, rtol=1e-6, atol=1e-8)
    predicted = bags.predict(db.from_sequence(X, npartitions=3))
    assert isinstance(predicted, db.Bag)
    for a, b in zip(predicted.compute(), serial.predict(X)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(bags.predict(X), serial.predict(X)):
        np.testing.assert_array_equal(a, b)


def test_a_refit_sends_no_vocabulary_in_the_graph(client, sentences):
    """Fitting an already fitted vectorizer on a bag sends the parameters to
    count with, not the fitted vocabulary (which a large corpus's makes a
    graph of megabytes: Dask warns, and sends it to every task)."""
    import warnings

    import dask

    words = [[(f"w{i}_{j}", "NN") for j in range(20)] for i in range(300)]
    bag = db.from_sequence(words, npartitions=3)
    vectorizer = SequenceVectorizer(("word", "word[-1]|word"), window=1).fit(bag)
    assert len(vectorizer.vocabulary_) > 10_000
    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "100kB"}), \
            warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        refit = vectorizer.fit(bag)
    assert refit.vocabulary_ == SequenceVectorizer(("word", "word[-1]|word"),
                                                   window=1).fit(words).vocabulary_
