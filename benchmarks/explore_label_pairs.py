"""Development experiment: label-pair observation features on CoNLL-2000.

Issue 29's CoNLL-2000 target (>= 94.2 F1) is not met by the library's
first-order taggers (94.12 at best).  The feature-based chunkers of the
literature above it conjoin observation features with the label *pair*
``(y[t-1], y[t])`` as well as with ``y[t]`` (Sha & Pereira 2003, "Shallow
parsing with conditional random fields": 94.38).  The library's models have
no such features; this script measures, before any model change, what they
would give on development data only: a plain-NumPy CRF (log loss, the
library's L-BFGS and stopping rule, every (feature, label) weight learned:
``CRFTagger(all_possible_states=True)``) or averaged perceptron whose edge
score at token t is ``T[y[t-1], y[t]] + x_t . V[:, pair(y[t-1], y[t])]``
for the label pairs seen in training, ``V`` over a chosen set of columns.
With no pair columns it is the library's CRF with ``all_possible_states``
(the same development F1, 94.99).

The features are the benchmark's (``chunking-rich`` with its label features
and 500 Brown clusters of the training words, ``random_state=0``); the
development set is 1,000 training sentences held out (``--holdout last``,
as ``bench_features_accuracy.py --holdout 1000``, or ``first``).  The test
file is read only with ``--holdout none``: trained on the whole training
file, scored on test.txt (for a setting chosen on development data, once).

``--pairs``: ``none``; a comma-separated list of template names (the part of
a feature name before ``=``, e.g. ``pos,pos[-1]|pos``); or ``min:K``, every
column that fires on at least K training tokens.

Usage::

    python benchmarks/explore_label_pairs.py --pairs none
    python benchmarks/explore_label_pairs.py --pairs "bias,pos[-1],pos,pos[+1],pos[-1]|pos,pos|pos[+1]"
    python benchmarks/explore_label_pairs.py --pairs min:500 [--holdout first] [--learner perceptron --seed 1]

Prints one JSON line: the pair columns, the label pairs, iterations, seconds
and the development F1.  Slow (NumPy over sentences of equal length, about
5 s per objective evaluation, 270-290 iterations): a 20-30 minute run.
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
from common import DEFAULT_DATA
from scipy.special import logsumexp

from sklstruct.datasets import read_conll
from sklstruct.features import feature_set
from sklstruct.metrics import chunk_f1_score
from sklstruct.optimize import lbfgs


def dev_features(data, holdout):
    tokens, labels = read_conll(Path(data) / "conll2000" / "train.txt")
    if holdout == "none":
        tokens_dev, labels_dev = read_conll(Path(data) / "conll2000" / "test.txt")
        keep = slice(None)
    else:
        cut = slice(None, 1000) if holdout == "first" else slice(-1000, None)
        keep = slice(1000, None) if holdout == "first" else slice(None, -1000)
        tokens_dev, labels_dev = tokens[cut], labels[cut]
    vectorizer = feature_set("chunking-rich", clusters=500, label_dictionary=True,
                             gazetteer=True, random_state=0)
    X = vectorizer.fit_transform(tokens[keep], labels[keep]).matrix.tocsr()
    X_dev = vectorizer.transform(tokens_dev).matrix.tocsr()
    return X, labels[keep], X_dev, labels_dev, vectorizer.get_feature_names_out()


def pair_columns(spec, X, names):
    if spec == "none":
        return np.array([], dtype=int)
    if spec.startswith("min:"):
        return np.flatnonzero(np.diff(X.tocsc().indptr) >= int(spec[4:]))
    templates = np.array([n.split("__", 1)[-1].split("=", 1)[0] for n in names])
    return np.flatnonzero(np.isin(templates, spec.split(",")))


class PairChain:
    """Scores of a first-order chain whose edges also read observation
    features: theta = [W (F, L), T (L + 1, L) with the start row, V (Fp, P)]."""

    def __init__(self, labels, n_features, n_pair_features, gold):
        self.labels = labels
        L = self.L = len(labels)
        index = {label: i for i, label in enumerate(labels)}
        y = [np.array([index[v] for v in s]) for s in gold]
        self.y = np.concatenate(y)
        self.prev = np.concatenate([np.r_[L, s[:-1]] for s in y])   # L: the start
        pairs = sorted(set(zip(self.prev.tolist(), self.y.tolist())))
        self.P = len(pairs)
        self.flat = np.array([a * L + b for a, b in pairs])
        self.pid = np.full((L + 1, L), -1)
        self.pid[tuple(np.array(pairs).T)] = np.arange(self.P)
        self.sizes = (n_features * L, (L + 1) * L, n_pair_features * self.P)
        self.F, self.Fp = n_features, n_pair_features

    def unpack(self, theta):
        a, b = self.sizes[0], self.sizes[0] + self.sizes[1]
        return (theta[:a].reshape(self.F, self.L), theta[a:b].reshape(self.L + 1, self.L),
                theta[b:].reshape(self.Fp, self.P))

    def edges(self, T, Q):
        """(m, n, L + 1, L) edge scores of sentences whose pair scores are Q (m, n, P)."""
        A = np.broadcast_to(T, Q.shape[:2] + T.shape).copy()
        A.reshape(Q.shape[:2] + (-1,))[:, :, self.flat] += Q
        return A


def by_length(lengths):
    """[(n, token indices (m, n))] of the sentences of each length."""
    lengths = np.asarray(lengths)
    starts = np.r_[0, np.cumsum(lengths)[:-1]]
    return [(n, starts[lengths == n][:, None] + np.arange(n)) for n in np.unique(lengths)]


def crf_objective(chain, X, Xp, groups):
    L, P = chain.L, chain.P
    n = X.shape[0]
    gold_y = np.zeros((n, L))
    gold_y[np.arange(n), chain.y] = 1
    gold_p = np.zeros((n, P))
    gold_p[np.arange(n), chain.pid[chain.prev, chain.y]] = 1
    gold_t = np.zeros((L + 1, L))
    np.add.at(gold_t, (chain.prev, chain.y), 1)
    XT, XpT = X.T.tocsr(), Xp.T.tocsr()

    def fun(theta):
        W, T, V = chain.unpack(theta)
        E, Q = X @ W, Xp @ V
        mu, xi_p, g_t, f = np.zeros_like(E), np.zeros_like(Q), np.zeros_like(T), 0.0
        for m, idx in groups:
            e, A = E[idx], chain.edges(T, Q[idx])
            k = len(idx)
            alpha, beta = np.empty((k, m, L)), np.zeros((k, m, L))
            alpha[:, 0] = A[:, 0, L] + e[:, 0]
            for t in range(1, m):
                alpha[:, t] = logsumexp(alpha[:, t - 1, :, None] + A[:, t, :L], axis=1) + e[:, t]
            for t in range(m - 2, -1, -1):
                beta[:, t] = logsumexp(A[:, t + 1, :L] + (e[:, t + 1] + beta[:, t + 1])[:, None],
                                       axis=2)
            log_z = logsumexp(alpha[:, -1], axis=1)
            f += log_z.sum()
            mu[idx] = np.exp(alpha + beta - log_z[:, None, None])
            xi = np.zeros((k, m, L + 1, L))
            xi[:, 0, L] = mu[idx[:, 0]]
            xi[:, 1:, :L] = np.exp(alpha[:, :-1, :, None] + A[:, 1:, :L]
                                   + (e[:, 1:] + beta[:, 1:])[:, :, None] - log_z[:, None, None, None])
            g_t += xi.sum((0, 1))
            xi_p[idx] = xi.reshape(k, m, -1)[:, :, chain.flat]
        f -= (E * gold_y).sum() + (T * gold_t).sum() + (Q * gold_p).sum()
        g = np.concatenate([(XT @ (mu - gold_y)).ravel(), (g_t - gold_t).ravel(),
                            np.asarray(XpT @ (xi_p - gold_p)).ravel()])
        return f, g

    return fun


def viterbi(chain, theta, X, Xp, groups):
    W, T, V = chain.unpack(theta)
    E, Q, L = X @ W, Xp @ V, chain.L
    out = np.zeros(X.shape[0], dtype=int)
    for m, idx in groups:
        e, A = E[idx], chain.edges(T, Q[idx])
        k = len(idx)
        delta, back = A[:, 0, L] + e[:, 0], np.zeros((k, m, L), dtype=int)
        for t in range(1, m):
            s = delta[:, :, None] + A[:, t, :L] + e[:, t][:, None]
            back[:, t], delta = s.argmax(1), s.max(1)
        y = np.zeros((k, m), dtype=int)
        y[:, -1] = delta.argmax(1)
        for t in range(m - 1, 0, -1):
            y[:, t - 1] = back[np.arange(k), t, y[:, t]]
        out[idx] = y
    return out


def perceptron(chain, X, Xp, lengths, epochs, seed):
    """Averaged perceptron (Collins 2002) over the same scores, one sentence at a time."""
    theta, total = np.zeros(sum(chain.sizes)), np.zeros(sum(chain.sizes))
    starts = np.r_[0, np.cumsum(lengths)]
    rng, c = np.random.RandomState(seed), 1
    for _ in range(epochs):
        for i in rng.permutation(len(lengths)):
            rows = slice(starts[i], starts[i + 1])
            x, xp = X[rows], Xp[rows]
            pred = viterbi(chain, theta, x, xp, [(lengths[i], np.arange(lengths[i])[None])])
            gold = chain.y[rows]
            if not np.array_equal(pred, gold):
                for y, prev, sign in ((gold, chain.prev[rows], 1.0),
                                      (pred, np.r_[chain.L, pred[:-1]], -1.0)):
                    for target, scale in ((theta, sign), (total, sign * c)):
                        add_phi(chain, target, x, xp, y, prev, scale)
            c += 1
    return theta - total / c


def add_phi(chain, theta, X, Xp, y, prev, scale):
    """theta += scale * the joint feature vector of one sentence labelled y."""
    W, T, V = chain.unpack(theta)         # (views of theta)
    coo = X.tocoo()
    np.add.at(W, (coo.col, y[coo.row]), scale * coo.data)
    np.add.at(T, (prev, y), scale)
    k = chain.pid[prev, y]                # -1: a pair never seen in training
    coo = Xp.tocoo()
    seen = k[coo.row] >= 0
    np.add.at(V, (coo.col[seen], k[coo.row][seen]), scale * coo.data[seen])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pairs", default="none")
    parser.add_argument("--holdout", choices=("last", "first", "none"), default="last")
    parser.add_argument("--learner", choices=("crf", "perceptron"), default="crf")
    parser.add_argument("--C", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0, help="the perceptron's order")
    args = parser.parse_args()
    X, y, X_dev, y_dev, names = dev_features(args.data, args.holdout)
    cols = pair_columns(args.pairs, X, names)
    labels = sorted({v for s in y for v in s})
    chain = PairChain(labels, X.shape[1], len(cols), y)
    Xp, Xp_dev = X[:, cols].tocsr(), X_dev[:, cols].tocsr()
    lengths = [len(s) for s in y]
    tic = time.perf_counter()
    if args.learner == "crf":
        fun = crf_objective(chain, X, Xp, by_length(lengths))

        def objective(theta):          # CRFTagger's: C * loss + ||theta||^2 / 2
            f, g = fun(theta)
            return args.C * f + 0.5 * theta @ theta, args.C * g + theta

        result = lbfgs(objective, np.zeros(sum(chain.sizes)), max_iter=1000, gtol=1e-5,
                       ftol=64 * np.finfo(float).eps, past=10, delta=1e-5)
        theta, n_iter = result.x, result.nit
    else:
        theta, n_iter = perceptron(chain, X, Xp, lengths, 10, args.seed), 10
    pred = viterbi(chain, theta, X_dev, Xp_dev, by_length([len(s) for s in y_dev]))
    pred = np.split(pred, np.cumsum([len(s) for s in y_dev])[:-1])
    f1 = chunk_f1_score(y_dev, [[labels[k] for k in s] for s in pred])
    print(json.dumps({"learner": args.learner, "pairs": args.pairs, "holdout": args.holdout,
                      "C": args.C, "seed": args.seed, "pair_columns": len(cols),
                      "label_pairs": chain.P, "iterations": n_iter,
                      "seconds": round(time.perf_counter() - tic), "dev_f1": round(100 * f1, 2)}))


if __name__ == "__main__":
    main()
