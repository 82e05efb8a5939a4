"""The solvers of :class:`~sklstruct.M3NTagger`, one strategy object each.

``M3NTagger`` picks one at a fresh fit (:func:`solver_for`) and keeps it as
``_solver``; the training loop asks it for a fresh state, whether training
may continue, one pass, and the weights to predict with.  The state itself
stays on the estimator (the attributes each ``new_state`` returns, listed in
``M3NTagger._TRAINING_STATE``), so that pickling and ``astype`` drop it like
every other learner's.

* :class:`SGD` / :class:`KernelSGD`: stochastic gradient descent on the
  primal (Yu & Lam, Figure 1), ``learners/_m3n_sgd.pyx``;
* :class:`SMO` / :class:`KernelSMO`: structured SMO on the factored dual
  (Taskar et al.), ``learners/_m3n_smo.pyx``;
* :class:`WorkingSet`: the n-slack working-set dual of ``learners/_dual.pyx``.
"""
import math

import numpy as np
import scipy.sparse as sp

from .._chain import COSTS, ChainData, ChainWeights
from .._kernel_scores import KernelFunction, KernelState, kernel_emissions
from ._base import check_same_dual, check_same_training_set, new_dual
from ._dual import dual_epoch
from ._m3n_sgd import SGDState, Schedule, kernel_sgd_epoch, sgd_epoch
from ._m3n_smo import factored_smo_epoch

#: The longest sentence structured SMO takes (its T x T token Gram matrix: 800 MB).
MAX_GRAM_TOKENS = 10_000


def solver_for(solver, kernel):
    """The strategy of ``solver`` ("sgd", "smo" or "working_set") with ``kernel``."""
    if solver == "working_set":
        if kernel != "linear":
            raise ValueError(f"kernel={kernel!r}: solver='working_set' is implemented for "
                             "the linear kernel only; use solver='smo' or 'sgd'")
        return WorkingSet()
    linear = kernel == "linear"
    if solver == "smo":
        return SMO() if linear else KernelSMO()
    return SGD() if linear else KernelSGD()


class Solver:
    """What the training loop asks of a solver; ``est`` is the M3NTagger."""

    #: The value of the ``solver`` parameter this strategy implements.
    name = None
    #: The default cap on SMO steps per example and visit (dual solvers).
    smo_steps = None

    def new_state(self, est, data, codes):
        """The training state of a fresh start (dict of estimator attributes)."""
        raise NotImplementedError

    def check_warm(self, est, data, codes):
        """Raise unless training may continue from ``est``'s state on this data."""

    def epoch(self, est, data, codes, order):
        """One pass over the sentences in ``order``: what it did (dict)."""
        raise NotImplementedError

    def after_epoch(self, est, codes, sq):
        """What to record beyond the objective, given ||w||^2 (dict)."""
        return {}

    def weights(self, est):
        """(W or support coefficients, P): the weights to predict with."""
        raise NotImplementedError

    def smo_cap(self, est):
        return self.smo_steps if est.max_smo_iter is None else int(est.max_smo_iter)


# -- stochastic gradient descent ---------------------------------------------------------

class SGD(Solver):
    """SGD on the primal with an explicit weight matrix (w = a W~, v = b V~ + c w)."""

    name = "sgd"

    def new_state(self, est, data, codes):
        W = est._weights
        return {"_sgd": SGDState(float(est.eta0)),
                "_aux": ChainWeights(W.n_features, W.n_labels, False, W.order)}

    def epoch(self, est, data, codes, order):
        n, C = data.n_sentences, float(est.C)
        lam = 1.0 / (n * C)
        s = est._sgd
        # exact ||w||^2 and W~ . V~ at the start of each pass (no drift)
        s.wsq, s.wv = self.held_products(est, data)
        typw = math.sqrt(1.0 / math.sqrt(lam))
        schedule = Schedule(est.learning_rate, lam, float(est.eta0), float(est.mu),
                            float(est.smd_lambda), float(est.power_t), 1.0 / (typw * lam),
                            0.5 / lam)
        mistakes, updates, hinge, lo, hi = self._run(est, data, codes, order, schedule)
        est.eta_ = float(s.eta)
        return {"mistakes": mistakes, "updates": updates, "mean_hinge": hinge / n,
                "eta_min": lo, "eta_max": hi}

    def _run(self, est, data, codes, order, schedule):
        return sgd_epoch(data, codes, order, est._weights, est._aux, est._sgd, schedule)

    def held_products(self, est, data):
        """(||w||^2, W~ . V~) of the held representation, computed afresh."""
        a = est._sgd.a
        W, P, V = est._weights.W, est._weights.P, est._aux
        return a * a * (np.vdot(W, W) + np.vdot(P, P)), np.vdot(W, V.W) + np.vdot(P, V.P)

    def weights(self, est):
        s, w = est._sgd, est._weights
        W, U = self._emission_arrays(est)
        if w.average and s.n_avg > 0:
            # the lazy average with the scales' clock: sum_t w_t = A W~ - U
            return (s.A * W - U) / s.n_avg, (s.A * w.P - w.P_sum) / s.n_avg
        return s.a * W, s.a * w.P

    def _emission_arrays(self, est):
        """(W~, its averaging accumulators U) of the emissions."""
        return est._weights.W, est._weights.W_sum


class KernelSGD(SGD):
    """SGD with a kernel on the emissions: W~ is held by the coefficients of
    support tokens (``_support``, a KernelState); the explicit weights keep
    only the chain part."""

    def new_state(self, est, data, codes):
        smd = est.learning_rate == "smd"
        state = super().new_state(est, data, codes)
        state.update(_support=KernelState(data.matrix, est._weights.n_labels,
                                          bool(est.average), smd),
                     _train_labels=codes, _train_lengths=data.lengths, _smd=smd)
        return state

    def check_warm(self, est, data, codes):
        check_same_training_set(est, data, codes, "a kernel model's training")
        if est._smd != (est.learning_rate == "smd"):
            raise ValueError("learning_rate: cannot switch a kernel model to or from "
                             "'smd' when continuing training; refit")

    def epoch(self, est, data, codes, order):
        record = super().epoch(est, data, codes, order)
        record["n_support"] = note_support(est, data)
        return record

    def _run(self, est, data, codes, order, schedule):
        return kernel_sgd_epoch(data, codes, order, est._support, est._weights, est._aux,
                                featureless(data), est._sgd, schedule,
                                KernelFunction(*est._kernel))

    def held_products(self, est, data):
        a = est._sgd.a
        P, V, ks = est._weights.P, est._aux, est._support
        rows = np.flatnonzero(ks.is_sup)
        sq, wv = np.vdot(P, P), np.vdot(P, V.P)
        if len(rows):
            query = rows_of(data, rows)
            kernel = KernelFunction(*est._kernel)
            if est._smd:
                E, EV = kernel_emissions(data, ks, ks.beta, query, kernel, coef2=ks.vco)
                wv += np.vdot(ks.beta[rows], EV)
            else:
                E = kernel_emissions(data, ks, ks.beta, query, kernel)
            sq += np.vdot(ks.beta[rows], E)
        return a * a * sq, wv

    def _emission_arrays(self, est):
        return est._support.beta, est._support.beta_sum


# -- structured SMO on the factored dual -------------------------------------------------

class SMO(Solver):
    """Structured SMO on the factored dual, with an explicit weight matrix
    W = X' beta kept beside the coefficients beta (``_beta``)."""

    name = "smo"
    smo_steps = 3

    def new_state(self, est, data, codes):
        if est.average:
            raise ValueError("average=True: solver='smo' predicts with the weights of its "
                             "dual variables; averaging applies to solver='sgd' and "
                             "'working_set'")
        if est.order != 1:
            raise ValueError("order=2: solver='smo' (structured SMO on the factored dual) is "
                             "implemented for first-order chains; use solver='working_set' "
                             "or 'sgd'")
        longest = int(data.lengths.max())
        if longest > MAX_GRAM_TOKENS:
            raise ValueError(f"solver='smo' holds the Gram matrix of each sentence's tokens; "
                             f"the longest sentence has {longest} tokens (at most "
                             f"{MAX_GRAM_TOKENS}): split it, or use solver='sgd'")
        return factored_dual(data, codes, len(est.classes_), float(est.C))

    def check_warm(self, est, data, codes):
        check_same_dual(est, data, codes, est._C)

    def epoch(self, est, data, codes, order):
        mistakes, steps, gap, overflow = factored_smo_epoch(
            data, codes, order, self.coefs(est), est._edge, self._support(est),
            est._weights, featureless(data), est._C, float(est.tol), self.smo_cap(est),
            KernelFunction(*est._kernel))
        if overflow:
            raise ValueError("training produced non-finite kernel values; scale the "
                             "features down, lower gamma or degree")
        est.kkt_gap_ = gap
        return {"mistakes": mistakes, "smo_steps": steps, "kkt_gap": gap}

    def after_epoch(self, est, codes, sq):
        # eq. 5: sum_i sum_y alpha_i(y) H(y) = sum_r (C - m[r, y_r]) = sum_r beta[r, y_r]
        est.dual_objective_ = float(
            self.coefs(est)[np.arange(len(codes)), codes].sum()) - 0.5 * sq
        return {"dual_objective": est.dual_objective_}

    def coefs(self, est):
        """The emission coefficients beta = C [l = y_r] - m[r, l] of the
        training tokens (a kernel model's are its support coefficients)."""
        return est._beta

    def _support(self, est):
        return None

    def weights(self, est):
        return est._weights.W.copy(), est._weights.P.copy()


class KernelSMO(SMO):
    """Structured SMO with a kernel: the coefficients live in the support
    index alone (``_support.beta``)."""

    def new_state(self, est, data, codes):
        state = super().new_state(est, data, codes)
        state["_support"] = KernelState(data.matrix, len(est.classes_), False, False)
        state["_support"].beta = state.pop("_beta")
        return state

    def epoch(self, est, data, codes, order):
        record = super().epoch(est, data, codes, order)
        record["n_support"] = note_support(est, data)
        return record

    def coefs(self, est):
        return est._support.beta

    def _support(self, est):
        return est._support

    def weights(self, est):
        return self.coefs(est).copy(), est._weights.P.copy()


# -- the working-set dual ----------------------------------------------------------------

class WorkingSet(Solver):
    """The n-slack working-set dual of SDMTagger with k=1 (linear kernel)."""

    name = "working_set"
    smo_steps = 1000

    def new_state(self, est, data, codes):
        return new_dual(est, data, codes)

    def check_warm(self, est, data, codes):
        check_same_dual(est, data, codes)

    def epoch(self, est, data, codes, order):
        mistakes, steps, _ = dual_epoch(
            est._dual, data, order, est._weights, 1, cost=COSTS["hamming"],
            tol=float(est.tol), kappa=0.0, max_smo_steps=self.smo_cap(est))
        est.dual_objective_ = est._dual.objective
        return {"mistakes": mistakes, "smo_steps": steps,
                "dual_objective": est._dual.objective}

    def weights(self, est):
        return est._weights.averaged()


# -- helpers -----------------------------------------------------------------------------

def factored_dual(data, codes, n_labels, C):
    """The factored dual variables of a fresh start, all mass on the gold
    sequences: emission coefficients beta = C [l = y_r] - m[r, l] = 0 and
    edge marginals C at the gold transitions (see ``factored_smo_epoch``)."""
    N = len(codes)
    edge = np.zeros((N, n_labels, n_labels))
    inner = np.ones(N, dtype=bool)
    inner[data.offsets[:-1]] = False          # a sentence's first token has no edge in
    rows = np.flatnonzero(inner)
    edge[rows, codes[rows - 1], codes[rows]] = C
    return {"_beta": np.zeros((N, n_labels)), "_edge": edge, "_C": C,
            "_train_labels": codes, "_train_lengths": data.lengths}


def note_support(est, data):
    """Keep the support tokens' feature vectors for publishing; their number."""
    rows = np.flatnonzero(est._support.is_sup)
    est._support_vectors = csr_of(data)[rows]
    return len(rows)


def featureless(data):
    """``data`` with every feature removed (same sentences): its differences
    dF are the chain part alone."""
    n = data.offsets[-1]
    return ChainData(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                     np.zeros(0), data.offsets, 1)


def csr_of(data):
    """A ChainData's matrix as a CSR matrix (no copy)."""
    return sp.csr_matrix((data.data, data.indices, data.indptr),
                         shape=(len(data.indptr) - 1, data.n_features))


def rows_of(data, rows):
    """The given rows of a ChainData's matrix as one-sentence ChainData."""
    m = csr_of(data)[rows]
    return ChainData(m.indptr, m.indices, m.data, [0, m.shape[0]], m.shape[1])
