# The chain model's C side beside its decoding kernels (_viterbi): the stacked
# corpus, the weights with their layout and lazy averaging, exact joint-feature
# differences dF, margins, costs and the (loss-augmented) k-best candidates.
# See _chain.pyx.

from sklstruct._viterbi cimport KBestScratch


cdef enum:
    COST_HAMMING = 0             # L(y^n, y): number of wrong tokens
    COST_ZERO_ONE = 1            # 1 if y != y^n


cdef struct Corpus:
    # the stacked CSR matrix of all sentences (borrowed pointers)
    const long long* indptr
    const int* indices
    const double* data
    const long long* offsets     # sentence s is rows offsets[s]:offsets[s + 1]
    Py_ssize_t n_sentences
    const long long* aptr        # NULL, or row r may take only the labels
    const int* alab              # alab[aptr[r]:aptr[r + 1]] (a tag dictionary)


cdef struct Weights:
    # w = (W, P) in the layout of _viterbi: W (F, L), P (L + 2, L), or with
    # order 2 (L + 2 + L * L, L): the trigram scores Q are P's last L * L rows
    double* W
    double* P
    double* W_sum                # lazy averaging accumulators u (NULL: no averaging)
    double* P_sum
    Py_ssize_t L
    int order                    # 1 or 2
    long long chain_base         # F * L: Diff keys >= chain_base index into P
    double n_seen                # the averaging clock c: examples seen so far


cdef struct Entry:
    long long key                # feature * L + label, or chain_base + index into P
    double val


cdef struct Diff:
    Entry* e                     # in token order; a key may repeat (values add up)
    Py_ssize_t n


cdef struct KeyTable:
    # one dF held by key (open addressing), for exact products with others
    long long* keys              # -1 = empty slot
    double* vals
    Py_ssize_t* used             # the occupied slots, to clear them
    Py_ssize_t n_used
    int bits


cdef class ChainData:
    cdef readonly object indptr, indices, data, offsets, allowed
    cdef readonly Py_ssize_t max_T, max_nnz, n_features
    cdef Corpus c


cdef class ChainWeights:
    cdef readonly object W, P
    cdef object _W_sum, _P_sum        # the sums, or the average (see averaged)
    cdef readonly bint sums_hold_average
    cdef public long long n_seen
    cdef readonly int order
    cdef Weights w
    cdef Weights* bind(self) except NULL


cdef class Workspace:
    # the scratch of one learner pass, sized for the longest sentence
    cdef double* E
    cdef KBestScratch kb         # the decoder's scratch (kb.delta, kb.back: Viterbi)
    cdef int* paths              # (K, max_T) candidates, best first
    cdef double* scores
    cdef int* y_hat
    cdef int* tmp                # (max_T) labels: a sequence being edited
    cdef double* tv              # (max_T) per-position values (template margins)
    cdef double* tg              # (max_T) per-position weights (template gammas)
    cdef Diff* diffs
    cdef Py_ssize_t n_diffs
    cdef KeyTable table
    cdef double* G               # (n_diffs, n_diffs) Gram matrix of diffs
    cdef double* ell
    cdef double* alpha
    cdef double* grad


cdef double margin(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                   const int* path, Weights* w) noexcept nogil
cdef void add_difference(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                         const int* path, Weights* w, double step) noexcept nogil
cdef bint same_path(const int* a, const int* b, Py_ssize_t T) noexcept nogil
cdef Py_ssize_t diff_capacity(Py_ssize_t nnz, Py_ssize_t T) noexcept nogil
cdef Py_ssize_t template_capacity(Py_ssize_t nnz, Py_ssize_t T) noexcept nogil
cdef void build_diff(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                     const int* path, Weights* w, Diff* d) noexcept nogil
cdef int table_init(KeyTable* h, Py_ssize_t capacity) noexcept nogil
cdef void table_free(KeyTable* h) noexcept nogil
cdef void table_load(KeyTable* h, Diff* d) noexcept nogil
cdef double table_dot(KeyTable* h, Diff* d) noexcept nogil
cdef double table_sqnorm(KeyTable* h) noexcept nogil
cdef void table_clear(KeyTable* h) noexcept nogil
cdef double diff_sqnorm(KeyTable* h, Diff* d) noexcept nogil
cdef void gram(KeyTable* h, Diff* diffs, Py_ssize_t m, double* G) noexcept nogil
cdef void apply_diff(Diff* d, Weights* w, double step) noexcept nogil
cdef double diff_margin(Diff* d, Weights* w) noexcept nogil
cdef double cost_of(const int* gold, const int* path, Py_ssize_t T, int cost) noexcept nogil
cdef double best_sequence(Workspace ws, Corpus* X, Py_ssize_t row0, Py_ssize_t T, Weights* w,
                          int* out) noexcept nogil
cdef Py_ssize_t decode_candidates(Workspace ws, Corpus* X, Py_ssize_t row0, Py_ssize_t T,
                                  const int* gold, Weights* w, Py_ssize_t k, bint augmented,
                                  int cost) noexcept nogil
cdef Py_ssize_t candidates_needed(Py_ssize_t k, bint augmented, int cost) noexcept nogil
