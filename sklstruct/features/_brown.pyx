# cython: language_level=3
"""Brown clustering kernel: the windowed agglomerative algorithm of Liang
(2005), the one behind ``wcluster``, with the loss tables kept up to date
incrementally.

The model.  ``C + 2`` *slots* each hold at most one active cluster (two are
spare: the new word and the merged cluster take them).  For slots ``a``,
``b``::

    p1[a]    = count(a) / T                 (T: tokens of the corpus)
    P[a, b]  = bigrams(a -> b) / B          (B: adjacent pairs within sentences)
    PT[a, b] = P[b, a]                      (so that columns read as rows)
    BQ[a, b] = q(a, b) + q(b, a), BQ[a, a] = q(a, a),
               q(a, b) = P[a, b] log2(P[a, b] / (p1[a] p1[b]))   (0 if P = 0)
    AMI      = sum over active a <= b of BQ[a, b]
    L2[a, b] = AMI lost by merging a and b  (a < b, slot order)

The loss of a merge is the q terms that involve ``a`` or ``b`` minus the q
terms of the merged cluster.  Adding a word (slot ``s``) or merging ``s``
and ``t`` into ``u`` changes ``L2[v, w]`` of the other pairs by a few terms
in ``s``, ``t``, ``u`` (wcluster's ``compute_L2_using_old``): O(1) per pair,
and exactly zero unless ``v`` or ``w`` has a bigram with ``s`` or ``t``, so
only those pairs are touched.  The losses of the new slot against every
other (``full_loss``) are computed from per-row sums ``S1``, ``H``, ``M`` of
the terms that do not depend on the new slot, plus an explicit sum over the
new slot's neighbours, so that a rare word costs O(C * its neighbours), not
O(C^2) with logarithms.  Every step then scans the O(C^2) table for the
best merge, fused with the update.

Work over rows of the table (``update_rows``) can be split in ranges run in
threads; each pair's value is computed by the same expression whatever the
split, and the best merge is reduced over rows in slot order, so the result
does not depend on the number of threads.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport log2, INFINITY

cnp.import_array()


cdef inline double g(double p, double a, double b) noexcept nogil:
    """One mutual-information term: p log2(p / (a b)), 0 where p = 0."""
    if p == 0.0:
        return 0.0
    return p * log2(p / (a * b))


cdef inline double h(double p, double b) noexcept nogil:
    """p log2(p / b): the part of g that does not depend on the first marginal."""
    if p == 0.0:
        return 0.0
    return p * log2(p / b)


cdef class BrownKernel:
    """The tables of the windowed Brown clustering and its steps.

    Built by :class:`sklstruct.BrownClusters` from validated arrays:
    ``counts`` (words by decreasing frequency), the word bigrams as two CSR
    tables (right neighbours ``r_ptr/r_idx/r_cnt``, left neighbours
    ``l_ptr/l_idx/l_cnt``, counts > 0, indices in [0, n_words)), ``T`` and
    ``B``.  ``n_slots`` = min(n_clusters, n_words) + 2.
    """
    cdef readonly int n_words, n_slots, n_added, n_active, next_id, n_merges
    cdef readonly double T, B, ami
    cdef object _keep               # the arrays the pointers below point into
    cdef double *P
    cdef double *PT
    cdef double *BQ
    cdef double *L2
    cdef double *p1
    cdef double *S1
    cdef double *H
    cdef double *M
    cdef double *rowmin
    cdef int *rowarg
    cdef char *active
    cdef char *nz
    cdef int *cid
    cdef int *K
    cdef int nK
    cdef int *Ky
    cdef int nKy
    cdef long long *cnt_r
    cdef long long *cnt_l
    cdef const long long *counts
    cdef const long long *r_ptr
    cdef const int *r_idx
    cdef const long long *r_cnt
    cdef const long long *l_ptr
    cdef const int *l_idx
    cdef const long long *l_cnt
    cdef int *parent                # union-find over words (roots are word ids)
    cdef int *slot_of_root
    cdef int *m_left
    cdef int *m_right
    cdef double *m_loss
    cdef double *m_ami
    # the step in progress (set by add_word / merge, read by update_rows)
    cdef int step_kind, sa, sb, sy

    def __init__(self, const long long[::1] counts, const long long[::1] r_ptr,
                 const int[::1] r_idx, const long long[::1] r_cnt,
                 const long long[::1] l_ptr, const int[::1] l_idx,
                 const long long[::1] l_cnt, int n_slots, double T, double B):
        cdef int n = counts.shape[0]
        cdef int S = n_slots
        self.n_words, self.n_slots, self.T, self.B = n, S, T, B
        arrays = dict(
            P=np.zeros((S, S)), PT=np.zeros((S, S)), BQ=np.zeros((S, S)),
            L2=np.zeros((S, S)), p1=np.zeros(S), S1=np.zeros(S), H=np.zeros(S),
            M=np.zeros(S), rowmin=np.full(S, np.inf), rowarg=np.full(S, -1, np.intc),
            active=np.zeros(S, np.int8), nz=np.zeros(S, np.int8),
            cid=np.full(S, -1, np.intc), K=np.zeros(S, np.intc), Ky=np.zeros(S, np.intc),
            cnt_r=np.zeros(S, np.int64), cnt_l=np.zeros(S, np.int64),
            parent=np.arange(max(n, 1), dtype=np.intc),
            slot_of_root=np.full(max(n, 1), -1, np.intc),
            m_left=np.zeros(max(n - 1, 1), np.intc), m_right=np.zeros(max(n - 1, 1), np.intc),
            m_loss=np.zeros(max(n - 1, 1)), m_ami=np.zeros(max(n - 1, 1)),
            inputs=(counts, r_ptr, r_idx, r_cnt, l_ptr, l_idx, l_cnt))
        self._keep = arrays
        self.P = <double *> cnp.PyArray_DATA(arrays["P"])
        self.PT = <double *> cnp.PyArray_DATA(arrays["PT"])
        self.BQ = <double *> cnp.PyArray_DATA(arrays["BQ"])
        self.L2 = <double *> cnp.PyArray_DATA(arrays["L2"])
        self.p1 = <double *> cnp.PyArray_DATA(arrays["p1"])
        self.S1 = <double *> cnp.PyArray_DATA(arrays["S1"])
        self.H = <double *> cnp.PyArray_DATA(arrays["H"])
        self.M = <double *> cnp.PyArray_DATA(arrays["M"])
        self.rowmin = <double *> cnp.PyArray_DATA(arrays["rowmin"])
        self.rowarg = <int *> cnp.PyArray_DATA(arrays["rowarg"])
        self.active = <char *> cnp.PyArray_DATA(arrays["active"])
        self.nz = <char *> cnp.PyArray_DATA(arrays["nz"])
        self.cid = <int *> cnp.PyArray_DATA(arrays["cid"])
        self.K = <int *> cnp.PyArray_DATA(arrays["K"])
        self.Ky = <int *> cnp.PyArray_DATA(arrays["Ky"])
        self.cnt_r = <long long *> cnp.PyArray_DATA(arrays["cnt_r"])
        self.cnt_l = <long long *> cnp.PyArray_DATA(arrays["cnt_l"])
        self.parent = <int *> cnp.PyArray_DATA(arrays["parent"])
        self.slot_of_root = <int *> cnp.PyArray_DATA(arrays["slot_of_root"])
        self.m_left = <int *> cnp.PyArray_DATA(arrays["m_left"])
        self.m_right = <int *> cnp.PyArray_DATA(arrays["m_right"])
        self.m_loss = <double *> cnp.PyArray_DATA(arrays["m_loss"])
        self.m_ami = <double *> cnp.PyArray_DATA(arrays["m_ami"])
        self.counts = &counts[0]
        self.r_ptr, self.r_idx, self.r_cnt = &r_ptr[0], &r_idx[0], &r_cnt[0]
        self.l_ptr, self.l_idx, self.l_cnt = &l_ptr[0], &l_idx[0], &l_cnt[0]
        self.n_added = self.n_active = self.n_merges = 0
        self.next_id = n
        self.ami = 0.0

    # -- helpers ---------------------------------------------------------------

    cdef inline int find(self, int a) noexcept nogil:
        cdef int r = a, nxt
        while self.parent[r] != r:
            r = self.parent[r]
        while self.parent[a] != r:            # path compression
            nxt = self.parent[a]
            self.parent[a] = r
            a = nxt
        return r

    cdef inline double bihyp(self, int v, int w, int x) noexcept nogil:
        """q terms between the hypothetical merge of v and w and slot x."""
        cdef int S = self.n_slots
        cdef double pvw = self.p1[v] + self.p1[w]
        return (g(self.PT[x * S + v] + self.PT[x * S + w], pvw, self.p1[x])
                + g(self.P[x * S + v] + self.P[x * S + w], pvw, self.p1[x]))

    cdef inline void set_pair(self, int a, int b, double pab) noexcept nogil:
        """P[a, b] = pab with its transpose (a != b; BQ is set by set_bq)."""
        cdef int S = self.n_slots
        self.P[a * S + b] = pab
        self.PT[b * S + a] = pab

    cdef inline void set_bq(self, int a, int b) noexcept nogil:
        cdef int S = self.n_slots
        cdef double q
        if a == b:
            q = g(self.P[a * S + a], self.p1[a], self.p1[a])
        else:
            q = (g(self.P[a * S + b], self.p1[a], self.p1[b])
                 + g(self.P[b * S + a], self.p1[a], self.p1[b]))
        self.BQ[a * S + b] = q
        self.BQ[b * S + a] = q

    cdef void clear_slot(self, int s) noexcept nogil:
        cdef int S = self.n_slots, x
        for x in range(S):
            self.P[s * S + x] = self.P[x * S + s] = 0.0
            self.PT[s * S + x] = self.PT[x * S + s] = 0.0
            self.BQ[s * S + x] = self.BQ[x * S + s] = 0.0
            self.L2[s * S + x] = self.L2[x * S + s] = 0.0

    cdef int free_slot(self) noexcept nogil:
        cdef int s
        for s in range(self.n_slots):
            if not self.active[s]:
                return s
        return -1

    cdef void row_sums(self, int y) noexcept nogil:
        """S1, H, M of slot y from scratch, over its neighbours Ky."""
        cdef int S = self.n_slots, i, x
        cdef double s1 = self.BQ[y * S + y], hh = 0.0, mm = 0.0
        for i in range(self.nKy):
            x = self.Ky[i]
            s1 += self.BQ[y * S + x]
            hh += h(self.P[y * S + x], self.p1[x]) + h(self.PT[y * S + x], self.p1[x])
            mm += self.P[y * S + x] + self.PT[y * S + x]
        self.S1[y], self.H[y], self.M[y] = s1, hh, mm

    cdef inline void add_row_terms(self, int x, int y, double sign) noexcept nogil:
        """Add (sign=1) or remove (sign=-1) slot y's terms from row x's sums."""
        cdef int S = self.n_slots
        self.S1[x] += sign * self.BQ[x * S + y]
        self.H[x] += sign * (h(self.P[x * S + y], self.p1[y]) + h(self.PT[x * S + y], self.p1[y]))
        self.M[x] += sign * (self.P[x * S + y] + self.PT[x * S + y])

    cdef double full_loss(self, int y, int w) noexcept nogil:
        """AMI lost by merging slots y and w, using y's neighbour list Ky
        (y's row sums and Ky must be current; w != y)."""
        cdef int S = self.n_slots, i, x
        cdef double p_yw = self.p1[y] + self.p1[w], l2p = log2(p_yw)
        cdef double old = self.S1[y] + self.S1[w] - self.BQ[y * S + w]
        cdef double new = 0.0, hh = self.H[w], mm = self.M[w]
        cdef double pr, pl
        # w's terms with y (in H[w], M[w]) do not survive the merge
        hh -= h(self.P[w * S + y], self.p1[y]) + h(self.PT[w * S + y], self.p1[y])
        mm -= self.P[w * S + y] + self.PT[w * S + y]
        for i in range(self.nKy):
            x = self.Ky[i]
            if x == w:
                continue
            pr = self.P[w * S + x]
            pl = self.PT[w * S + x]
            new += (g(self.P[y * S + x] + pr, p_yw, self.p1[x])
                    + g(self.PT[y * S + x] + pl, p_yw, self.p1[x]))
            hh -= h(pr, self.p1[x]) + h(pl, self.p1[x])
            mm -= pr + pl
        # the neighbours of w that are not y's: g = h - p log2(p_yw)
        new += hh - l2p * mm
        new += g(self.P[y * S + y] + self.P[y * S + w] + self.P[w * S + y] + self.P[w * S + w],
                 p_yw, p_yw)
        return old - new

    cdef void build_K(self, int y, bint merge, int s, int t) noexcept nogil:
        """Ky: the active slots other than y with a bigram with y; nz: the
        slots whose pairs change (neighbours of y, or of s and t)."""
        cdef int S = self.n_slots, x
        self.nKy = 0
        for x in range(S):
            self.nz[x] = 0
            if not self.active[x] or x == y:
                continue
            if self.P[y * S + x] != 0.0 or self.PT[y * S + x] != 0.0:
                self.Ky[self.nKy] = x
                self.nKy += 1
                self.nz[x] = 1
            if merge and (self.P[s * S + x] != 0.0 or self.PT[s * S + x] != 0.0
                          or self.P[t * S + x] != 0.0 or self.PT[t * S + x] != 0.0):
                self.nz[x] = 1

    # -- the steps ---------------------------------------------------------------

    cdef int add_word_c(self) noexcept nogil:
        """Put the next word (by frequency) in a free slot; set the tables
        that involve it and the AMI.  Returns the slot."""
        cdef int S = self.n_slots, a = self.n_added, s = self.free_slot(), b, x, i
        cdef long long k
        self.clear_slot(s)
        self.active[s] = 1
        self.cid[s] = a
        self.slot_of_root[a] = s
        self.p1[s] = self.counts[a] / self.T
        self.n_added += 1
        self.n_active += 1
        # bigram counts with the words already clustered, gathered by slot
        # (as integers, so that the probabilities do not depend on word order)
        for k in range(self.r_ptr[a], self.r_ptr[a + 1]):
            b = self.r_idx[k]
            if b <= a:
                self.cnt_r[self.slot_of_root[self.find(b)]] += self.r_cnt[k]
        for k in range(self.l_ptr[a], self.l_ptr[a + 1]):
            b = self.l_idx[k]
            if b < a:                       # (a, a) was counted on the right
                self.cnt_l[self.slot_of_root[self.find(b)]] += self.l_cnt[k]
        for x in range(S):
            if self.cnt_r[x]:
                self.set_pair(s, x, self.cnt_r[x] / self.B)
            if self.cnt_l[x]:
                self.set_pair(x, s, self.cnt_l[x] / self.B)
            self.cnt_r[x] = self.cnt_l[x] = 0
        self.set_bq(s, s)
        self.ami += self.BQ[s * S + s]
        self.build_K(s, False, -1, -1)
        for i in range(self.nKy):
            x = self.Ky[i]
            self.set_bq(s, x)
            self.ami += self.BQ[s * S + x]
            self.add_row_terms(x, s, 1.0)
        self.row_sums(s)
        self.step_kind, self.sa, self.sb, self.sy = 1, s, -1, s
        return s

    cdef int merge_c(self, int s, int t) noexcept nogil:
        """Merge slots s and t into a free slot u; set u's tables and the
        row sums of the others.  Returns u."""
        cdef int S = self.n_slots, u, x, i, a = self.cid[s], b = self.cid[t]
        cdef double loss
        # the loss from the current terms (the table's L2 carries the
        # rounding of its updates)
        self.build_K(s, False, -1, -1)
        self.row_sums(s)
        loss = self.full_loss(s, t)
        u = self.free_slot()
        self.clear_slot(u)
        self.active[u] = 1
        self.p1[u] = self.p1[s] + self.p1[t]
        for x in range(S):
            if self.active[x] and x != u and x != s and x != t:
                self.set_pair(u, x, self.P[s * S + x] + self.P[t * S + x])
                self.set_pair(x, u, self.P[x * S + s] + self.P[x * S + t])
        self.set_pair(u, u, self.P[s * S + s] + self.P[s * S + t] + self.P[t * S + s]
                      + self.P[t * S + t])
        self.active[s] = self.active[t] = 0
        self.set_bq(u, u)
        self.build_K(u, True, s, t)
        for i in range(self.nKy):
            self.set_bq(u, self.Ky[i])
        for x in range(S):
            if self.nz[x]:
                self.add_row_terms(x, s, -1.0)
                self.add_row_terms(x, t, -1.0)
                self.add_row_terms(x, u, 1.0)
        self.row_sums(u)
        self.ami -= loss
        # the tree: the older cluster (smaller id) is the 0 branch, as in wcluster
        self.m_left[self.n_merges] = a if a < b else b
        self.m_right[self.n_merges] = b if a < b else a
        self.m_loss[self.n_merges] = loss
        self.m_ami[self.n_merges] = self.ami
        self.n_merges += 1
        self.cid[u] = self.next_id
        self.next_id += 1
        self.n_active -= 1
        # the merged words: union of the two clusters' representatives
        x = self.find(a if a < self.n_words else self.m_root(a))
        i = self.find(b if b < self.n_words else self.m_root(b))
        self.parent[i] = x
        self.slot_of_root[x] = u
        self.step_kind, self.sa, self.sb, self.sy = 2, s, t, u
        return u

    cdef int m_root(self, int c) noexcept nogil:
        """A word of cluster c (c >= n_words: a merge)."""
        while c >= self.n_words:
            c = self.m_left[c - self.n_words]
        return c

    cdef void update_rows_c(self, int lo, int hi) noexcept nogil:
        """Update L2[v, w] for v in [lo, hi), w > v after the step in
        progress, and the best pair of each such row."""
        cdef int S = self.n_slots, v, w, y = self.sy, s = self.sa, t = self.sb
        cdef int kind = self.step_kind, best
        cdef double d, lv, m
        cdef char *nz = self.nz
        cdef char *act = self.active
        cdef double *L = self.L2
        cdef double *BQ = self.BQ
        for v in range(lo, hi):
            m = INFINITY
            best = -1
            if act[v]:
                for w in range(v + 1, S):
                    if not act[w]:
                        continue
                    if v == y or w == y:
                        lv = self.full_loss(y, w if v == y else v)
                        L[v * S + w] = lv
                    elif nz[v] or nz[w]:
                        if kind == 1:
                            d = BQ[v * S + s] + BQ[w * S + s] - self.bihyp(v, w, s)
                        else:
                            d = (self.bihyp(v, w, s) + self.bihyp(v, w, t)
                                 - BQ[v * S + s] - BQ[w * S + s] - BQ[v * S + t]
                                 - BQ[w * S + t]
                                 + BQ[v * S + y] + BQ[w * S + y] - self.bihyp(v, w, y))
                        lv = L[v * S + w] + d
                        L[v * S + w] = lv
                    else:
                        lv = L[v * S + w]
                    if lv < m:
                        m = lv
                        best = w
            self.rowmin[v] = m
            self.rowarg[v] = best

    cdef void best_pair_c(self, int *bs, int *bt) noexcept nogil:
        cdef int v
        cdef double m = INFINITY
        bs[0] = bt[0] = -1
        for v in range(self.n_slots):
            if self.rowarg[v] >= 0 and self.rowmin[v] < m:
                m = self.rowmin[v]
                bs[0], bt[0] = v, self.rowarg[v]

    cdef void init_pairs_c(self) noexcept nogil:
        """L2 of every pair from scratch (after the first words)."""
        cdef int S = self.n_slots, v, w
        for v in range(S):
            if self.active[v]:
                self.build_K(v, False, -1, -1)
                self.row_sums(v)
        for v in range(S):
            if not self.active[v]:
                continue
            self.build_K(v, False, -1, -1)
            for w in range(v + 1, S):
                if self.active[w]:
                    self.L2[v * S + w] = self.full_loss(v, w)
        # the next update only scans the table for each row's best pair
        for v in range(S):
            self.nz[v] = 0
        self.step_kind, self.sa, self.sb, self.sy = 0, -1, -1, -1

    # -- Python-facing -----------------------------------------------------------

    def add_initial(self, int n):
        """Add the n most frequent words as clusters, no merge; their losses."""
        cdef int i
        with nogil:
            for i in range(n):
                self.add_word_c()
            self.init_pairs_c()

    def add_word(self):
        with nogil:
            self.add_word_c()

    def merge_best(self):
        """Merge the best pair found by the last update; False if none."""
        cdef int s, t
        with nogil:
            self.best_pair_c(&s, &t)
            if s >= 0:
                self.merge_c(s, t)
        return s >= 0

    def update_rows(self, int lo, int hi):
        with nogil:
            self.update_rows_c(lo, hi)

    def run(self, int n_initial):
        """The whole clustering in one call (one thread): the first
        ``n_initial`` words, then add-and-merge for every other word, then
        merge down to one cluster.  Returns the AMI right after the last
        word's merge (of min(n_initial, n_words) clusters)."""
        cdef int S = self.n_slots, s, t, i
        cdef double ami_c
        with nogil:
            for i in range(n_initial):
                self.add_word_c()
            self.init_pairs_c()
            self.update_rows_c(0, S)
            while self.n_added < self.n_words:
                self.add_word_c()
                self.update_rows_c(0, S)
                self.best_pair_c(&s, &t)
                self.merge_c(s, t)
                self.update_rows_c(0, S)
            ami_c = self.ami
            while self.n_active > 1:
                self.best_pair_c(&s, &t)
                self.merge_c(s, t)
                self.update_rows_c(0, S)
        return ami_c

    def merges(self):
        """(left id, right id, loss, AMI after) of every merge so far."""
        n = self.n_merges
        k = self._keep
        return (k["m_left"][:n].copy(), k["m_right"][:n].copy(), k["m_loss"][:n].copy(),
                k["m_ami"][:n].copy())
