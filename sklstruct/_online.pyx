# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""One epoch of an online k-best learner over a stacked CSR corpus, in C.

For each sentence n (in the given order) the loop computes the emission
scores, finds the k best label sequences B^k_w (plain or loss-augmented), and
walks through them in order, updating the weights after each one as the
learner's rule says (paper 000, Algorithm 4): each test is made with the
weights left by the previous update.  Updates are sparse: only the rows of W
for the features of tokens whose label differs, and the differing transitions.

Averaging uses the usual lazy trick: with ``c`` the number of examples seen
before the current one, every update ``w += d`` also does ``u += c * d``; the
average of the weights after each example is then ``w - u / c``.
"""
import numpy as np

from libc.stdlib cimport malloc, free
from sklstruct._viterbi cimport (add_hamming, compute_emission, kbest, kbest_alloc, kbest_free,
                                viterbi)

cdef enum:
    RULE_PERCEPTRON = 0     # eq. 36
    RULE_PA = 1             # eqs. 24-25
    RULE_RPA = 2            # eqs. 27-28
    RULE_MIRA = 3           # k-best MIRA (section 4.1), solved by SMO

cdef enum:
    COST_HAMMING = 0
    COST_ZERO_ONE = 1

# The update rules and costs, by name, for the Python side.
RULES = {"perceptron": RULE_PERCEPTRON, "pa": RULE_PA, "rpa": RULE_RPA, "mira": RULE_MIRA}
COSTS = {"hamming": COST_HAMMING, "zero_one": COST_ZERO_ONE}


cdef double margin(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                   const int* path, Weights* w) noexcept nogil:
    """w . dF(path) = s(gold) - s(path) under the current weights, exactly."""
    cdef Py_ssize_t t, j, L = w.L
    cdef double d = 0.0
    cdef const double* P = w.P
    for t in range(T):
        if gold[t] != path[t]:
            for j in range(X.indptr[row0 + t], X.indptr[row0 + t + 1]):
                d += X.data[j] * (w.W[<Py_ssize_t>X.indices[j] * L + gold[t]]
                                  - w.W[<Py_ssize_t>X.indices[j] * L + path[t]])
    for t in range(1, T):
        d += P[gold[t - 1] * L + gold[t]] - P[path[t - 1] * L + path[t]]
    d += P[L * L + gold[0]] - P[L * L + path[0]]
    d += P[(L + 1) * L + gold[T - 1]] - P[(L + 1) * L + path[T - 1]]
    return d


cdef inline void _add(double* a, double* a_sum, Py_ssize_t i, double step,
                      double step_sum) noexcept nogil:
    a[i] += step
    if a_sum != NULL:
        a_sum[i] += step_sum


cdef void add_difference(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                         const int* path, Weights* w, double step,
                         double n_seen) noexcept nogil:
    """w += step * dF(path) = step * (F(x, gold) - F(x, path)), sparsely."""
    cdef Py_ssize_t t, j, f, L = w.L
    cdef double v, ss = step * n_seen
    for t in range(T):
        if gold[t] != path[t]:
            for j in range(X.indptr[row0 + t], X.indptr[row0 + t + 1]):
                v = X.data[j]
                f = <Py_ssize_t>X.indices[j] * L
                _add(w.W, w.W_sum, f + gold[t], step * v, ss * v)
                _add(w.W, w.W_sum, f + path[t], -step * v, -ss * v)
    for t in range(1, T):
        if gold[t - 1] != path[t - 1] or gold[t] != path[t]:
            _add(w.P, w.P_sum, gold[t - 1] * L + gold[t], step, ss)
            _add(w.P, w.P_sum, path[t - 1] * L + path[t], -step, -ss)
    if gold[0] != path[0]:
        _add(w.P, w.P_sum, L * L + gold[0], step, ss)
        _add(w.P, w.P_sum, L * L + path[0], -step, -ss)
    if gold[T - 1] != path[T - 1]:
        _add(w.P, w.P_sum, (L + 1) * L + gold[T - 1], step, ss)
        _add(w.P, w.P_sum, (L + 1) * L + path[T - 1], -step, -ss)


cdef bint same_path(const int* a, const int* b, Py_ssize_t T) noexcept nogil:
    cdef Py_ssize_t t
    for t in range(T):
        if a[t] != b[t]:
            return False
    return True



# ---------------------------------------------------------------------------
# Exact joint-feature differences dF(y) = F(x, gold) - F(x, y)
# ---------------------------------------------------------------------------

cdef Py_ssize_t diff_capacity(Py_ssize_t nnz, Py_ssize_t T) noexcept nogil:
    """Entries a Diff of a sentence with ``nnz`` stored features and T tokens
    may need before merging: two per feature, two per chain factor."""
    return 2 * nnz + 2 * (T + 1)


cdef inline Py_ssize_t _put(Entry* e, Py_ssize_t m, long long key, double val) noexcept nogil:
    e[m].key = key
    e[m].val = val
    return m + 1


cdef void build_diff(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                         const int* path, Weights* w, Diff* d) noexcept nogil:
    """dF(path) = F(x, gold) - F(x, path) as (key, value) entries in token
    order, only where the sequences differ.  A key may repeat (a feature
    present at several differing positions, a transition used twice): its
    values add up, in apply_diff as in the products of a KeyTable, so norms
    and inner products are exact.  d.e must hold diff_capacity(nnz(sentence),
    T) entries."""
    cdef Py_ssize_t t, j, m = 0, L = w.L
    cdef long long f, c = w.chain_base
    cdef Entry* e = d.e
    for t in range(T):
        if gold[t] != path[t]:
            for j in range(X.indptr[row0 + t], X.indptr[row0 + t + 1]):
                f = <long long>X.indices[j] * L
                m = _put(e, m, f + gold[t], X.data[j])
                m = _put(e, m, f + path[t], -X.data[j])
    for t in range(1, T):
        if gold[t - 1] != path[t - 1] or gold[t] != path[t]:
            m = _put(e, m, c + gold[t - 1] * L + gold[t], 1.0)
            m = _put(e, m, c + path[t - 1] * L + path[t], -1.0)
    if gold[0] != path[0]:
        m = _put(e, m, c + L * L + gold[0], 1.0)
        m = _put(e, m, c + L * L + path[0], -1.0)
    if gold[T - 1] != path[T - 1]:
        m = _put(e, m, c + (L + 1) * L + gold[T - 1], 1.0)
        m = _put(e, m, c + (L + 1) * L + path[T - 1], -1.0)
    d.n = m


cdef int table_init(KeyTable* h, Py_ssize_t capacity) noexcept nogil:
    """A table for up to ``capacity`` distinct keys; -1 if out of memory."""
    cdef Py_ssize_t i
    h.bits = 4
    while (1 << h.bits) < 2 * capacity:
        h.bits += 1
    h.keys = <long long*>malloc((1 << h.bits) * sizeof(long long))
    h.vals = <double*>malloc((1 << h.bits) * sizeof(double))
    h.used = <Py_ssize_t*>malloc(max(capacity, 1) * sizeof(Py_ssize_t))
    h.n_used = 0
    if h.keys == NULL or h.vals == NULL or h.used == NULL:
        return -1
    for i in range(1 << h.bits):
        h.keys[i] = -1
    return 0


cdef void table_free(KeyTable* h) noexcept nogil:
    free(h.keys)
    free(h.vals)
    free(h.used)
    h.keys = NULL
    h.vals = NULL
    h.used = NULL


cdef inline Py_ssize_t _slot(KeyTable* h, long long key) noexcept nogil:
    """Open addressing with linear probing from a Fibonacci hash of the key."""
    cdef Py_ssize_t i = <Py_ssize_t>((<unsigned long long>key * 0x9E3779B97F4A7C15ULL)
                                     >> (64 - h.bits))
    cdef Py_ssize_t mask = (1 << h.bits) - 1
    while h.keys[i] != -1 and h.keys[i] != key:
        i = (i + 1) & mask
    return i


cdef void table_load(KeyTable* h, Diff* d) noexcept nogil:
    """Hold dF in the (empty) table, repeated keys summed."""
    cdef Py_ssize_t i, slot
    for i in range(d.n):
        slot = _slot(h, d.e[i].key)
        if h.keys[slot] == -1:
            h.keys[slot] = d.e[i].key
            h.vals[slot] = 0.0
            h.used[h.n_used] = slot
            h.n_used += 1
        h.vals[slot] += d.e[i].val


cdef double table_dot(KeyTable* h, Diff* d) noexcept nogil:
    """Exact dF(held) . dF(d): d's repeated keys may stay unmerged."""
    cdef Py_ssize_t i, slot
    cdef double s = 0.0
    for i in range(d.n):
        slot = _slot(h, d.e[i].key)
        if h.keys[slot] != -1:
            s += d.e[i].val * h.vals[slot]
    return s


cdef void table_clear(KeyTable* h) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(h.n_used):
        h.keys[h.used[i]] = -1
    h.n_used = 0


cdef double table_sqnorm(KeyTable* h) noexcept nogil:
    """||dF(held)||^2 from the held values (repeated keys already summed)."""
    cdef Py_ssize_t i
    cdef double s = 0.0, v
    for i in range(h.n_used):
        v = h.vals[h.used[i]]
        s += v * v
    return s


cdef double diff_sqnorm(KeyTable* h, Diff* d) noexcept nogil:
    """||dF||^2, exactly (repeated features and positions summed first)."""
    cdef double s
    table_load(h, d)
    s = table_sqnorm(h)
    table_clear(h)
    return s


cdef void apply_diff(Diff* d, Weights* w, double step, double n_seen) noexcept nogil:
    """w += step * dF, sparsely (and the averaging sums)."""
    cdef Py_ssize_t i
    cdef long long key
    cdef double v
    for i in range(d.n):
        key = d.e[i].key
        v = d.e[i].val
        if key < w.chain_base:
            _add(w.W, w.W_sum, key, step * v, step * n_seen * v)
        else:
            _add(w.P, w.P_sum, key - w.chain_base, step * v, step * n_seen * v)


cdef Py_ssize_t hamming(const int* a, const int* b, Py_ssize_t T) noexcept nogil:
    cdef Py_ssize_t t, n = 0
    for t in range(T):
        n += a[t] != b[t]
    return n


cdef double cost_of(const int* gold, const int* path, Py_ssize_t T, int cost) noexcept nogil:
    """L(gold, path): Hamming distance or 0/1 loss."""
    cdef Py_ssize_t h = hamming(gold, path, T)
    if cost == COST_ZERO_ONE:
        return 1.0 if h > 0 else 0.0
    return <double>h


# ---------------------------------------------------------------------------
# The k-best MIRA problem on one example, by SMO
# ---------------------------------------------------------------------------

cdef Py_ssize_t smo(const double* G, const double* ell, Py_ssize_t n, double C, double tol,
                    Py_ssize_t max_steps, double* alpha, double* grad) noexcept nogil:
    """Solve  min_a 1/2 a'Ga - a'ell  s.t.  a >= 0, sum(a) = C  (n x n Gram G).

    Variable 0 is the gold sequence (dF = 0, loss 0): its weight is the slack
    of ``sum_{j>0} a_j <= C``, so this is the dual of  min 1/2||w - w_n||^2 + C xi
    s.t. w.dF_j >= L_j - xi  (paper 000, eqs. 7-8 with lambda = 0, w = w_n +
    sum a_j dF_j).  Steps between the maximum violating pair (eq. 18) with the
    clipped step of eq. 20 until  max_{a_i>0} g_i - min g_i <= tol.
    Returns the number of steps.
    """
    cdef Py_ssize_t i, up, down, steps = 0
    cdef double delta, denom
    for i in range(n):
        alpha[i] = 0.0
        grad[i] = -ell[i]
    alpha[0] = C
    for i in range(n):
        grad[i] += C * G[i * n]
    while steps < max_steps:
        up = 0
        down = -1
        for i in range(n):
            if grad[i] < grad[up]:
                up = i
            if alpha[i] > 0.0 and (down < 0 or grad[i] > grad[down]):
                down = i
        if down < 0 or grad[down] - grad[up] <= tol:
            break
        denom = G[up * n + up] + G[down * n + down] - 2.0 * G[up * n + down]
        delta = alpha[down]
        if denom > 0.0 and (grad[down] - grad[up]) / denom < delta:
            delta = (grad[down] - grad[up]) / denom
        alpha[up] += delta
        alpha[down] -= delta
        for i in range(n):
            grad[i] += delta * (G[i * n + up] - G[i * n + down])
        steps += 1
    return steps


def solve_mira_dual(G, ell, double C, double tol=1e-10, Py_ssize_t max_steps=100000):
    """The SMO solver of the k-best MIRA step, for tests: G (n, n) with row and
    column 0 for the gold sequence (zeros), ell (n,) with ell[0] = 0.
    Returns alpha (n,): alpha[0] is the unused budget, alpha[1:] the steps."""
    G = np.ascontiguousarray(G, dtype=np.float64)
    ell = np.ascontiguousarray(ell, dtype=np.float64)
    n = ell.shape[0]
    if G.shape != (n, n) or n < 1:
        raise ValueError("G must be square with one row per entry of ell")
    alpha = np.empty(n)
    grad = np.empty(n)
    cdef double[:, ::1] Gv = G
    cdef double[::1] lv = ell, av = alpha, gv = grad
    smo(&Gv[0, 0], &lv[0], n, C, tol, max_steps, &av[0], &gv[0])
    return alpha


def online_epoch(const long long[::1] indptr, const int[::1] indices, const double[::1] data,
                 const long long[::1] offsets, const int[::1] y, const long long[::1] order,
                 double[:, ::1] W, double[:, ::1] P, W_sum, P_sum,
                 Py_ssize_t k, long long n_seen, int rule=RULE_PERCEPTRON,
                 double C=1.0, int cost=COST_HAMMING, double tol=1e-6,
                 Py_ssize_t max_smo_steps=1000, bint augment=True):
    """Run one epoch of a k-best online learner (callers validate all arrays).

    Parameters
    ----------
    indptr, indices, data : the stacked CSR corpus
    offsets : int64 array (n_sentences + 1,), first row of each sentence
    y : int32 array, one encoded gold label per row
    order : int64 array, the sentence indices to visit, in order
    W, P : emission weights (F, L) and chain parameters (L + 2, L), updated in place
    W_sum, P_sum : averaging accumulators of the same shapes, or None
    k : number of best sequences per example
    n_seen : examples processed before this epoch (the averaging clock)
    rule : RULES[name]: perceptron (eq. 36, plain k-best), pa (eqs. 24-25),
        rpa (eq. 28) or mira (section 4.1); the last three use the
        loss-augmented k-best sequences of eq. 12
    C : the step cap (pa, rpa) or the slack weight (mira)
    cost : COSTS[name], the cost L(y^n, y): Hamming or 0/1
    tol, max_smo_steps : the MIRA solver's KKT tolerance and step limit
    augment : pa, rpa and mira use the loss-augmented k best (eq. 12); False:
        the k best by score (prediction-based updates)

    Returns
    -------
    n_mistakes : sentences whose best (loss-augmented for pa, rpa, mira)
        sequence was not the gold one
    n_updates : sequences that received a non-zero update
    n_seen : the averaging clock after the epoch
    """
    cdef Py_ssize_t L = W.shape[1], n_sent = order.shape[0]
    cdef Py_ssize_t i, s, j, T, row0, n, m, max_T = 0, max_nnz = 0
    cdef double[:, ::1] Ws, Ps
    cdef Weights w
    cdef Corpus X
    X.indptr = &indptr[0]
    X.indices = &indices[0] if indices.shape[0] > 0 else NULL
    X.data = &data[0] if data.shape[0] > 0 else NULL
    w.W = &W[0, 0]
    w.P = &P[0, 0]
    w.L = L
    w.chain_base = <long long>W.shape[0] * L
    w.W_sum = NULL
    w.P_sum = NULL
    if W_sum is not None:
        Ws = W_sum
        Ps = P_sum
        w.W_sum = &Ws[0, 0]
        w.P_sum = &Ps[0, 0]
    for i in range(n_sent):
        s = order[i]
        max_T = max(max_T, offsets[s + 1] - offsets[s])
        max_nnz = max(max_nnz, indptr[offsets[s + 1]] - indptr[offsets[s]])
    cdef bint augmented = rule != RULE_PERCEPTRON and augment
    # the 0/1-augmented k best are among the k + 1 best by score
    cdef Py_ssize_t K = max(k, 1) + (1 if augmented and cost == COST_ZERO_ONE else 0)
    cdef Py_ssize_t n_diffs = K + 1 if rule == RULE_MIRA else 1
    work = _Workspace(max_T, max_nnz, L, K, n_diffs)
    cdef _Workspace ws = work
    cdef long long n_mistakes = 0, n_updates = 0
    cdef const int* gold
    cdef int* path
    cdef double ell, sq, step, ell_hat
    cdef bint stale
    with nogil:
        for i in range(n_sent):
            s = order[i]
            row0 = offsets[s]
            T = offsets[s + 1] - row0
            gold = &y[row0]
            n = decode_candidates(ws, &X, row0, T, gold, &w, k, augmented, cost)
            if not same_path(ws.paths, gold, T):
                n_mistakes += 1
            if rule == RULE_MIRA:
                n_updates += _mira_example(&X, row0, T, gold, ws, n, &w, C, cost, tol,
                                           max_smo_steps, <double>n_seen)
                n_seen += 1
                continue
            stale = True
            ell_hat = 0.0
            for j in range(n):
                path = ws.paths + j * T
                if same_path(path, gold, T):
                    continue
                if rule == RULE_PERCEPTRON:
                    # k-best perceptron (eq. 36): update when w.dF(y) <= 0, with the
                    # weights left by the previous update of this example
                    if margin(&X, row0, T, gold, path, &w) <= 0.0:
                        add_difference(&X, row0, T, gold, path, &w, 1.0, <double>n_seen)
                        n_updates += 1
                    continue
                # passive-aggressive: loss l(w; y) = L(y^n, y) - w.dF(y) (eq. 25)
                ell = cost_of(gold, path, T, cost) - margin(&X, row0, T, gold, path, &w)
                if ell <= 0.0:
                    continue
                if rule == RULE_RPA:
                    # restricted PA (eqs. 27-28): y must be in A_w, i.e. lose at
                    # least as much as the prediction y_hat of the current weights
                    if stale:
                        compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, ws.E)
                        viterbi(ws.E, T, L, w.P, ws.kb.delta, ws.kb.back, ws.y_hat)
                        ell_hat = (cost_of(gold, ws.y_hat, T, cost)
                                   - margin(&X, row0, T, gold, ws.y_hat, &w))
                        stale = False
                    if ell < ell_hat:
                        continue
                build_diff(&X, row0, T, gold, path, &w, &ws.diffs[0])
                sq = diff_sqnorm(&ws.table, &ws.diffs[0])
                step = ell / sq if sq > 0.0 else C
                if step > C:
                    step = C
                apply_diff(&ws.diffs[0], &w, step, <double>n_seen)
                n_updates += 1
                stale = True
            n_seen += 1
    return n_mistakes, n_updates, n_seen


cdef Py_ssize_t decode_candidates(_Workspace ws, Corpus* X, Py_ssize_t row0, Py_ssize_t T,
                                  const int* gold, Weights* w, Py_ssize_t k, bint augmented,
                                  int cost) noexcept nogil:
    """The k best sequences of one sentence under the current weights, into
    ws.paths (best first; scores in ws.scores); returns how many exist.

    With ``augmented`` they are the loss-augmented best of eq. 12, argmax
    w.F(x, y) + L(y^n, y): Hamming cost is added to the emissions; the 0/1
    k best are the (k + 1) best by score re-ranked with the loss."""
    cdef Py_ssize_t n, L = w.L
    cdef bint zero_one = augmented and cost == COST_ZERO_ONE
    cdef Py_ssize_t K = max(k, 1) + (1 if zero_one else 0)
    compute_emission(X.indptr, X.indices, X.data, row0, T, w.W, L, ws.E)
    if augmented and not zero_one:
        add_hamming(ws.E, T, L, gold, 1.0)
    n = kbest(ws.E, T, L, w.P, K, &ws.kb, ws.paths, ws.scores)
    if zero_one:
        n = _rerank_zero_one(ws.paths, ws.scores, n, T, gold, k, ws.order)
    return n


cdef Py_ssize_t _rerank_zero_one(int* paths, double* scores, Py_ssize_t n, Py_ssize_t T,
                                 const int* gold, Py_ssize_t k, int* tmp) noexcept nogil:
    """Turn the n best sequences by score into the (up to) k best by score + 0/1
    loss: every non-gold sequence gains 1, the gold one keeps its place value.
    Stable insertion sort of the n entries, then keep k."""
    cdef Py_ssize_t a, b, t
    cdef double sa
    cdef int* row = tmp + T
    for a in range(n):
        if not same_path(paths + a * T, gold, T):
            scores[a] += 1.0
    for a in range(1, n):
        sa = scores[a]
        for t in range(T):
            row[t] = paths[a * T + t]
        b = a - 1
        while b >= 0 and scores[b] < sa:
            scores[b + 1] = scores[b]
            for t in range(T):
                paths[(b + 1) * T + t] = paths[b * T + t]
            b -= 1
        scores[b + 1] = sa
        for t in range(T):
            paths[(b + 1) * T + t] = row[t]
    return n if n < k else k


cdef long long _mira_example(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                             _Workspace ws, Py_ssize_t n, Weights* w, double C, int cost,
                             double tol, Py_ssize_t max_steps, double n_seen) noexcept nogil:
    """k-best MIRA on one example: build dF for the non-gold sequences among the
    k best, solve the QP over them by SMO, apply w += sum_j a_j dF_j."""
    cdef Py_ssize_t j, a, b, m = 1, L = w.L
    cdef long long updated = 0
    cdef int* path
    ws.ell[0] = 0.0
    for j in range(n):
        path = ws.paths + j * T
        if same_path(path, gold, T):
            continue
        build_diff(X, row0, T, gold, path, w, &ws.diffs[m])
        ws.ell[m] = cost_of(gold, path, T, cost) - margin(X, row0, T, gold, path, w)
        m += 1
    if m == 1:
        return 0
    for a in range(m):
        ws.G[a * m] = 0.0
        ws.G[a] = 0.0
    for a in range(1, m):
        table_load(&ws.table, &ws.diffs[a])
        ws.G[a * m + a] = table_sqnorm(&ws.table)
        for b in range(a + 1, m):
            ws.G[a * m + b] = table_dot(&ws.table, &ws.diffs[b])
            ws.G[b * m + a] = ws.G[a * m + b]
        table_clear(&ws.table)
    smo(ws.G, ws.ell, m, C, tol, max_steps, ws.alpha, ws.grad)
    for a in range(1, m):
        if ws.alpha[a] > 0.0:
            apply_diff(&ws.diffs[a], w, ws.alpha[a], n_seen)
            updated += 1
    return updated


cdef class _Workspace:
    """Scratch buffers of one epoch, sized for the longest sentence."""

    def __cinit__(self, Py_ssize_t max_T, Py_ssize_t max_nnz, Py_ssize_t L, Py_ssize_t K,
                  Py_ssize_t n_diffs):
        cdef Py_ssize_t i
        max_T = max(max_T, 1)
        self.n_diffs = n_diffs
        self.E = <double*>malloc(max_T * L * sizeof(double))
        if kbest_alloc(&self.kb, max_T, L, K) < 0:
            raise MemoryError()
        self.paths = <int*>malloc(K * max_T * sizeof(int))
        self.scores = <double*>malloc(K * sizeof(double))
        self.y_hat = <int*>malloc(max_T * sizeof(int))
        self.order = <int*>malloc(2 * max_T * sizeof(int))
        self.G = <double*>malloc(n_diffs * n_diffs * sizeof(double))
        self.ell = <double*>malloc(n_diffs * sizeof(double))
        self.alpha = <double*>malloc(n_diffs * sizeof(double))
        self.grad = <double*>malloc(n_diffs * sizeof(double))
        self.table.keys = NULL
        self.table.vals = NULL
        self.table.used = NULL
        if table_init(&self.table, diff_capacity(max_nnz, max_T)) < 0:
            raise MemoryError()
        self.diffs = <Diff*>malloc(n_diffs * sizeof(Diff))
        if self.diffs != NULL:
            for i in range(n_diffs):
                self.diffs[i].e = NULL
                self.diffs[i].n = 0
            for i in range(n_diffs):
                self.diffs[i].e = <Entry*>malloc(diff_capacity(max_nnz, max_T) * sizeof(Entry))
                if self.diffs[i].e == NULL:
                    raise MemoryError()
        if (self.E == NULL or self.paths == NULL
                or self.scores == NULL or self.y_hat == NULL or self.order == NULL
                or self.G == NULL or self.ell == NULL or self.alpha == NULL
                or self.grad == NULL or self.diffs == NULL):
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        free(self.E); free(self.paths); free(self.scores)
        kbest_free(&self.kb)
        free(self.y_hat); free(self.order); free(self.G); free(self.ell)
        free(self.alpha); free(self.grad)
        table_free(&self.table)
        if self.diffs != NULL:
            for i in range(self.n_diffs):
                free(self.diffs[i].e)
            free(self.diffs)
