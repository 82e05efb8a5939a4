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

:func:`kernel_sgd_epoch` takes the same steps with a kernel on the emissions
(eqs. 6-8): W~ is then held by the coefficients of support tokens in a
:class:`~sklstruct._kernel_scores.KernelState`.
"""
import numpy as np

from sklstruct._chain cimport (ChainData, ChainWeights, Corpus, Diff, Weights, Workspace,
                               apply_diff, build_diff, diff_margin, diff_sqnorm, same_path)
from sklstruct._kernel_scores cimport (Index, KernelFunction, KernelState, emission_sqnorm,
                                       kernel_rows, matrix_ptr, promote, vector_ptr)
from sklstruct._viterbi cimport add_hamming, compute_emission, decode_best, path_score

cdef enum:
    SCHEDULE_SMD = 0
    SCHEDULE_OPTIMAL = 1
    SCHEDULE_CONSTANT = 2
    SCHEDULE_INVSCALING = 3

#: The step-size schedules, by the names of sklearn's SGDClassifier (and "smd").
SCHEDULES = {"smd": SCHEDULE_SMD, "optimal": SCHEDULE_OPTIMAL,
             "constant": SCHEDULE_CONSTANT, "invscaling": SCHEDULE_INVSCALING}

cdef double _FOLD = 1e-6


cdef class SGDState:
    """The scalars of the held representation, carried between passes.

    Parameters
    ----------
    eta0 : float
        The first step size; a fresh start has w = 0, v = 0 (a = b = 1).

    Attributes
    ----------
    a, b, c : float
        The scales of w = a W~ and v = b V~ + c w.
    wsq, wv : float
        ||w||^2 and W~ . V~.
    eta : float
        The current step size.
    t : float
        Steps taken.
    A, n_avg : float
        The averaging clock (the sum of the scales a) and the iterates summed.
    """
    cdef public double a, b, c, wsq, wv, eta, t, A, n_avg

    def __init__(self, double eta0=0.0):
        self.a = 1.0
        self.b = 1.0
        self.eta = eta0

    def __reduce__(self):
        return (_rebuild_state, ((self.a, self.b, self.c, self.wsq, self.wv, self.eta,
                                  self.t, self.A, self.n_avg),))


def _rebuild_state(fields):
    cdef SGDState s = SGDState()
    s.a, s.b, s.c, s.wsq, s.wv, s.eta, s.t, s.A, s.n_avg = fields
    return s


cdef class Schedule:
    """The step sizes of one pass (callers validate the values).

    Parameters
    ----------
    schedule : str
        A key of SCHEDULES.
    lam : float
        The regularisation of each f_i, 1 / (n C).
    eta0, power_t, t0 : float
        "constant": eta0; "invscaling": eta0 / t^power_t; "optimal":
        1 / (lam (t0 + t)); "smd": eta0 is the initial step.
    mu, smd_lambda : float
        SMD's meta-rate and decay factor.
    eta_max : float
        Upper bound on the step size (kept below 1 / lam).
    """
    cdef int kind
    cdef double lam, eta0, mu, smd_lambda, power_t, t0, eta_max

    def __init__(self, str schedule, double lam, double eta0, double mu, double smd_lambda,
                 double power_t, double t0, double eta_max):
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}")
        self.kind = SCHEDULES[schedule]
        self.lam, self.eta0, self.mu, self.smd_lambda = lam, eta0, mu, smd_lambda
        self.power_t, self.t0, self.eta_max = power_t, t0, eta_max


cdef inline Py_ssize_t _n_chain(Weights* w) noexcept nogil:
    return (w.L + 2 + (w.L * w.L if w.order == 2 else 0)) * w.L


cdef void _scale(Weights* w, double f) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(w.chain_base):
        w.W[i] *= f
    for i in range(_n_chain(w)):
        w.P[i] *= f


cdef void _scale_rows(double* a, Py_ssize_t n, double f) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        a[i] *= f


cdef void _fold_clock(Weights* w, double A) noexcept nogil:
    """U -= A W~ (so that A W~ - U keeps its value when the clock restarts at 0)."""
    cdef Py_ssize_t i
    for i in range(w.chain_base):
        w.W_sum[i] -= A * w.W[i]
    for i in range(_n_chain(w)):
        w.P_sum[i] -= A * w.P[i]


cdef inline Py_ssize_t _visit(Corpus* X, Py_ssize_t s, Py_ssize_t* row0) noexcept nogil:
    """Sentence s: its first row into row0, its length returned."""
    row0[0] = X.offsets[s]
    return X.offsets[s + 1] - row0[0]


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



cdef struct Stepper:
    # the scalars of the held representation (SGDState) and the schedule
    double a, b, c, wsq, wv, eta, t, A, n_avg
    int sched
    bint smd, averaging
    double lam, eta0, mu, smd_lambda, power_t, t0, eta_max
    double lo, hi        # range of the step sizes used in this pass


cdef Stepper _stepper(SGDState state, Schedule schedule, bint averaging) noexcept:
    cdef Stepper st
    st.a, st.b, st.c = state.a, state.b, state.c
    st.wsq, st.wv, st.eta = state.wsq, state.wv, state.eta
    st.t, st.A, st.n_avg = state.t, state.A, state.n_avg
    st.sched = schedule.kind
    st.smd = st.sched == SCHEDULE_SMD
    st.averaging = averaging
    st.lam, st.eta0, st.mu, st.smd_lambda = (schedule.lam, schedule.eta0, schedule.mu,
                                             schedule.smd_lambda)
    st.power_t, st.t0, st.eta_max = schedule.power_t, schedule.t0, schedule.eta_max
    st.lo, st.hi = 1e300, 0.0
    return st


cdef void _store(Stepper* st, SGDState state) noexcept:
    state.a, state.b, state.c = st.a, st.b, st.c
    state.wsq, state.wv, state.eta = st.wsq, st.wv, st.eta
    state.t, state.A, state.n_avg = st.t, st.A, st.n_avg



cdef void _step(Stepper* st, double dW, double dV, double dd, double* alpha,
                double* beta) noexcept nogil:
    """One step's scalars, given D . W~ (dW), D . V~ (dV) and ||D||^2 (dd) for
    the step's D = dF(y*) (all 0 when the hinge is 0): the step size (SMD's
    eq. 17 or the schedule), then w <- shrink w + eta D and (SMD, eq. 18)
    v <- smd_lambda shrink v - eta lam w + eta D, as new scalars a, b, c and
    the multiples of D to add to W~ (alpha) and V~ (beta)."""
    cdef double shrink, c_new, gv
    st.t += 1.0
    if st.smd:
        # g . v with g = lam w - D and v = b V~ + c w
        gv = st.lam * (st.a * st.b * st.wv + st.c * st.wsq) - (st.b * dV + st.c * st.a * dW)
        st.eta *= max(0.5, 1.0 - st.mu * gv)
    elif st.sched == SCHEDULE_OPTIMAL:
        st.eta = 1.0 / (st.lam * (st.t0 + st.t))
    elif st.sched == SCHEDULE_INVSCALING:
        st.eta = st.eta0 / st.t ** st.power_t
    else:
        st.eta = st.eta0
    if st.eta > st.eta_max:
        st.eta = st.eta_max
    st.lo = min(st.lo, st.eta)
    st.hi = max(st.hi, st.eta)
    shrink = 1.0 - st.eta * st.lam
    alpha[0] = st.eta / (st.a * shrink)
    beta[0] = 0.0
    if st.smd:
        st.wsq = (shrink * shrink * st.wsq + 2.0 * st.eta * shrink * st.a * dW
                  + st.eta * st.eta * dd)
        c_new = st.smd_lambda * st.c - st.eta * st.lam / shrink
        st.b = st.smd_lambda * shrink * st.b
        beta[0] = st.eta * (1.0 - c_new) / st.b
        st.wv = st.wv + beta[0] * dW + alpha[0] * dV + alpha[0] * beta[0] * dd
        st.c = c_new
    st.a = st.a * shrink


cdef inline void _tick(Stepper* st) noexcept nogil:
    """The averaging clock after a step (the updates used the clock before it)."""
    if st.averaging:
        st.A += st.a
        st.n_avg += 1.0


cdef struct Coefs:
    # a kernel model's coefficient arrays (beta NULL: an explicit model)
    double* beta         # (n) W~
    double* usum         # (n) its averaging accumulators, or NULL
    double* bsum         # (L) column sums of beta
    double* vco          # (n) V~ (SMD), or NULL
    double* vsum         # (L)
    Py_ssize_t n, L


cdef void _fold(Stepper* st, Weights* w, Weights* v, Coefs* k) noexcept nogil:
    """Fold a scale that fell below _FOLD into its arrays (w = a W~ with a
    reset to 1, and the averaging clock restarted at 0 with U -= A W~; the
    same for v = b V~), keeping every product the state tracks."""
    cdef Py_ssize_t r
    if st.a < _FOLD:
        if st.averaging:
            _fold_clock(w, st.A)
            if k.beta != NULL:
                for r in range(k.n):
                    k.usum[r] -= st.A * k.beta[r]
            st.A = 0.0
        _scale(w, st.a)
        if k.beta != NULL:
            _scale_rows(k.beta, k.n, st.a)
            _scale_rows(k.bsum, k.L, st.a)
        st.wv *= st.a
        st.a = 1.0
    if st.smd and st.b < _FOLD:
        _scale(v, st.b)
        if k.beta != NULL:
            _scale_rows(k.vco, k.n, st.b)
            _scale_rows(k.vsum, k.L, st.b)
        st.wv *= st.b
        st.b = 1.0


def sgd_epoch(ChainData data, const int[::1] y, const long long[::1] order,
              ChainWeights weights, ChainWeights aux, SGDState state not None,
              Schedule schedule not None):
    """One pass of SGD over the examples in ``order`` (callers validate all arguments).

    Parameters
    ----------
    data : ChainData
    y : int32 gold codes, one per row
    order : int64 sentence indices, in visiting order
    weights : ChainWeights holding W~ (and U when averaging), updated in place
    aux : ChainWeights holding V~ (SMD only; unused otherwise)
    state : SGDState, updated in place
    schedule : Schedule, the step sizes

    Returns
    -------
    n_mistakes : sentences whose loss-augmented best was not gold
    n_updates : steps with a non-zero hinge
    hinge : the sum of the hinge losses met (before each step)
    eta_min, eta_max_seen : the range of the step sizes used
    """
    cdef Weights* w = weights.bind()
    cdef Stepper st = _stepper(state, schedule, w.W_sum != NULL)
    cdef Workspace ws = Workspace(data, weights.n_labels, weights.order, 1, 1)
    cdef Weights* v = aux.bind() if st.smd else NULL
    cdef Diff* D = &ws.diffs[0]
    cdef Corpus* X = &data.c
    cdef Py_ssize_t i, T, row0, n_sent = order.shape[0]
    cdef long long n_mistakes = 0, n_updates = 0
    cdef double ell, dW, dV, dd, alpha, beta, hinge = 0.0
    cdef const int* gold
    cdef Coefs none
    none.beta = NULL
    with nogil:
        for i in range(n_sent):
            T = _visit(X, order[i], &row0)
            gold = &y[row0]
            ell = _hinge(X, row0, T, gold, w, st.a, ws)
            if not same_path(ws.y_hat, gold, T):
                n_mistakes += 1
            D.n = 0
            dW = dV = dd = 0.0
            if ell > 0.0:
                hinge += ell
                build_diff(X, row0, T, gold, ws.y_hat, w, D)
                dW = diff_margin(D, w)
                if st.smd:
                    dV = diff_margin(D, v)
                    dd = diff_sqnorm(&ws.table, D)
                n_updates += 1
            _step(&st, dW, dV, dd, &alpha, &beta)
            if D.n:
                if st.smd:
                    apply_diff(D, v, beta)
                w.n_seen = st.A
                apply_diff(D, w, alpha)
            _tick(&st)
            _fold(&st, w, v, &none)
    _store(&st, state)
    return n_mistakes, n_updates, hinge, st.lo, st.hi


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



def kernel_sgd_epoch(ChainData data, const int[::1] y, const long long[::1] order,
                     KernelState ks not None, ChainWeights weights, ChainWeights aux,
                     ChainData chain, SGDState state not None, Schedule schedule not None,
                     KernelFunction kernel not None):
    """:func:`sgd_epoch` with a kernel on the emissions: W~ is ``ks.beta`` over
    support tokens, ``weights`` and ``aux`` hold only the chain parts (their
    emission block is unused), and ``chain`` is ``data`` with its features
    removed (the same offsets), so that its joint-feature differences are the
    chain part of dF alone; ``kernel`` is not the linear one.  Returns what
    :func:`sgd_epoch` returns."""
    cdef Weights* w = weights.bind()
    if kernel.linear:
        raise ValueError("the linear kernel has explicit weights: use sgd_epoch")
    cdef Stepper st = _stepper(state, schedule, w.W_sum != NULL)
    cdef Index* ix = ks.bind(data)
    cdef Py_ssize_t L = weights.n_labels, N = ks.is_sup.shape[0]
    cdef Workspace ws = Workspace(data, L, weights.order, 1, 1)
    cdef Weights* v = aux.bind() if st.smd else NULL
    cdef double* beta_ = matrix_ptr(ks.beta)
    cdef double* usum = matrix_ptr(ks.beta_sum) if st.averaging else NULL
    cdef double* vco = matrix_ptr(ks.vco) if st.smd else NULL
    cdef double* bsum = vector_ptr(ks.bsum)
    cdef double* vsum = vector_ptr(ks.vsum)
    cdef double* buf = vector_ptr(ks.buf)
    EV_arr = np.zeros(max(data.max_T, 1) * L)
    cdef double* EV = vector_ptr(EV_arr)
    cdef Diff* D = &ws.diffs[0]
    cdef Corpus* X = &data.c
    cdef Corpus* Z = &chain.c
    cdef Py_ssize_t i, t, T, row0, r, n_sent = order.shape[0]
    cdef long long n_mistakes = 0, n_updates = 0
    cdef double ell, best, s_gold, ham, dW, dV, dd, alpha, bstep, hinge = 0.0
    cdef int yt, yh
    cdef const int* gold
    if ks.vco is None and st.smd:
        raise ValueError("the kernel state keeps no SMD coefficients")
    cdef Coefs coefs
    coefs.beta, coefs.usum, coefs.bsum = beta_, usum, bsum
    coefs.vco, coefs.vsum, coefs.n, coefs.L = vco, vsum, N * L, L
    with nogil:
        for i in range(n_sent):
            T = _visit(X, order[i], &row0)
            gold = &y[row0]
            kernel_rows(ix, &kernel.k, X, row0, T, beta_, bsum, ws.E, vco, vsum, EV)
            s_gold = path_score(ws.E, T, L, w.P, w.order, gold)
            add_hamming(ws.E, T, L, gold, 1.0 / st.a)
            best = decode_best(ws.E, T, L, w.P, w.order, ws.kb.delta, ws.kb.back, ws.y_hat)
            ell = st.a * (best - s_gold)
            ham = 0.0
            for t in range(T):
                ham += gold[t] != ws.y_hat[t]
            if ham > 0.0:
                n_mistakes += 1
            D.n = 0
            dW = dV = dd = 0.0
            if ell > 0.0:
                hinge += ell
                # the chain part of dF; D . W~ = s~(gold) - s~(y*)
                build_diff(Z, row0, T, gold, ws.y_hat, w, D)
                dW = s_gold - (best - ham / st.a)
                if st.smd:
                    dV = diff_margin(D, v)
                    for t in range(T):
                        if gold[t] != ws.y_hat[t]:
                            dV += EV[t * L + gold[t]] - EV[t * L + ws.y_hat[t]]
                    dd = (diff_sqnorm(&ws.table, D)
                          + emission_sqnorm(gold, ws.y_hat, T, NULL, X, &kernel.k, row0, buf))
                n_updates += 1
            _step(&st, dW, dV, dd, &alpha, &bstep)
            if ell > 0.0:
                for t in range(T):
                    yt = gold[t]
                    yh = ws.y_hat[t]
                    if yt == yh:
                        continue
                    r = row0 + t
                    promote(ix, X, r)
                    beta_[r * L + yt] += alpha
                    beta_[r * L + yh] -= alpha
                    bsum[yt] += alpha
                    bsum[yh] -= alpha
                    if usum != NULL:
                        usum[r * L + yt] += st.A * alpha
                        usum[r * L + yh] -= st.A * alpha
                    if vco != NULL:
                        vco[r * L + yt] += bstep
                        vco[r * L + yh] -= bstep
                        vsum[yt] += bstep
                        vsum[yh] -= bstep
                if st.smd:
                    apply_diff(D, v, bstep)
                w.n_seen = st.A
                apply_diff(D, w, alpha)
            _tick(&st)
            _fold(&st, w, v, &coefs)
    _store(&st, state)
    return n_mistakes, n_updates, hinge, st.lo, st.hi
