"""SequenceVectorizer on Dask bags: the vocabulary counted on the workers,
the features computed where the sentences are.

``fit`` runs fit's own counting pass (:func:`._featurize.count_names`) on
every partition, where it lies, and adds the counts in a tree on the
workers (``Bag.reduction``); the client receives the feature names with
their counts only, and keeps those ``min_freq`` keeps, in sorted order:
the vocabulary of a serial fit on the same sentences, whatever the
partitions.  ``transform`` maps the partitions to their per-sentence
feature matrices on the workers (a bag, lazy), the fitted vectorizer sent
to each worker once.
"""
from collections import Counter

import numpy as np

from .._dask import active_client, map_bag
from ._featurize import count_names
from ._tokens import _Corpus
from .clusters import BrownClusters


def _partition_counts(sentences, vectorizer):
    """(instance names, Counter of feature names) of one partition; None
    for an empty one."""
    sentences = list(sentences)
    if not sentences:
        return None
    corpus = _Corpus(sentences, vectorizer.boundary)
    instances = vectorizer._instances_of(corpus)
    names = tuple(name for name, _ in instances)
    if vectorizer.hashing:
        return names, Counter()
    table, counts, _ = count_names(corpus.program(instances))
    return names, Counter(dict(zip(table.names(), counts.tolist())))


def _add_counts(parts):
    """The counts of several partitions (or of partial sums) added."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    names, total = parts[0][0], Counter()
    for kept, counts in parts:
        if kept != names:
            raise ValueError(
                "X: the partitions' tokens do not have the same columns (the templates "
                f"kept for one are {list(names)}, for another {list(kept)}); give every "
                "sentence the same columns")
        total.update(counts)
    return names, total


def fit_bag(vectorizer, X):
    """Fit ``vectorizer`` (a SequenceVectorizer) on the bag of sentences ``X``."""
    active_client("SequenceVectorizer.fit")
    if isinstance(vectorizer.clusters, BrownClusters) \
            and not hasattr(vectorizer.clusters, "clusters_"):
        raise ValueError("clusters is an unfitted BrownClusters: on a dask bag, fit it "
                         "first (on the words of a sample that fits in memory) and pass "
                         "the fitted one, or its clusters_")
    # the counting needs the parameters only: a fitted vectorizer (a refit)
    # would put its whole vocabulary into the graph sent to the scheduler
    params = type(vectorizer)(**vectorizer.get_params(deep=False))
    merged = X.reduction(lambda part: _partition_counts(part, params), _add_counts,
                         split_every=8).compute()
    if merged is None:
        raise ValueError("X: the bag holds no sentence")
    names, counts = set(merged[0]), merged[1]
    instances = [inst for inst in vectorizer._prepare() if inst[0] in names]
    vectorizer.clusters_ = vectorizer._resolve_clusters(instances)
    if vectorizer.hashing:
        vectorizer.__dict__.pop("vocabulary_", None)
        vectorizer._set_templates(instances, vectorizer.n_features, None)
        return vectorizer
    # (the lookups are built from vocabulary_ when first needed)
    vectorizer._set_vocabulary(list(counts), np.fromiter(counts.values(), dtype=np.int64,
                                                         count=len(counts)))
    vectorizer._set_templates(instances, len(vectorizer.vocabulary_), None)
    return vectorizer


def transform_bag(vectorizer, X):
    """The bag of per-sentence feature matrices of the bag ``X``."""
    return map_bag(vectorizer, X, "transform")
