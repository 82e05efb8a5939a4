# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The dual machinery of the k-best SDM and LaRank learners, in C.

Paper 000 (Mancev & Todorovic), section 3: the N-slack structural SVM dual

    min_lambda  1/2 lambda' K lambda - lambda' L                         (4)
    s.t.  sum_y lambda_{n,y} = C,  lambda_{n,y} >= 0                      (5)
    w = sum_n sum_y lambda_{n,y} dF_n(y)                                  (6)

is optimised one example at a time over a working set S_n of label sequences
per example.  ``DualState`` stores, for every example, the sequences of S_n
(not dense difference vectors: memory grows with the number of sequences),
their dual variables lambda_{n,y} and costs L(y^n, y).  Row 0 of every set is
the gold sequence y^n; it starts with lambda = C, the others with 0, and w = 0
(Algorithms 2 and 3), so eq. 6 holds from the start and every SMO step keeps
it: a step moves dual mass between two sequences of one example and adds the
matching multiple of dF to w (eq. 9).

``smo_example`` is the solver shared by every operation: the gradient of
eq. 19 at the w of the visit's start is g_y = w.dF(y) - L(y^n, y) (the
alphas of earlier visits are already in w; during the visit g is updated
through the Gram matrix and w once, at the end); it repeatedly takes the maximum violating pair of eq. 18, y' = argmin
g over S_n and y'' = argmax g over the sequences with lambda > kappa, stops
when g(y'') - g(y') <= tau (eq. 17), and otherwise moves
delta = min(lambda_{y''}, (g(y'') - g(y')) / ||dF(y') - dF(y'')||^2)
from y'' to y' (eq. 20).  Columns of the Gram matrix of S_n are computed
exactly and only for the sequences a step touches.  Each step raises the
dual objective  D = sum lambda L - 1/2 ||w||^2  (minus eq. 4) by
delta (g'' - g') - delta^2 ||dF' - dF''||^2 / 2 >= 0; ``DualState`` keeps D.

``dual_epoch`` runs one pass: for each example kBV-ProcessNew (add its k
loss-augmented best sequences B^k_w, eq. 12, to S_n and run SMO), then
``n_reprocess`` times kBV-Reprocess: kBV-ProcessOld on a random support
pattern (add its current k best, SMO) followed by ``n_optimize``
kBV-Optimize steps (SMO on a random support pattern's own set).  SDM is
``n_reprocess = 0`` with working sets kept whole (Algorithm 2); LaRank drops
sequences whose lambda returns to 0 (Algorithm 3).
"""
import numpy as np

from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove

from sklstruct._online cimport (Corpus, Diff, Entry, KeyTable, Weights, _Workspace,
                                apply_diff, build_diff, cost_of, decode_candidates,
                                diff_capacity, margin, same_path, table_clear, table_dot,
                                table_free, table_init, table_load)


cdef struct WSet:
    int* seqs          # cap x T labels; row 0 is the gold sequence
    double* lam        # lambda_{n,y}
    double* cost       # L(y^n, y)
    Py_ssize_t m       # sequences held
    Py_ssize_t cap
    Py_ssize_t T


cdef inline unsigned long long _next_random(unsigned long long* state) noexcept nogil:
    """xorshift64*: the random picks of kBV-ProcessOld and kBV-Optimize."""
    cdef unsigned long long x = state[0]
    x ^= x >> 12
    x ^= x << 25
    x ^= x >> 27
    state[0] = x
    return x * 0x2545F4914F6CDD1DULL


cdef class DualState:
    """Working sets, dual variables and the dual objective of all examples.

    Parameters
    ----------
    offsets : int64 array (n_sentences + 1,)
        Sentence boundaries of the stacked corpus.
    y : int32 array
        The encoded gold labels, one per token.
    C : float
        The slack weight: each example's lambdas sum to C.
    """
    cdef WSet* sets
    cdef readonly Py_ssize_t n_examples
    cdef readonly double C
    cdef public double objective
    cdef int* patterns          # support patterns: examples with a non-gold lambda > 0
    cdef int* pattern_pos       # position in ``patterns`` or -1
    cdef Py_ssize_t n_patterns
    cdef unsigned long long rng

    def __cinit__(self, const long long[::1] offsets, const int[::1] y, double C):
        cdef Py_ssize_t n, N = offsets.shape[0] - 1, T
        self.n_examples = N
        self.C = C
        self.objective = 0.0
        self.n_patterns = 0
        self.rng = 0x9E3779B97F4A7C15ULL
        self.sets = <WSet*>malloc(max(N, 1) * sizeof(WSet))
        self.patterns = <int*>malloc(max(N, 1) * sizeof(int))
        self.pattern_pos = <int*>malloc(max(N, 1) * sizeof(int))
        if self.sets == NULL or self.patterns == NULL or self.pattern_pos == NULL:
            raise MemoryError()
        for n in range(N):
            self.sets[n].seqs = NULL
            self.sets[n].lam = NULL
            self.sets[n].cost = NULL
        for n in range(N):
            T = offsets[n + 1] - offsets[n]
            self.sets[n].T = T
            self.sets[n].m = 1
            self.sets[n].cap = 0
            if _grow(&self.sets[n], 4) < 0:
                raise MemoryError()
            memcpy(self.sets[n].seqs, &y[offsets[n]], T * sizeof(int))
            self.sets[n].lam[0] = C
            self.sets[n].cost[0] = 0.0
            self.pattern_pos[n] = -1

    def __dealloc__(self):
        cdef Py_ssize_t n
        if self.sets != NULL:
            for n in range(self.n_examples):
                free(self.sets[n].seqs)
                free(self.sets[n].lam)
                free(self.sets[n].cost)
            free(self.sets)
        free(self.patterns)
        free(self.pattern_pos)

    def seed(self, unsigned long long value):
        """Seed the generator of the random picks (any value; 0 is remapped)."""
        self.rng = value if value != 0 else 0x9E3779B97F4A7C15ULL

    @property
    def n_support(self):
        """Number of pairs (n, y) with lambda_{n,y} > 0, gold sequences included
        (every gold counts from the start: its lambda is C before its example
        is first visited)."""
        cdef Py_ssize_t n, j, count = 0
        for n in range(self.n_examples):
            for j in range(self.sets[n].m):
                if self.sets[n].lam[j] > 0.0:
                    count += 1
        return count

    @property
    def n_sequences(self):
        """Number of sequences held in all working sets (gold ones included)."""
        cdef Py_ssize_t n, count = 0
        for n in range(self.n_examples):
            count += self.sets[n].m
        return count

    @property
    def n_support_patterns(self):
        return self.n_patterns

    def export(self):
        """The working sets as arrays: ``sizes`` (n_examples,), and for all
        sequences in example order, ``sequences`` (concatenated labels),
        ``lam`` and ``cost``; plus the lengths ``T``."""
        cdef Py_ssize_t n, j, pos = 0, spos = 0, total = self.n_sequences, labels = 0
        for n in range(self.n_examples):
            labels += self.sets[n].m * self.sets[n].T
        sizes = np.empty(self.n_examples, dtype=np.int64)
        lengths = np.empty(self.n_examples, dtype=np.int64)
        seqs = np.empty(labels, dtype=np.int32)
        lam = np.empty(total)
        cost = np.empty(total)
        cdef int[::1] sv = seqs
        cdef double[::1] lv = lam, cv = cost
        for n in range(self.n_examples):
            sizes[n] = self.sets[n].m
            lengths[n] = self.sets[n].T
            for j in range(self.sets[n].m):
                lv[pos] = self.sets[n].lam[j]
                cv[pos] = self.sets[n].cost[j]
                pos += 1
            if self.sets[n].m * self.sets[n].T > 0:
                memcpy(&sv[spos], self.sets[n].seqs, self.sets[n].m * self.sets[n].T * sizeof(int))
            spos += self.sets[n].m * self.sets[n].T
        return {"sizes": sizes, "T": lengths, "sequences": seqs, "lam": lam, "cost": cost}

    def working_set(self, Py_ssize_t n):
        """(sequences (m, T) int32, lambda (m,), cost (m,)) of example n; row 0 is gold."""
        if not 0 <= n < self.n_examples:
            raise IndexError(f"example {n} out of range")
        cdef WSet* s = &self.sets[n]
        seqs = np.empty((s.m, s.T), dtype=np.int32)
        lam = np.empty(s.m)
        cost = np.empty(s.m)
        cdef Py_ssize_t j, t
        for j in range(s.m):
            lam[j] = s.lam[j]
            cost[j] = s.cost[j]
            for t in range(s.T):
                seqs[j, t] = s.seqs[j * s.T + t]
        return seqs, lam, cost

    def __reduce__(self):
        state = self.export()
        patterns = np.array([self.patterns[i] for i in range(self.n_patterns)], dtype=np.int64)
        return (_rebuild_state, (state, self.C, self.objective, self.rng, patterns))

    cdef void _set_pattern(self, Py_ssize_t n) noexcept nogil:
        """Keep ``patterns`` equal to the examples with a non-gold lambda > 0."""
        cdef Py_ssize_t j, last
        cdef bint support = False
        cdef WSet* s = &self.sets[n]
        for j in range(1, s.m):
            if s.lam[j] > 0.0:
                support = True
                break
        if support and self.pattern_pos[n] < 0:
            self.pattern_pos[n] = <int>self.n_patterns
            self.patterns[self.n_patterns] = <int>n
            self.n_patterns += 1
        elif not support and self.pattern_pos[n] >= 0:
            last = self.patterns[self.n_patterns - 1]
            self.patterns[self.pattern_pos[n]] = <int>last
            self.pattern_pos[last] = self.pattern_pos[n]
            self.pattern_pos[n] = -1
            self.n_patterns -= 1

    cdef Py_ssize_t _random_pattern(self) noexcept nogil:
        if self.n_patterns == 0:
            return -1
        return self.patterns[_next_random(&self.rng) % <unsigned long long>self.n_patterns]


def _rebuild_state(state, double C, double objective, unsigned long long rng, patterns):
    """Unpickle a DualState from its exported arrays."""
    sizes, lengths = state["sizes"], state["T"]
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    seqs = np.ascontiguousarray(state["sequences"], dtype=np.int32)
    lam, cost = state["lam"], state["cost"]
    # gold sequences are the first row of each set
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes * lengths, out=starts[1:])
    gold = np.concatenate([seqs[starts[n]:starts[n] + lengths[n]] for n in range(len(sizes))]
                          or [np.zeros(0, np.int32)]).astype(np.int32)
    cdef DualState st = DualState(offsets, gold, C)
    cdef Py_ssize_t n, j, t, pos = 0
    cdef WSet* s
    for n in range(len(sizes)):
        s = &st.sets[n]
        if _grow(s, sizes[n]) < 0:
            raise MemoryError()
        s.m = sizes[n]
        for j in range(s.m):
            s.lam[j] = lam[pos + j]
            s.cost[j] = cost[pos + j]
            for t in range(s.T):
                s.seqs[j * s.T + t] = seqs[starts[n] + j * s.T + t]
        pos += s.m
    for p in patterns:
        st._set_pattern(p)
    st.objective = objective
    st.rng = rng
    return st


cdef int _grow(WSet* s, Py_ssize_t cap) noexcept nogil:
    """Make room for ``cap`` sequences in a working set; -1 on failure."""
    cdef int* seqs
    cdef double* lam
    cdef double* cost
    if cap <= s.cap:
        return 0
    seqs = <int*>realloc(s.seqs, cap * max(s.T, 1) * sizeof(int))
    if seqs == NULL:
        return -1
    s.seqs = seqs
    lam = <double*>realloc(s.lam, cap * sizeof(double))
    if lam == NULL:
        return -1
    s.lam = lam
    cost = <double*>realloc(s.cost, cap * sizeof(double))
    if cost == NULL:
        return -1
    s.cost = cost
    s.cap = cap
    return 0


cdef void _remove(WSet* s, Py_ssize_t j) noexcept nogil:
    """Drop sequence j (> 0) of a working set, keeping the order of the rest."""
    cdef Py_ssize_t rest = s.m - j - 1
    if rest > 0:
        memmove(s.seqs + j * s.T, s.seqs + (j + 1) * s.T, rest * s.T * sizeof(int))
        memmove(s.lam + j, s.lam + j + 1, rest * sizeof(double))
        memmove(s.cost + j, s.cost + j + 1, rest * sizeof(double))
    s.m -= 1


cdef class _DualWork:
    """Per-visit scratch of the SMO solver: one dF per sequence of the working
    set (built on demand), the gradient, the Gram matrix by columns, and a
    KeyTable that holds one dF to take exact products with it."""
    cdef Diff* diffs
    cdef KeyTable table
    cdef char* built
    cdef char* have_col
    cdef double* grad
    cdef double* lam0
    cdef double* G
    cdef Py_ssize_t cap, diff_cap, entry_cap

    def __cinit__(self, Py_ssize_t entry_cap):
        self.cap = 0
        self.diff_cap = 0
        self.entry_cap = max(entry_cap, 1)
        self.diffs = NULL
        self.built = NULL
        self.have_col = NULL
        self.grad = NULL
        self.lam0 = NULL
        self.G = NULL
        self.table.keys = NULL
        self.table.vals = NULL
        self.table.used = NULL
        if table_init(&self.table, self.entry_cap) < 0:
            raise MemoryError()

    def __dealloc__(self):
        cdef Py_ssize_t i
        for i in range(self.diff_cap):
            free(self.diffs[i].e)
        free(self.diffs); free(self.built); free(self.have_col)
        free(self.grad); free(self.lam0); free(self.G)
        table_free(&self.table)

    cdef int ensure(self, Py_ssize_t m) noexcept nogil:
        """Room for a working set of m sequences; -1 on failure."""
        cdef Py_ssize_t i, cap
        cdef Diff* diffs
        if m <= self.cap:
            return 0
        cap = max(m, 2 * self.cap)
        diffs = <Diff*>realloc(self.diffs, cap * sizeof(Diff))
        if diffs == NULL:
            return -1
        self.diffs = diffs
        for i in range(self.diff_cap, cap):
            self.diffs[i].n = 0
            self.diffs[i].e = <Entry*>malloc(self.entry_cap * sizeof(Entry))
            if self.diffs[i].e == NULL:
                self.diff_cap = i
                return -1
        self.diff_cap = cap
        free(self.built); free(self.have_col); free(self.grad); free(self.lam0); free(self.G)
        self.built = <char*>malloc(cap)
        self.have_col = <char*>malloc(cap)
        self.grad = <double*>malloc(cap * sizeof(double))
        self.lam0 = <double*>malloc(cap * sizeof(double))
        self.G = <double*>malloc(cap * cap * sizeof(double))
        if (self.built == NULL or self.have_col == NULL or self.grad == NULL
                or self.lam0 == NULL or self.G == NULL):
            self.cap = 0
            return -1
        self.cap = cap
        return 0


cdef inline Diff* _diff(_DualWork dw, WSet* s, Py_ssize_t j, Corpus* X, Py_ssize_t row0,
                        Weights* w) noexcept nogil:
    if not dw.built[j]:
        build_diff(X, row0, s.T, s.seqs, s.seqs + j * s.T, w, &dw.diffs[j])
        dw.built[j] = 1
    return &dw.diffs[j]


cdef void _column(_DualWork dw, WSet* s, Py_ssize_t j, Corpus* X, Py_ssize_t row0,
                  Weights* w) noexcept nogil:
    """Column j of the Gram matrix K_n of the working set, exactly: dF_j is
    held in the hash table, every dF_i is dotted with it."""
    cdef Py_ssize_t i, m = s.m
    cdef double v
    if dw.have_col[j]:
        return
    table_load(&dw.table, _diff(dw, s, j, X, row0, w))
    for i in range(m):
        v = table_dot(&dw.table, _diff(dw, s, i, X, row0, w))
        dw.G[i * m + j] = v
        dw.G[j * m + i] = v
    table_clear(&dw.table)
    dw.have_col[j] = 1


cdef Py_ssize_t smo_example(DualState st, Py_ssize_t n, Corpus* X, Py_ssize_t row0,
                            Weights* w, _DualWork dw, double tol, double kappa,
                            Py_ssize_t max_steps, double n_seen, double* trace,
                            Py_ssize_t* n_trace, Py_ssize_t trace_cap,
                            bint support_only=False) noexcept nogil:
    """SMO on the working set of example n until its KKT conditions hold to
    ``tol`` (eqs. 17-20), then w += sum_y (lambda_y - lambda_y^old) dF(y)
    (eq. 9).  With ``support_only`` only sequences whose lambda is already
    > 0 may receive mass (kBV-Optimize of paper 000, section 4.3: "among
    non-zero coefficients", so that it adds no support vector, as the proof
    of Proposition 1 requires).  Returns the number of steps, or -1 if
    memory ran out."""
    cdef WSet* s = &st.sets[n]
    cdef Py_ssize_t i, j, up, down, steps = 0, m = s.m, T = s.T
    cdef double delta, q, gap, d
    cdef double* lam = s.lam
    if m < 2 or dw.ensure(m) < 0:
        return 0 if m < 2 else -1
    for j in range(m):
        dw.built[j] = 0
        dw.have_col[j] = 0
        dw.lam0[j] = lam[j]
        # gradient of eq. 19 at the current w: w.dF(y) - L(y^n, y)
        dw.grad[j] = (margin(X, row0, T, s.seqs, s.seqs + j * T, w) - s.cost[j]) if j else 0.0
    while steps < max_steps:
        up = -1
        down = -1
        for i in range(m):
            if (not support_only or lam[i] > 0.0) and (up < 0 or dw.grad[i] < dw.grad[up]):
                up = i
            if lam[i] > kappa and (down < 0 or dw.grad[i] > dw.grad[down]):
                down = i
        if down < 0 or up < 0:
            break
        gap = dw.grad[down] - dw.grad[up]
        if gap <= tol:
            break
        _column(dw, s, up, X, row0, w)
        _column(dw, s, down, X, row0, w)
        q = dw.G[up * m + up] + dw.G[down * m + down] - 2.0 * dw.G[up * m + down]
        delta = lam[down]
        if q > 0.0 and gap / q < delta:
            delta = gap / q
        lam[up] += delta
        lam[down] -= delta
        for i in range(m):
            dw.grad[i] += delta * (dw.G[i * m + up] - dw.G[i * m + down])
        st.objective += delta * gap - 0.5 * delta * delta * q
        if trace != NULL and n_trace[0] < trace_cap:
            trace[n_trace[0]] = st.objective
            n_trace[0] += 1
        steps += 1
    for j in range(1, m):
        d = lam[j] - dw.lam0[j]
        if d != 0.0:
            apply_diff(_diff(dw, s, j, X, row0, w), w, d, n_seen)
    return steps


cdef int add_candidates(DualState st, Py_ssize_t n, _Workspace ws, Corpus* X, Py_ssize_t row0,
                        Weights* w, Py_ssize_t k, int cost, Py_ssize_t max_size,
                        bint* mistake) noexcept nogil:
    """S_n <- S_n + B^k_w (the k loss-augmented best sequences, eq. 12), each
    new sequence with lambda = 0.  With ``max_size`` > 0 a full set makes room
    by dropping its oldest sequence whose lambda is 0 among those held before
    this call (a candidate of this call never evicts a better one of the same
    call); when there is none the remaining candidates are not added.
    Returns -1 if memory ran out."""
    cdef WSet* s = &st.sets[n]
    cdef Py_ssize_t c, j, n_cand, T = s.T, n_old = s.m
    cdef int* path
    cdef bint found
    n_cand = decode_candidates(ws, X, row0, T, s.seqs, w, k, True, cost)
    mistake[0] = not same_path(ws.paths, s.seqs, T)
    for c in range(n_cand):
        path = ws.paths + c * T
        found = False
        for j in range(s.m):
            if same_path(path, s.seqs + j * T, T):
                found = True
                break
        if found:
            continue
        if max_size > 0 and s.m >= max_size:
            for j in range(1, n_old):
                if s.lam[j] == 0.0:
                    _remove(s, j)
                    n_old -= 1
                    break
            if s.m >= max_size:
                break
        if s.m == s.cap and _grow(s, 2 * s.cap) < 0:
            return -1
        memcpy(s.seqs + s.m * T, path, T * sizeof(int))
        s.lam[s.m] = 0.0
        s.cost[s.m] = cost_of(s.seqs, path, T, cost)
        s.m += 1
    return 0


cdef void _prune(WSet* s) noexcept nogil:
    """Drop the non-gold sequences whose lambda is 0 (LaRank keeps support vectors only)."""
    cdef Py_ssize_t j = s.m - 1
    while j >= 1:
        if s.lam[j] == 0.0:
            _remove(s, j)
        j -= 1


def dual_epoch(DualState st, const long long[::1] indptr, const int[::1] indices,
               const double[::1] data, const long long[::1] offsets,
               const long long[::1] order, double[:, ::1] W, double[:, ::1] P, W_sum, P_sum,
               Py_ssize_t k, long long n_seen, int cost=0, double tol=1e-6, double kappa=0.0,
               Py_ssize_t max_smo_steps=1000, Py_ssize_t n_reprocess=0,
               Py_ssize_t n_optimize=10, Py_ssize_t max_size=0, bint prune=False,
               double[::1] trace=None):
    """One pass of k-best SDM / LaRank over the examples in ``order``.

    Parameters
    ----------
    st : DualState of the whole training set (its lambdas and w must agree)
    indptr, indices, data, offsets : the stacked corpus (validated by the caller)
    order : int64 array of example indices, visited in that order
    W, P : emission (F, L) and chain (L + 2, L) weights, updated in place;
        they must equal sum lambda dF for ``st`` (eq. 6)
    W_sum, P_sum : averaging accumulators or None
    k : sequences added per kBV-ProcessNew / kBV-ProcessOld
    n_seen : the averaging clock (examples processed before this pass)
    cost : COSTS code of L(y^n, y)
    tol, kappa : the KKT tolerances tau and kappa of eqs. 17-18
    max_smo_steps : cap on SMO steps per operation
    n_reprocess : kBV-Reprocess operations after each new example (n_R)
    n_optimize : kBV-Optimize steps in each kBV-Reprocess (10 in the paper)
    max_size : cap on a working set's size (0: none)
    prune : drop sequences whose lambda returns to 0 (LaRank)
    trace : optional array, filled with the dual objective after each SMO step

    Returns
    -------
    n_mistakes : examples whose loss-augmented best sequence was not gold at kBV-ProcessNew
    n_steps : SMO steps taken
    n_seen : the averaging clock after the pass
    n_trace : entries of ``trace`` filled
    """
    cdef Py_ssize_t L = W.shape[1], N = order.shape[0]
    cdef Py_ssize_t i, r, o, n, p, T, max_T = 0, max_nnz = 0, steps
    cdef Weights w
    cdef Corpus X
    cdef double[:, ::1] Ws, Ps
    if st.n_examples != offsets.shape[0] - 1:
        raise ValueError("the dual state belongs to another training set")
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
    for n in range(st.n_examples):
        max_T = max(max_T, offsets[n + 1] - offsets[n])
        max_nnz = max(max_nnz, indptr[offsets[n + 1]] - indptr[offsets[n]])
    cdef Py_ssize_t K = max(k, 1) + (1 if cost == 1 else 0)
    cdef _Workspace ws = _Workspace(max_T, max_nnz, L, K, 1)
    cdef _DualWork dw = _DualWork(diff_capacity(max_nnz, max_T))
    cdef long long n_mistakes = 0, n_steps = 0
    cdef bint mistake, failed = False
    cdef Py_ssize_t n_trace = 0, trace_cap = 0
    cdef double* trace_ptr = NULL
    if trace is not None and trace.shape[0] > 0:
        trace_ptr = &trace[0]
        trace_cap = trace.shape[0]
    with nogil:
        for i in range(N):
            n = order[i]
            # kBV-ProcessNew
            if add_candidates(st, n, ws, &X, offsets[n], &w, k, cost, max_size, &mistake) < 0:
                failed = True
                break
            n_mistakes += mistake
            steps = smo_example(st, n, &X, offsets[n], &w, dw, tol, kappa, max_smo_steps,
                                <double>n_seen, trace_ptr, &n_trace, trace_cap)
            if steps < 0:
                failed = True
                break
            n_steps += steps
            if prune:
                _prune(&st.sets[n])
            st._set_pattern(n)
            n_seen += 1
            for r in range(n_reprocess):
                # kBV-Reprocess: kBV-ProcessOld, then n_optimize x kBV-Optimize
                for o in range(n_optimize + 1):
                    p = st._random_pattern()
                    if p < 0:
                        break
                    if o == 0 and add_candidates(st, p, ws, &X, offsets[p], &w, k, cost,
                                                 max_size, &mistake) < 0:
                        failed = True
                        break
                    # kBV-ProcessOld (o == 0) may give mass to its new sequences;
                    # kBV-Optimize (o > 0) only moves it among the non-zero ones
                    steps = smo_example(st, p, &X, offsets[p], &w, dw, tol, kappa,
                                        max_smo_steps, <double>n_seen, trace_ptr, &n_trace,
                                        trace_cap, o > 0)
                    if steps < 0:
                        failed = True
                        break
                    n_steps += steps
                    if prune:
                        _prune(&st.sets[p])
                    st._set_pattern(p)
                if failed:
                    break
            if failed:
                break
    if failed:
        raise MemoryError("out of memory growing the working sets")
    return n_mistakes, n_steps, n_seen, n_trace
