"""The clusterN atoms of SequenceVectorizer and feature_set(clusters=...)
(the equivalence with the oracle is in test_featurize.py)."""
import pickle

import pytest

from sklstruct import BrownClusters
from sklstruct.features import SequenceVectorizer, feature_set

X = [[("the", "DT"), ("cat", "NN")], [("a", "DT"), ("dog", "NN"), ("ran", "VBD")]]
PATHS = {"the": "0110", "cat": "10", "DT": "1"}


def test_prefixes_columns_offsets_and_words_without_a_path():
    vec = SequenceVectorizer(["cluster2", "cluster1(pos)[-1]|word"], clusters=PATHS).fit(X)
    assert vec.token_features(X) == [
        [["cluster2=01", "cluster1(pos)[-1]|word=__BOS__|the"],
         ["cluster2=10", "cluster1(pos)[-1]|word=1|cat"]],
        # no path: no feature (a, dog, ran; the pos NN)
        [["cluster1(pos)[-1]|word=__BOS__|a"], ["cluster1(pos)[-1]|word=1|dog"], []],
    ]


def test_brown_clusters_fitted_or_cloned_and_fitted_on_the_training_words():
    brown = BrownClusters(n_clusters=2)
    vec = SequenceVectorizer(["cluster1"], clusters=brown).fit(X)
    assert not hasattr(brown, "clusters_")          # a clone was fitted
    assert set(vec.clusters_) == {"the", "cat", "a", "dog", "ran"}
    fitted = BrownClusters(n_clusters=2).fit(X)
    assert SequenceVectorizer(["cluster1"], clusters=fitted).fit(X).clusters_ == fitted.clusters_


def test_pickle_keeps_the_mapping():
    vec = SequenceVectorizer(["cluster3"], clusters=PATHS).fit(X)
    back = pickle.loads(pickle.dumps(vec))
    assert back.clusters_ == PATHS
    assert (back.transform(X).matrix != vec.transform(X).matrix).nnz == 0


@pytest.mark.parametrize("clusters, error, match", [
    ({"the": "012"}, ValueError, "path of 'the'"),
    ({"the": 101}, ValueError, "path of 'the'"),
    ({1: "0"}, TypeError, "key must be a word"),
    (["0"], TypeError, "clusters must be"),
])
def test_bad_clusters(clusters, error, match):
    with pytest.raises(error, match=match):
        SequenceVectorizer(["word"], clusters=clusters).fit(X)


def test_cluster_atom_needs_clusters():
    with pytest.raises(ValueError, match="need clusters"):
        SequenceVectorizer(["cluster4"]).fit(X)


def test_feature_set_adds_the_cluster_templates():
    base = feature_set("chunking").fit(X)
    vec = feature_set("chunking", clusters=PATHS).fit(X)
    added = [t for t in vec.templates_ if t not in base.templates_]
    assert added == [f"cluster{n}{o}" for n in (4, 6, 10, 20) for o in ("[-1]", "", "[+1]")]
    assert "cluster4=0110" in vec.token_features(X)[0][0]


def test_feature_set_with_a_number_learns_brown_clusters_of_the_training_words():
    from sklstruct.features.presets import CLUSTER_MIN_COUNT
    corpus = [["the", "cat", "ran"], ["a", "dog", "ran"], ["the", "dog", "sat"],
              ["a", "cat", "sat"]] * 3 + [["one", "rare", "word"]]
    vec = feature_set("S2", clusters=3).fit(corpus)
    brown = BrownClusters(n_clusters=3, min_count=CLUSTER_MIN_COUNT).fit(corpus)
    assert vec.clusters_ == brown.clusters_
    assert "rare" not in vec.clusters_                     # seen fewer than min_count times
    by_hand = feature_set("S2", clusters=brown).fit(corpus)
    assert vec.token_features(corpus) == by_hand.token_features(corpus)


@pytest.mark.parametrize("clusters, error", [(0, ValueError), (-5, ValueError),
                                             (True, TypeError)])
def test_feature_set_refuses_a_bad_number_of_clusters(clusters, error):
    with pytest.raises(error, match="clusters"):
        feature_set("S2", clusters=clusters)
