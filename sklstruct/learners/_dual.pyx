# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The dual machinery of the k-best SDM and LaRank learners, in C.

Mancev & Todorovic, section 3: the N-slack structural SVM dual

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
through the Gram matrix and w once, at the end), and the SMO of the shared
QP solver (:mod:`sklstruct._qp`: maximum violating pairs of eq. 18, the
stopping rule of eq. 17, the clipped step of eq. 20) runs on it.  Columns of
the Gram matrix of S_n are computed exactly and only for the sequences a step
touches (a column callback of the solver).  Each step raises the dual
objective  D = sum lambda L - 1/2 ||w||^2  (minus eq. 4) by
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

from sklstruct._chain cimport (ChainData, ChainWeights, Corpus, Diff, Entry, KeyTable,
                               Weights, Workspace, COST_HAMMING, apply_diff, build_diff,
                               candidates_needed, cost_of, decode_candidates, diff_capacity,
                               margin, same_path, table_clear, table_dot, table_free,
                               table_init, table_load)
from sklstruct._qp cimport SimplexQP, simplex_smo


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


cdef struct Columns:
    # what the lazy Gram column callback of one working set needs
    Diff* diffs
    char* built
    char* have_col
    double* G               # column j of the working set's Gram matrix at G + j * m
    KeyTable* table
    WSet* s
    Corpus* X
    Py_ssize_t row0
    Weights* w


cdef inline Diff* _diff(Columns* c, Py_ssize_t j) noexcept nogil:
    if not c.built[j]:
        build_diff(c.X, c.row0, c.s.T, c.s.seqs, c.s.seqs + j * c.s.T, c.w, &c.diffs[j])
        c.built[j] = 1
    return &c.diffs[j]


cdef const double* _column(void* ctx, Py_ssize_t j) noexcept nogil:
    """Column j of the Gram matrix K_n of the working set, exactly: dF_j is
    held in the hash table, every dF_i is dotted with it (the solver's column
    callback)."""
    cdef Columns* c = <Columns*>ctx
    cdef Py_ssize_t i, m = c.s.m
    cdef double* col = c.G + j * m
    if not c.have_col[j]:
        table_load(c.table, _diff(c, j))
        for i in range(m):
            col[i] = table_dot(c.table, _diff(c, i))
        table_clear(c.table)
        c.have_col[j] = 1
    return col


cdef struct Visit:
    # what every operation of a pass needs beyond the example: the corpus and
    # weights, the candidates (k, cost, max_size), the SMO (tol, kappa,
    # max_steps), LaRank's pruning, the optional trace of the dual objective
    Corpus* X
    Weights* w
    Py_ssize_t k
    int cost
    Py_ssize_t max_size
    double tol
    double kappa
    Py_ssize_t max_steps
    bint prune
    double* trace
    Py_ssize_t* n_trace
    Py_ssize_t trace_cap


cdef Py_ssize_t smo_example(DualState st, Py_ssize_t n, Py_ssize_t row0, _DualWork dw,
                            Visit* v, bint support_only) noexcept nogil:
    """SMO on the working set of example n (its rows from ``row0``) until its
    KKT conditions hold to ``v.tol`` (eqs. 17-20), then
    w += sum_y (lambda_y - lambda_y^old) dF(y) (eq. 9).  With
    ``support_only`` only sequences whose lambda is already > 0 may receive
    mass (kBV-Optimize of Mancev & Todorovic, section 4.3: "among non-zero
    coefficients", so that it adds no support vector, as the proof of
    Proposition 1 requires).  With a ``v.trace`` the dual objective is
    recorded after every step.  Returns the number of steps, or -1 if
    memory ran out."""
    cdef Corpus* X = v.X
    cdef Weights* w = v.w
    cdef double tol = v.tol, kappa = v.kappa
    cdef Py_ssize_t max_steps = v.max_steps
    cdef WSet* s = &st.sets[n]
    cdef Py_ssize_t j, steps = 0, done, m = s.m, T = s.T
    cdef double d, gain = 0.0
    cdef Columns cols
    cdef SimplexQP qp
    if m < 2 or dw.ensure(m) < 0:
        return 0 if m < 2 else -1
    for j in range(m):
        dw.built[j] = 0
        dw.have_col[j] = 0
        dw.lam0[j] = s.lam[j]
        # gradient of eq. 19 at the current w: w.dF(y) - L(y^n, y)
        dw.grad[j] = (margin(X, row0, T, s.seqs, s.seqs + j * T, w) - s.cost[j]) if j else 0.0
    cols.diffs = dw.diffs
    cols.built = dw.built
    cols.have_col = dw.have_col
    cols.G = dw.G
    cols.table = &dw.table
    cols.s = s
    cols.X = X
    cols.row0 = row0
    cols.w = w
    qp.m = m
    qp.alpha = s.lam
    qp.grad = dw.grad
    qp.column = _column
    qp.ctx = &cols
    if v.trace == NULL:
        steps = simplex_smo(&qp, tol, kappa, support_only, max_steps, &gain)
        if steps < 0:
            return -1
        st.objective += gain
    else:
        while steps < max_steps:
            gain = 0.0
            done = simplex_smo(&qp, tol, kappa, support_only, 1, &gain)
            if done < 0:
                return -1
            if done == 0:
                break
            st.objective += gain
            if v.n_trace[0] < v.trace_cap:
                v.trace[v.n_trace[0]] = st.objective
                v.n_trace[0] += 1
            steps += 1
    for j in range(1, m):
        d = s.lam[j] - dw.lam0[j]
        if d != 0.0:
            apply_diff(_diff(&cols, j), w, d)
    return steps


cdef int add_candidates(DualState st, Py_ssize_t n, Workspace ws, Corpus* X, Py_ssize_t row0,
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


cdef Py_ssize_t _visit(DualState st, Py_ssize_t n, bint add, bint support_only, Workspace ws,
                       _DualWork dw, Visit* v, bint* mistake) noexcept nogil:
    """One operation on example n: with ``add``, S_n += its k loss-augmented
    best sequences (kBV-ProcessNew / kBV-ProcessOld); then SMO on S_n
    (``support_only``: kBV-Optimize), LaRank's pruning, and the bookkeeping of
    support patterns.  Returns the SMO steps, or -1 if memory ran out."""
    cdef Py_ssize_t steps, row0 = v.X.offsets[n]
    if add and add_candidates(st, n, ws, v.X, row0, v.w, v.k, v.cost, v.max_size,
                              mistake) < 0:
        return -1
    steps = smo_example(st, n, row0, dw, v, support_only)
    if steps < 0:
        return -1
    if v.prune:
        _prune(&st.sets[n])
    st._set_pattern(n)
    return steps


cdef struct Schedule:
    # the operations of a pass beyond kBV-ProcessNew (LaRank's)
    Py_ssize_t n_reprocess
    Py_ssize_t n_optimize
    Py_ssize_t max_size
    bint prune


def _schedule(Py_ssize_t n_reprocess=0, Py_ssize_t n_optimize=10, Py_ssize_t max_size=0,
              bint prune=False):
    """The keywords of :func:`dual_epoch` that shape a pass, checked for names and types."""
    return Schedule(n_reprocess, n_optimize, max_size, prune)


def dual_epoch(DualState st, ChainData data, const long long[::1] order,
               ChainWeights weights, Py_ssize_t k, int cost=COST_HAMMING, double tol=1e-6,
               double kappa=0.0, Py_ssize_t max_smo_steps=1000, double[::1] trace=None,
               **schedule):
    """One pass of k-best SDM / LaRank over the examples in ``order``.

    Parameters
    ----------
    st : DualState of the whole training set (its lambdas and w must agree)
    data : ChainData, the stacked corpus (validated by the caller)
    order : int64 array of example indices, visited in that order
    weights : ChainWeights, updated in place (and its averaging clock); they
        must equal sum lambda dF for ``st`` (eq. 6)
    k : sequences added per kBV-ProcessNew / kBV-ProcessOld
    cost : COSTS code of L(y^n, y)
    tol, kappa : the KKT tolerances tau and kappa of eqs. 17-18
    max_smo_steps : cap on SMO steps per operation
    trace : optional array, filled with the dual objective after each SMO step
    **schedule : the shape of a pass (:func:`_schedule`)
        n_reprocess : kBV-Reprocess operations after each new example
        (n_R; default 0); n_optimize : kBV-Optimize steps in each
        kBV-Reprocess (10, as in the paper); max_size : cap on a working
        set's size (0: none); prune : drop sequences whose lambda returns to
        0 (LaRank; default False)

    Returns
    -------
    n_mistakes : examples whose loss-augmented best sequence was not gold at kBV-ProcessNew
    n_steps : SMO steps taken
    n_trace : entries of ``trace`` filled
    """
    cdef Py_ssize_t i, r, o, n, p, N = order.shape[0], steps
    cdef Schedule plan = _schedule(**schedule)
    cdef Py_ssize_t n_reprocess = plan.n_reprocess, n_optimize = plan.n_optimize
    if st.n_examples != data.n_sentences:
        raise ValueError("the dual state belongs to another training set")
    cdef Workspace ws = Workspace(data, weights.n_labels, weights.order,
                                  candidates_needed(k, True, cost), 1)
    cdef _DualWork dw = _DualWork(diff_capacity(data.max_nnz, data.max_T))
    cdef Weights* w = weights.bind()
    cdef long long n_mistakes = 0, n_steps = 0
    cdef bint mistake, failed = False
    cdef Py_ssize_t n_trace = 0
    cdef Visit v
    v.X = &data.c
    v.w = w
    v.k = k
    v.cost = cost
    v.max_size = plan.max_size
    v.tol = tol
    v.kappa = kappa
    v.max_steps = max_smo_steps
    v.prune = plan.prune
    v.trace = NULL
    v.n_trace = &n_trace
    v.trace_cap = 0
    if trace is not None and trace.shape[0] > 0:
        v.trace = &trace[0]
        v.trace_cap = trace.shape[0]
    with nogil:
        for i in range(N):
            n = order[i]
            # kBV-ProcessNew
            steps = _visit(st, n, True, False, ws, dw, &v, &mistake)
            if steps < 0:
                failed = True
                break
            n_mistakes += mistake
            n_steps += steps
            w.n_seen += 1
            for r in range(n_reprocess):
                # kBV-Reprocess: kBV-ProcessOld (o == 0: new sequences may get
                # mass), then n_optimize x kBV-Optimize (o > 0: mass moves only
                # among the non-zero coefficients)
                for o in range(n_optimize + 1):
                    p = st._random_pattern()
                    if p < 0:
                        break
                    steps = _visit(st, p, o == 0, o > 0, ws, dw, &v, &mistake)
                    if steps < 0:
                        failed = True
                        break
                    n_steps += steps
                if failed:
                    break
            if failed:
                break
    weights.n_seen = <long long>w.n_seen
    if failed:
        raise MemoryError("out of memory growing the working sets")
    return n_mistakes, n_steps, n_trace
