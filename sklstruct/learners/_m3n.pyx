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

from libc.math cimport INFINITY, tanh

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
    # the scalars of the held representation (STATE_FIELDS) and the schedule
    double a, b, c, wsq, wv, eta, t, A, n_avg
    int sched
    bint smd, averaging
    double lam, eta0, mu, smd_lambda, power_t, t0, eta_max
    double lo, hi        # range of the step sizes used in this pass


cdef Stepper _stepper(double[::1] state, str schedule, bint averaging, double lam,
                      double eta0, double mu, double smd_lambda, double power_t, double t0,
                      double eta_max) except *:
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}")
    cdef Stepper st
    st.a, st.b, st.c = state[S_A], state[S_B], state[S_C]
    st.wsq, st.wv, st.eta = state[S_WSQ], state[S_WV], state[S_ETA]
    st.t, st.A, st.n_avg = state[S_T], state[S_CLOCK], state[S_NAVG]
    st.sched = SCHEDULES[schedule]
    st.smd = st.sched == SCHEDULE_SMD
    st.averaging = averaging
    st.lam, st.eta0, st.mu, st.smd_lambda = lam, eta0, mu, smd_lambda
    st.power_t, st.t0, st.eta_max = power_t, t0, eta_max
    st.lo, st.hi = 1e300, 0.0
    return st


cdef void _store(Stepper* st, double[::1] state) noexcept:
    state[S_A], state[S_B], state[S_C] = st.a, st.b, st.c
    state[S_WSQ], state[S_WV], state[S_ETA] = st.wsq, st.wv, st.eta
    state[S_T], state[S_CLOCK], state[S_NAVG] = st.t, st.A, st.n_avg


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
    cdef Weights* w = weights.bind()
    cdef Stepper st = _stepper(state, schedule, w.W_sum != NULL, lam, eta0, mu, smd_lambda,
                               power_t, t0, eta_max)
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


# ---------------------------------------------------------------------------
# Kernels (eqs. 6-8) between token feature vectors, with support tokens
# ---------------------------------------------------------------------------
#
# The emission part of w is  s(x_t, y) = sum_{j in S} beta[j, y] k(x_t, x_j)
# over support tokens j (training tokens that some step got wrong); the
# chain part stays explicit.  A step on sentence i adds, for each token t
# that y* gets wrong, alpha to beta[t, y_t] and -alpha to beta[t, y*_t]: the
# kernel form of w += alpha dF.  The products <x_t, x_j> are gathered through
# an inverted index of the training matrix (column f lists the rows holding
# feature f) whose support rows are kept first in each column, so a query
# touches only support tokens that share a feature with it; every other
# support token contributes k(0) beta[j, y], summed once per label.

cdef enum:
    KERNEL_POLY = 0     # (gamma <a, b> + coef0) ** degree
    KERNEL_TANH = 1     # tanh(gamma <a, b> + coef0)

#: The kernels on support tokens, by name.
KERNELS = {"poly": KERNEL_POLY, "tanh": KERNEL_TANH}


cdef struct Kernel:
    int kind
    double gamma
    double coef0
    int degree
    double k0            # k(0): what a support token with no shared feature adds


cdef inline double _kval(Kernel* k, double z) noexcept nogil:
    cdef double u = k.gamma * z + k.coef0, p = 1.0
    cdef int i
    if k.kind == KERNEL_TANH:
        return tanh(u)
    for i in range(k.degree):
        p *= u
    return p


cdef struct Index:
    # the training matrix by column, support rows first in each column
    const long long* colptr     # (F + 1)
    long long* slot_entry       # (nnz) CSC slot -> CSR entry of the training matrix
    long long* pos              # (nnz) CSR entry -> its CSC slot
    long long* n_sup            # (F) support rows at the head of each column
    const int* row_of           # (nnz) CSR entry -> row
    char* is_sup                # (N)
    const double* train_data    # (nnz) the training matrix's values
    # query scratch
    double* acc                 # (N) <x_q, x_j>
    char* mark                  # (N)
    int* touched                # (N)
    Py_ssize_t L


cdef void _promote(Index* ix, Corpus* X, Py_ssize_t r) noexcept nogil:
    """Make training row r a support token: move it to the head of its columns."""
    cdef long long e, e2, p, q
    cdef int f
    if ix.is_sup[r]:
        return
    ix.is_sup[r] = 1
    for e in range(X.indptr[r], X.indptr[r + 1]):
        f = X.indices[e]
        p = ix.pos[e]
        q = ix.colptr[f] + ix.n_sup[f]
        e2 = ix.slot_entry[q]
        ix.slot_entry[q] = e
        ix.slot_entry[p] = e2
        ix.pos[e] = q
        ix.pos[e2] = p
        ix.n_sup[f] += 1


cdef void _kernel_rows(Index* ix, Kernel* k, Corpus* Q, Py_ssize_t row0, Py_ssize_t T,
                       const double* beta, const double* bsum, double* E,
                       const double* beta2, const double* bsum2, double* E2) noexcept nogil:
    """E[t, y] = sum_j beta[j, y] k(x_{row0 + t}, x_j) over the support tokens j
    for the T rows of Q from row0 (and E2 from beta2 when beta2 is not NULL)."""
    cdef Py_ssize_t t, y, i, n, L = ix.L
    cdef long long e, slot, e2, stop
    cdef int r
    cdef double x, kv
    for t in range(T):
        for y in range(L):
            E[t * L + y] = k.k0 * bsum[y]
            if beta2 != NULL:
                E2[t * L + y] = k.k0 * bsum2[y]
        n = 0
        for e in range(Q.indptr[row0 + t], Q.indptr[row0 + t + 1]):
            x = Q.data[e]
            slot = ix.colptr[Q.indices[e]]
            stop = slot + ix.n_sup[Q.indices[e]]
            while slot < stop:
                e2 = ix.slot_entry[slot]
                r = ix.row_of[e2]
                if not ix.mark[r]:
                    ix.mark[r] = 1
                    ix.touched[n] = r
                    n += 1
                ix.acc[r] += x * ix.train_data[e2]
                slot += 1
        for i in range(n):
            r = ix.touched[i]
            kv = _kval(k, ix.acc[r]) - k.k0
            for y in range(L):
                E[t * L + y] += kv * beta[r * L + y]
            if beta2 != NULL:
                for y in range(L):
                    E2[t * L + y] += kv * beta2[r * L + y]
            ix.acc[r] = 0.0
            ix.mark[r] = 0


cdef double _row_dot(Corpus* X, Py_ssize_t r, const double* buf) noexcept nogil:
    cdef long long e
    cdef double s = 0.0
    for e in range(X.indptr[r], X.indptr[r + 1]):
        s += X.data[e] * buf[X.indices[e]]
    return s


cdef void _scatter(Corpus* X, Py_ssize_t r, double* buf, double sign) noexcept nogil:
    cdef long long e
    for e in range(X.indptr[r], X.indptr[r + 1]):
        buf[X.indices[e]] += sign * X.data[e]


cdef double _emission_sqnorm(const int* a, const int* b, Py_ssize_t T, const double* G,
                             Corpus* X, Kernel* k, Py_ssize_t row0,
                             double* buf) noexcept nogil:
    """||sum_t k(x_t, .) (e_{a_t} - e_{b_t})||^2 over the tokens where the label
    sequences a and b differ: from the Gram matrix G of the sentence's tokens,
    or, G NULL, with the kernel values of those tokens computed here (buf: a
    zeroed scratch of n_features)."""
    cdef Py_ssize_t t, u
    cdef double s = 0.0, c
    for t in range(T):
        if a[t] == b[t]:
            continue
        if G == NULL:
            _scatter(X, row0 + t, buf, 1.0)
        for u in range(T):
            if a[u] == b[u]:
                continue
            c = (a[t] == a[u]) - (a[t] == b[u]) - (b[t] == a[u]) + (b[t] == b[u])
            if c != 0.0:
                s += c * (G[t * T + u] if G != NULL
                          else _kval(k, _row_dot(X, row0 + u, buf)))
        if G == NULL:
            _scatter(X, row0 + t, buf, -1.0)
    return s


cdef inline long long* _ptr64(long long[::1] a) noexcept:
    return &a[0] if a.shape[0] else NULL


cdef class KernelState:
    """Support tokens, their coefficients and the inverted index of one
    training set (see the comment above); plain arrays, so it pickles.

    Parameters
    ----------
    matrix : CSR matrix, the stacked training corpus
    n_labels : int
    average, smd : bool
        Keep the averaging accumulators U / SMD's auxiliary coefficients V~.

    Attributes
    ----------
    beta : ndarray (n_rows, n_labels), the coefficients of W~ (zero off the support)
    beta_sum : ndarray or None, their averaging accumulators
    vco : ndarray or None, the coefficients of V~ (SMD)
    bsum, vsum : ndarray (n_labels,), column sums of beta and vco
    is_sup : int8 ndarray (n_rows,), 1 for the support tokens
    """
    cdef public object colptr, slot_entry, pos, n_sup, row_of, is_sup
    cdef public object beta, beta_sum, vco, bsum, vsum
    cdef object acc, mark, touched, buf
    cdef Index ix

    def __init__(self, matrix=None, Py_ssize_t n_labels=0, bint average=False,
                 bint smd=False, state=None):
        if state is not None:
            for name, value in state.items():
                setattr(self, name, value)
        else:
            N, F = matrix.shape
            rows = np.repeat(np.arange(N, dtype=np.int32), np.diff(matrix.indptr))
            order = np.lexsort((rows, matrix.indices))       # CSR entries by (column, row)
            self.row_of = rows
            self.slot_entry = order.astype(np.int64)
            self.pos = np.empty_like(self.slot_entry)
            self.pos[order] = np.arange(order.shape[0], dtype=np.int64)
            self.colptr = np.concatenate(
                [[0], np.cumsum(np.bincount(matrix.indices, minlength=F))]).astype(np.int64)
            self.n_sup = np.zeros(F, dtype=np.int64)
            self.is_sup = np.zeros(N, dtype=np.int8)
            self.beta = np.zeros((N, n_labels))
            self.beta_sum = np.zeros((N, n_labels)) if average else None
            self.vco = np.zeros((N, n_labels)) if smd else None
            self.bsum = np.zeros(n_labels)
            self.vsum = np.zeros(n_labels)
        self.acc = np.zeros(self.is_sup.shape[0])
        self.mark = np.zeros(self.is_sup.shape[0], dtype=np.int8)
        self.touched = np.zeros(self.is_sup.shape[0], dtype=np.int32)
        self.buf = np.zeros(self.n_sup.shape[0])

    def _arrays(self):
        return {name: getattr(self, name) for name in
                ("colptr", "slot_entry", "pos", "n_sup", "row_of", "is_sup", "beta",
                 "beta_sum", "vco", "bsum", "vsum")}

    def __reduce__(self):
        return (KernelState, (None, 0, False, False, self._arrays()))

    def thread_copy(self):
        """The same state (arrays shared, not copied) with its own query
        scratch, for another thread's queries."""
        return KernelState(None, 0, False, False, self._arrays())

    @property
    def n_support(self):
        return int(np.count_nonzero(self.is_sup))

    cdef Index* bind(self, ChainData data) except NULL:
        cdef const long long[::1] colptr = self.colptr
        cdef long long[::1] slot_entry = self.slot_entry, pos = self.pos, n_sup = self.n_sup
        cdef const int[::1] row_of = self.row_of
        cdef signed char[::1] is_sup = self.is_sup
        cdef const double[::1] train_data = data.data
        cdef double[::1] acc = self.acc
        cdef signed char[::1] mark = self.mark
        cdef int[::1] touched = self.touched
        if (is_sup.shape[0] != data.c.offsets[data.c.n_sentences]
                or slot_entry.shape[0] != train_data.shape[0]):
            raise ValueError("the kernel state belongs to another training set")
        self.ix.colptr = &colptr[0]
        self.ix.slot_entry = _ptr64(slot_entry)
        self.ix.pos = _ptr64(pos)
        self.ix.n_sup = _ptr64(n_sup)
        self.ix.row_of = &row_of[0] if row_of.shape[0] else NULL
        self.ix.is_sup = <char*>&is_sup[0] if is_sup.shape[0] else NULL
        self.ix.train_data = &train_data[0] if train_data.shape[0] else NULL
        self.ix.acc = &acc[0] if acc.shape[0] else NULL
        self.ix.mark = <char*>&mark[0] if mark.shape[0] else NULL
        self.ix.touched = &touched[0] if touched.shape[0] else NULL
        self.ix.L = self.beta.shape[1]
        return &self.ix


cdef Kernel _kernel(str kernel, double gamma, double coef0, int degree) except *:
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}")
    cdef Kernel k
    k.kind = KERNELS[kernel]
    k.gamma = gamma
    k.coef0 = coef0
    k.degree = degree
    k.k0 = 0.0
    k.k0 = _kval(&k, 0.0)
    return k


cdef inline double* _rows(object a) except? NULL:
    """The data of a C-contiguous float64 2-D array, or NULL for None."""
    cdef double[:, ::1] m
    if a is None:
        return NULL
    m = a
    return &m[0, 0] if m.shape[0] and m.shape[1] else NULL


cdef inline double* _vec(object a) except? NULL:
    cdef double[::1] m
    if a is None:
        return NULL
    m = a
    return &m[0] if m.shape[0] else NULL


def kernel_sgd_epoch(ChainData data, const int[::1] y, const long long[::1] order,
                     KernelState ks, ChainWeights weights, ChainWeights aux, ChainData chain,
                     double[::1] state, str schedule, double lam, double eta0, double mu,
                     double smd_lambda, double power_t, double t0, double eta_max,
                     str kernel, double gamma, double coef0, int degree):
    """:func:`sgd_epoch` with a kernel on the emissions: W~ is ``ks.beta`` over
    support tokens, ``weights`` and ``aux`` hold only the chain parts (their
    emission block is unused), and ``chain`` is ``data`` with its features
    removed (the same offsets), so that its joint-feature differences are the
    chain part of dF alone.  Returns what :func:`sgd_epoch` returns."""
    cdef Weights* w = weights.bind()
    cdef Stepper st = _stepper(state, schedule, w.W_sum != NULL, lam, eta0, mu, smd_lambda,
                               power_t, t0, eta_max)
    cdef Kernel k = _kernel(kernel, gamma, coef0, degree)
    cdef Index* ix = ks.bind(data)
    cdef Py_ssize_t L = weights.n_labels, N = ks.is_sup.shape[0]
    cdef Workspace ws = Workspace(data, L, weights.order, 1, 1)
    cdef Weights* v = aux.bind() if st.smd else NULL
    cdef double* beta_ = _rows(ks.beta)
    cdef double* usum = _rows(ks.beta_sum) if st.averaging else NULL
    cdef double* vco = _rows(ks.vco) if st.smd else NULL
    cdef double* bsum = _vec(ks.bsum)
    cdef double* vsum = _vec(ks.vsum)
    cdef double* buf = _vec(ks.buf)
    EV_arr = np.zeros(max(data.max_T, 1) * L)
    cdef double* EV = _vec(EV_arr)
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
            _kernel_rows(ix, &k, X, row0, T, beta_, bsum, ws.E, vco, vsum, EV)
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
                          + _emission_sqnorm(gold, ws.y_hat, T, NULL, X, &k, row0, buf))
                n_updates += 1
            _step(&st, dW, dV, dd, &alpha, &bstep)
            if ell > 0.0:
                for t in range(T):
                    yt = gold[t]
                    yh = ws.y_hat[t]
                    if yt == yh:
                        continue
                    r = row0 + t
                    _promote(ix, X, r)
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


def kernel_emissions(ChainData train, KernelState ks, coef, ChainData query, str kernel,
                     double gamma, double coef0, int degree, coef2=None):
    """E[q, y] = sum_j coef[j, y] k(x_q, x_j) over the support tokens j of ``ks``
    for every row q of ``query`` (and E2 from ``coef2``): float64 (n_rows, L)."""
    cdef Kernel k = _kernel(kernel, gamma, coef0, degree)
    cdef Index* ix = ks.bind(train)
    cdef Py_ssize_t L = ks.beta.shape[1], n = query.c.offsets[query.c.n_sentences]
    coef = np.ascontiguousarray(coef, dtype=np.float64)
    csum = coef.sum(axis=0)
    E = np.zeros((n, L))
    cdef double* E2p = NULL
    cdef double* c2 = NULL
    cdef double* c2sum = NULL
    if coef2 is not None:
        coef2 = np.ascontiguousarray(coef2, dtype=np.float64)
        c2sum_arr = coef2.sum(axis=0)
        E2 = np.zeros((n, L))
        E2p = _rows(E2)
        c2 = _rows(coef2)
        c2sum = _vec(c2sum_arr)
    cdef double* Ep = _rows(E)
    cdef double* cp = _rows(coef)
    cdef double* cs = _vec(csum)
    if n:
        with nogil:
            _kernel_rows(ix, &k, &query.c, 0, n, cp, cs, Ep, c2, c2sum, E2p)
    return (E, E2) if coef2 is not None else E


# ---------------------------------------------------------------------------
# Structured SMO on the factored dual (the paper's baseline, Taskar et al.)
# ---------------------------------------------------------------------------
#
# The dual variables alpha_i(y) of eq. 5 (one per label sequence, summing to
# C) are held by their marginals: node marginals m_i[t, l] and edge marginals
# e_i[t, a, b] (labels a at t - 1 and b at t).  The dual depends on alpha
# only through them, and on a chain every non-negative, consistent set of
# marginals summing to C is that of some alpha >= 0 (for instance the
# max-entropy one), whose support can hold every path through positive
# marginals.  The node
# marginals are held as the emission coefficients beta[r, l] = C [l = y_r] -
# m[r, l] of each training token r (w = sum alpha dF = C F(gold) - sum alpha
# F(y)), so that a kernel model's emission score of label l at a token x is
# sum_r beta[r, l] k(x, x_r), and an explicit one's weights are W = X' beta.
#
# An SMO step on example i moves mass delta from the sequence y through
# positive marginals of lowest loss-augmented score g(y) = H(y) + w . F(x_i, y) to
# the sequence y' of highest g (the pair that violates the KKT conditions
# most): the dual gains delta (g(y') - g(y)) - delta^2 / 2 ||F(y) - F(y')||^2,
# maximised at delta = gap / ||F(y) - F(y')||^2, clipped so that no marginal
# the move decreases falls below 0.
# Only example i's coefficients change, so its emission scores are updated
# through the Gram matrix of its own tokens, and the steps on it repeat until
# its gap is at most tol (or max_steps).

#: What _support_argmin returns when no path runs through positive marginals.
cdef double _NO_PATH = 1e300


cdef double _support_argmin(const double* A, Py_ssize_t T, Py_ssize_t L, const double* P,
                            const double* beta, const int* gold, double C,
                            const double* edge, double thr, double* delta, int* back,
                            int* path) noexcept nogil:
    """min g(y) = sum_t A[t, y_t] + the chain scores of P over the paths whose
    node marginals C [l = gold_t] - beta[t, l] and edge marginals edge[t, a, b]
    all exceed thr; the path into ``path``.  Returns _NO_PATH if there is none."""
    cdef double INF = _NO_PATH, best, v, m
    cdef Py_ssize_t t, a, b, LL = L * L
    cdef int arg
    for b in range(L):
        m = C * (gold[0] == b) - beta[b]
        delta[b] = A[b] + P[L * L + b] if m > thr else INF
    for t in range(1, T):
        for b in range(L):
            best = INF
            arg = -1
            m = C * (gold[t] == b) - beta[t * L + b]
            if m > thr:
                for a in range(L):
                    if delta[(t - 1) * L + a] < INF and edge[t * LL + a * L + b] > thr:
                        v = delta[(t - 1) * L + a] + P[a * L + b]
                        if v < best:
                            best = v
                            arg = a
            delta[t * L + b] = best + A[t * L + b] if arg >= 0 else INF
            back[t * L + b] = arg
    best = INF
    arg = -1
    for b in range(L):
        if delta[(T - 1) * L + b] < INF:
            v = delta[(T - 1) * L + b] + P[(L + 1) * L + b]
            if v < best:
                best = v
                arg = b
    if arg < 0:
        return INF
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t * L + path[t]]
    return best


cdef double _step_bound(const int* ya, const int* yb, Py_ssize_t T, Py_ssize_t L,
                        const double* beta, const int* gold, double C,
                        const double* edge) noexcept nogil:
    """The largest mass that can move from path ya to path yb: the smallest
    marginal the move decreases (nodes where they differ, edges where their
    label pairs differ).  Any non-negative, consistent marginals of a chain
    are those of some alpha >= 0, so this is the exact bound."""
    cdef double bound = 1e300, m
    cdef Py_ssize_t t
    for t in range(T):
        if ya[t] != yb[t]:
            m = C * (gold[t] == ya[t]) - beta[t * L + ya[t]]
            if m < bound:
                bound = m
        if t and (ya[t - 1] != yb[t - 1] or ya[t] != yb[t]):
            m = edge[t * L * L + ya[t - 1] * L + ya[t]]
            if m < bound:
                bound = m
    return bound


cdef void _token_gram(Corpus* X, Kernel* k, Py_ssize_t row0, Py_ssize_t T, double* buf,
                      double* G) noexcept nogil:
    """G[t, u] = k(x_t, x_u) over one sentence's tokens (T x T)."""
    cdef Py_ssize_t t, u
    for t in range(T):
        _scatter(X, row0 + t, buf, 1.0)
        for u in range(t, T):
            G[t * T + u] = _kval(k, _row_dot(X, row0 + u, buf))
            G[u * T + t] = G[t * T + u]
        _scatter(X, row0 + t, buf, -1.0)


def factored_smo_epoch(ChainData data, const int[::1] y, const long long[::1] order,
                       double[:, ::1] beta, double[:, :, ::1] edge, KernelState ks,
                       ChainWeights weights, ChainData chain, double C, double tol,
                       long long max_steps, str kernel, double gamma, double coef0,
                       int degree):
    """One pass of structured SMO over the examples in ``order`` (callers
    validate all arguments; first-order chains only).

    Parameters
    ----------
    data : ChainData, the training set
    y : int32 gold codes, one per row
    order : int64 sentence indices, in visiting order
    beta : (n_rows, L) emission coefficients C [l = y_r] - m[r, l], updated in place
    edge : (n_rows, L, L) edge marginals (row r: labels at r - 1 and r; the
        first row of each sentence unused), updated in place
    ks : KernelState whose ``beta`` is ``beta`` (a kernel model), or None (an
        explicit model: ``weights.W`` = X' beta is updated)
    weights : ChainWeights: W (explicit model) and the chain parameters P
    chain : ``data`` without its features (the chain part of dF)
    C : the dual variables' sum per example
    tol : an example's steps stop when its KKT gap g(y') - g(y) is at most tol
    max_steps : cap on the steps per example and visit
    kernel, gamma, coef0, degree : "linear", or a kernel of KERNELS

    Returns
    -------
    n_mistakes : sentences whose loss-augmented best was not gold (first step)
    n_steps : SMO steps taken
    max_gap : the largest KKT gap met (first step of each visit)
    n_overflow : visits stopped because a kernel value or a bound was not finite
    """
    cdef Weights* w = weights.bind()
    cdef Kernel k
    cdef Index* ix = NULL
    if kernel == "linear":
        k = _kernel("poly", 1.0, 0.0, 1)        # <a, b>, for the token Gram matrix
    else:
        k = _kernel(kernel, gamma, coef0, degree)
        if ks is None:
            raise ValueError("a kernel model needs its KernelState")
        ix = ks.bind(data)
    cdef Py_ssize_t L = weights.n_labels, N = data.c.offsets[data.c.n_sentences]
    if (beta.shape[0] != N or beta.shape[1] != L or edge.shape[0] != N
            or edge.shape[1] != L or edge.shape[2] != L or y.shape[0] != N):
        raise ValueError("beta, edge and y must match the training set")
    if weights.order != 1:
        raise ValueError("structured SMO is implemented for first-order chains")
    cdef Py_ssize_t max_T = max(data.max_T, 1)
    cdef Workspace ws = Workspace(data, L, 1, 1, 1)
    scratch = np.zeros(max_T * L * 2 + max_T * max_T + data.n_features)
    cdef double* A = _vec(scratch)
    cdef double* delta2 = A + max_T * L
    cdef double* G = delta2 + max_T * L
    cdef double* buf = G + max_T * max_T
    ints = np.zeros(max_T * (L + 1), dtype=np.int32)
    cdef int[::1] ints_v = ints
    cdef int* back2 = &ints_v[0]
    cdef int* ysup = back2 + max_T * L
    cdef double* bp = &beta[0, 0] if N and L else NULL
    cdef double* ep = &edge[0, 0, 0] if N and L else NULL
    cdef double* bsum = _vec(ks.bsum) if ix != NULL else NULL
    cdef Diff* D = &ws.diffs[0]
    cdef Corpus* X = &data.c
    cdef Corpus* Z = &chain.c
    cdef Py_ssize_t i, t, u, T, row0, r, step, n_sent = order.shape[0]
    cdef long long n_mistakes = 0, n_steps = 0, n_overflow = 0, e
    cdef double g_hi, g_lo, gap, sq, d, a_y, f, max_gap = 0.0
    cdef double thr = 1e-10 * C
    cdef const int* gold
    cdef const int* yh
    cdef int ya, yb
    with nogil:
        for i in range(n_sent):
            T = _visit(X, order[i], &row0)
            gold = &y[row0]
            if ix != NULL:
                _kernel_rows(ix, &k, X, row0, T, bp, bsum, ws.E, NULL, NULL, NULL)
            else:
                compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, ws.E)
            for step in range(max_steps):
                for u in range(T * L):
                    A[u] = ws.E[u]
                add_hamming(A, T, L, gold, 1.0)
                g_hi = decode_best(A, T, L, w.P, 1, ws.kb.delta, ws.kb.back, ws.y_hat)
                g_lo = _support_argmin(A, T, L, w.P, bp + row0 * L, gold, C,
                                       ep + row0 * L * L, thr, delta2, back2, ysup)
                gap = g_hi - g_lo
                yh = ws.y_hat
                if step == 0:
                    if not same_path(yh, gold, T):
                        n_mistakes += 1
                    if g_lo < _NO_PATH and gap > max_gap:
                        max_gap = gap
                if g_lo >= _NO_PATH or not gap > tol:
                    break
                if step == 0:
                    # the Gram matrix of the sentence's tokens, only when it takes a step
                    _token_gram(X, &k, row0, T, buf, G)
                # ||F(ysup) - F(y')||^2: emissions through G, the chain part exactly
                build_diff(Z, row0, T, ysup, yh, w, D)
                sq = (_emission_sqnorm(ysup, yh, T, G, X, &k, row0, buf)
                      + diff_sqnorm(&ws.table, D))
                a_y = _step_bound(ysup, yh, T, L, bp + row0 * L, gold, C, ep + row0 * L * L)
                if not (sq < INFINITY and a_y < INFINITY):
                    n_overflow += 1          # kernel values overflowed: Python raises
                    break
                # the exact step gap / sq, clipped at a_y (sq <= 0: an indefinite
                # kernel such as tanh, the dual rises all the way to the bound)
                d = a_y if (sq <= 0.0 or gap >= a_y * sq) else gap / sq
                if not d > 0.0:
                    break
                n_steps += 1
                # move d from ysup to y': beta, W or the support, E, the edges, P
                for t in range(T):
                    ya = ysup[t]
                    yb = yh[t]
                    if ya == yb:
                        continue
                    r = row0 + t
                    bp[r * L + ya] += d
                    bp[r * L + yb] -= d
                    if ix != NULL:
                        _promote(ix, X, r)
                        bsum[ya] += d
                        bsum[yb] -= d
                    else:
                        for e in range(X.indptr[r], X.indptr[r + 1]):
                            f = d * X.data[e]
                            w.W[X.indices[e] * L + ya] += f
                            w.W[X.indices[e] * L + yb] -= f
                    for u in range(T):
                        ws.E[u * L + ya] += d * G[u * T + t]
                        ws.E[u * L + yb] -= d * G[u * T + t]
                for t in range(1, T):
                    if ysup[t - 1] == yh[t - 1] and ysup[t] == yh[t]:
                        continue
                    r = row0 + t
                    ep[r * L * L + ysup[t - 1] * L + ysup[t]] -= d
                    ep[r * L * L + yh[t - 1] * L + yh[t]] += d
                apply_diff(D, w, d)
    return n_mistakes, n_steps, max_gap, n_overflow
