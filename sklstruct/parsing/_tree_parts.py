"""The training trees of :class:`~sklstruct.parsing.F1MaxMarginParser` as
the oracle of its cutting-plane solver: in this process
(:class:`TrainingTrees`), or cut into parts that stay on the workers of a
Dask cluster for the whole fit (:class:`TreePart`, :class:`PartedTrees`).

Each part builds its sentences' training data (features, gold
decompositions and their Psi) where it lives, once; at every cutting-plane
iteration it receives the weights and runs loss-augmented inference (eq. 3)
on its sentences, answering with what the solver needs of each: the
difference Psi(x_i, y_i*) - Psi(x_i, y) of the most violating tree, its
loss Delta and its violation.  The solver (on the client) never holds the
training data; it gets the same numbers as from the threads of one
process, so the model is the same, bit for bit.
"""
import numpy as np
from joblib import Parallel


class TrainingTrees:
    """The training trees of an :class:`F1MaxMarginParser` as the oracle of
    :class:`~sklstruct.qp.CuttingPlane`: an output ``y`` is the pair (Psi of
    the most violating tree, its Delta)."""

    def __init__(self, parser, data, parallel):
        self.parser = parser
        self.data = data
        self.parallel = parallel

    def most_violated(self, w):
        """Loss-augmented inference (eq. 3) on every sentence at ``w``."""
        parser = self.parser
        parser.coef_ = w
        parser._set_views()
        return [(None if psi is None else (psi, delta), value)
                for _, value, psi, delta in parser._violators(self.data, self.parallel)]

    def loss(self, i, y):
        return y[1]

    def feature_difference(self, i, y):
        return self.data["psi"][i] - y[0]


class TreePart:
    """Sentences ``tokens`` with their gold decompositions ``gold`` (and the
    word and span features ``feats``, ``spans`` fitted on the whole corpus)
    of ``parser``, resident on a worker."""

    def __init__(self, parser, tokens, gold, feats, spans):
        data = parser._training_data(tokens, gold, feats, spans)
        self.trees = TrainingTrees(parser, data, Parallel(n_jobs=1))

    def most_violated(self, w):
        """Per sentence ``((difference, delta) or None, violation)`` at ``w``."""
        trees = self.trees
        return [(None if y is None else (trees.feature_difference(i, y), trees.loss(i, y)), value)
                for i, (y, value) in enumerate(trees.most_violated(w))]


class PartedTrees:
    """The oracle of :class:`~sklstruct.qp.CuttingPlane` over resident
    :class:`TreePart` objects (``parts``, see :mod:`sklstruct._actors`): an
    output ``y`` is the pair (Psi difference, Delta) computed on a worker."""

    def __init__(self, parts):
        self.parts = parts

    def most_violated(self, w):
        found = self.parts.call("most_violated", [(w,)] * len(self.parts.actors))
        return [pair for part in found for pair in part]

    def loss(self, i, y):
        return y[1]

    def feature_difference(self, i, y):
        return y[0]


def tree_parts(n_sentences, n_parts, parser, tokens, gold, feats, spans):
    """The arguments of :class:`TreePart` for ``n_parts`` contiguous parts."""
    cuts = np.linspace(0, n_sentences, n_parts + 1).round().astype(int)
    cut = lambda seq, a, b: None if seq is None else seq[a:b]
    return [(parser, tokens[a:b], gold[a:b], cut(feats, a, b), cut(spans, a, b))
            for a, b in zip(cuts[:-1], cuts[1:]) if a < b]
