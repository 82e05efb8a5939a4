# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The M3N's stochastic gradient kernel (Yu & Lam, sections 3.1-3.5, Fig. 1).

Each step draws one example i and takes a step on

    f_i(w) = lam / 2 ||w||^2 + l_i(w),   lam = 1 / (n C),

whose average over i is the regularised structured hinge loss of eq. 11
divided by n C (so both have one minimiser, that of eq. 4).  Its subgradient
is g = lam w - dF_i(y*), with y* the loss-augmented best sequence (Hamming
cost) and dF_i(y*) = F(x_i, y_i) - F(x_i, y*), or g = lam w when the hinge
l_i = H(y*) - w . dF_i(y*) is 0.  The hinge part is piecewise linear, so
the Hessian of f_i is lam I wherever it exists: the Hessian-vector products
of stochastic meta-descent are exact, H v = lam v.

Stochastic meta-descent (eqs. 17-18, in Schraudolph's order):

    eta_t     = eta_{t-1} max(1/2, 1 - mu g_t . v_t)
    w_{t+1}   = w_t - eta_t g_t
    v_{t+1}   = lambda v_t - eta_t (g_t + lambda H_t v_t)

Both w and v are dense, but each step adds only the sparse dF and a
multiple of w to them.  So they are held as w = a W~ and v = b V~ + c w with
scalars a, b, c: a step scales a and b, changes c, and adds multiples of dF
to W~ and V~ (cost O(nnz(dF)), not O(dim w)).  g . v needs ||w||^2 and
W~ . V~, which are updated from the sparse products W~ . dF, V~ . dF and
||dF||^2.  When a or b falls below 1e-6 it is folded into its array (a
dense pass, rare).  Loss-augmented decoding with w = a W~ scores W~ with
Hamming cost 1 / a.  Averaging (Polyak-Ruppert) is lazy as in
:mod:`sklstruct._chain`, with the running sum of the scales a as the clock:
sum_t w_t = A W~ - U, U += A dW~ at each step.
"""
import numpy as np

from sklstruct._chain cimport (ChainData, ChainWeights, Corpus, Diff, Weights, Workspace,
                               apply_diff, build_diff, diff_margin, diff_sqnorm, same_path)
from sklstruct._viterbi cimport add_hamming, compute_emission, decode_best, path_score

cdef enum:
    SCHEDULE_SMD = 0
    SCHEDULE_OPTIMAL = 1
    SCHEDULE_CONSTANT = 2
    SCHEDULE_INVSCALING = 3

#: The step-size schedules, by the names of sklearn's SGDClassifier (and "smd").
SCHEDULES = {"smd": SCHEDULE_SMD, "optimal": SCHEDULE_OPTIMAL,
             "constant": SCHEDULE_CONSTANT, "invscaling": SCHEDULE_INVSCALING}

#: The fields of the state vector carried between epochs.
STATE_FIELDS = ("a", "b", "c", "wsq", "wv", "eta", "t", "A", "n_avg")
cdef enum:
    S_A = 0          # w = a W~
    S_B = 1          # v = b V~ + c w
    S_C = 2
    S_WSQ = 3        # ||w||^2
    S_WV = 4         # W~ . V~
    S_ETA = 5        # the current step size
    S_T = 6          # steps taken
    S_CLOCK = 7      # averaging clock A (sum of the scales a)
    S_NAVG = 8       # iterates summed

cdef double _FOLD = 1e-6


def new_state(double eta0):
    """The state of a fresh start: w = 0, v = 0, eta = eta0."""
    s = np.zeros(len(STATE_FIELDS))
    s[S_A] = 1.0
    s[S_B] = 1.0
    s[S_ETA] = eta0
    return s


cdef inline Py_ssize_t _n_chain(Weights* w) noexcept nogil:
    return (w.L + 2 + (w.L * w.L if w.order == 2 else 0)) * w.L


cdef void _scale(Weights* w, double f) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(w.chain_base):
        w.W[i] *= f
    for i in range(_n_chain(w)):
        w.P[i] *= f


cdef void _fold_clock(Weights* w, double A) noexcept nogil:
    """U -= A W~ (so that A W~ - U keeps its value when the clock restarts at 0)."""
    cdef Py_ssize_t i
    for i in range(w.chain_base):
        w.W_sum[i] -= A * w.W[i]
    for i in range(_n_chain(w)):
        w.P_sum[i] -= A * w.P[i]


cdef double _hinge(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold, Weights* w,
                   double a, Workspace ws) noexcept nogil:
    """l = max_y [H(y) + a s~(y)] - a s~(gold), the loss-augmented best into ws.y_hat."""
    cdef Py_ssize_t L = w.L
    cdef double best, s_gold
    compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, ws.E)
    s_gold = path_score(ws.E, T, L, w.P, w.order, gold)
    add_hamming(ws.E, T, L, gold, 1.0 / a)
    best = decode_best(ws.E, T, L, w.P, w.order, ws.kb.delta, ws.kb.back, ws.y_hat)
    return a * (best - s_gold)


def sgd_epoch(ChainData data, const int[::1] y, const long long[::1] order,
              ChainWeights weights, ChainWeights aux, double[::1] state, str schedule,
              double lam, double eta0, double mu, double smd_lambda, double power_t,
              double t0, double eta_max):
    """One pass of SGD over the examples in ``order`` (callers validate all arguments).

    Parameters
    ----------
    data : ChainData
    y : int32 gold codes, one per row
    order : int64 sentence indices, in visiting order
    weights : ChainWeights holding W~ (and U when averaging), updated in place
    aux : ChainWeights holding V~ (SMD only; unused otherwise)
    state : float64 array of STATE_FIELDS, updated in place
    schedule : a key of SCHEDULES
    lam : the regularisation of each f_i, 1 / (n C)
    eta0, power_t, t0 : "constant": eta0; "invscaling": eta0 / t^power_t;
        "optimal": 1 / (lam (t0 + t)); "smd": eta0 is the initial step
    mu, smd_lambda : SMD's meta-rate and decay factor
    eta_max : upper bound on the step size (kept below 1 / lam)

    Returns
    -------
    n_mistakes : sentences whose loss-augmented best was not gold
    n_updates : steps with a non-zero hinge
    hinge : the sum of the hinge losses met (before each step)
    eta_min, eta_max_seen : the range of the step sizes used
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}")
    cdef int sched = SCHEDULES[schedule]
    cdef bint smd = sched == SCHEDULE_SMD
    cdef Workspace ws = Workspace(data, weights.n_labels, weights.order, 1, 1)
    cdef Weights* w = weights.bind()
    cdef Weights* v = aux.bind() if smd else NULL
    cdef bint averaging = w.W_sum != NULL
    cdef Diff* D = &ws.diffs[0]
    cdef Corpus* X = &data.c
    cdef Py_ssize_t i, s, T, row0, n_sent = order.shape[0]
    cdef long long n_mistakes = 0, n_updates = 0
    cdef double a = state[S_A], b = state[S_B], c = state[S_C]
    cdef double wsq = state[S_WSQ], wv = state[S_WV], eta = state[S_ETA]
    cdef double t = state[S_T], A = state[S_CLOCK], n_avg = state[S_NAVG]
    cdef double ell, cost, dW, dV, dd, gv, shrink, alpha, beta, c_new, hinge = 0.0
    cdef double lo = 1e300, hi = 0.0
    cdef const int* gold
    with nogil:
        for i in range(n_sent):
            s = order[i]
            row0 = X.offsets[s]
            T = X.offsets[s + 1] - row0
            gold = &y[row0]
            ell = _hinge(X, row0, T, gold, w, a, ws)
            if not same_path(ws.y_hat, gold, T):
                n_mistakes += 1
            D.n = 0
            dW = 0.0
            dV = 0.0
            dd = 0.0
            if ell > 0.0:
                hinge += ell
                build_diff(X, row0, T, gold, ws.y_hat, w, D)
                dW = diff_margin(D, w)
                if smd:
                    dV = diff_margin(D, v)
                    dd = diff_sqnorm(&ws.table, D)
                n_updates += 1
            t += 1.0
            if smd:
                # g . v with g = lam w - D, v = b V~ + c w
                gv = lam * (a * b * wv + c * wsq) - (b * dV + c * a * dW)
                eta *= max(0.5, 1.0 - mu * gv)
            elif sched == SCHEDULE_OPTIMAL:
                eta = 1.0 / (lam * (t0 + t))
            elif sched == SCHEDULE_INVSCALING:
                eta = eta0 / t ** power_t
            else:
                eta = eta0
            if eta > eta_max:
                eta = eta_max
            lo = min(lo, eta)
            hi = max(hi, eta)
            shrink = 1.0 - eta * lam
            # w <- shrink w + eta D
            alpha = eta / (a * shrink)
            if smd:
                wsq = shrink * shrink * wsq + 2.0 * eta * shrink * a * dW + eta * eta * dd
                # v <- smd_lambda shrink v - eta lam w + eta D, rewritten on w_{t+1}
                c_new = smd_lambda * c - eta * lam / shrink
                b = smd_lambda * shrink * b
                beta = eta * (1.0 - c_new) / b
                wv = wv + beta * dW + alpha * dV + alpha * beta * dd
                c = c_new
                if D.n:
                    apply_diff(D, v, beta)
            a = a * shrink
            if D.n:
                w.n_seen = A
                apply_diff(D, w, alpha)
            if averaging:
                A += a
                n_avg += 1.0
            if a < _FOLD:
                if averaging:
                    _fold_clock(w, A)
                    A = 0.0
                _scale(w, a)
                wv *= a
                a = 1.0
            if smd and b < _FOLD:
                _scale(v, b)
                wv *= b
                b = 1.0
    state[S_A] = a
    state[S_B] = b
    state[S_C] = c
    state[S_WSQ] = wsq
    state[S_WV] = wv
    state[S_ETA] = eta
    state[S_T] = t
    state[S_CLOCK] = A
    state[S_NAVG] = n_avg
    return n_mistakes, n_updates, hinge, lo, hi


def hinge_losses(ChainData data, const int[::1] y, ChainWeights weights, double scale=1.0):
    """Each sentence's structured hinge loss (Yu & Lam eq. 10, Hamming cost)
    under w = scale * weights: max_y [H(y) - w . dF(y)], by loss-augmented
    Viterbi.  Returns a float64 array (n_sentences,)."""
    if not scale > 0.0:
        raise ValueError(f"scale must be positive; got {scale}")
    cdef Py_ssize_t s, row0, T, n = data.c.n_sentences
    cdef Workspace ws = Workspace(data, weights.n_labels, weights.order, 1, 1)
    cdef Weights* w = weights.bind()
    out = np.empty(n)
    cdef double[::1] o = out
    with nogil:
        for s in range(n):
            row0 = data.c.offsets[s]
            T = data.c.offsets[s + 1] - row0
            o[s] = max(_hinge(&data.c, row0, T, &y[row0], w, scale, ws), 0.0)
    return out
