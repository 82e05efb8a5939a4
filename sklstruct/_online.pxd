# Declarations of the learners' shared Cython machinery (see _online.pyx):
# the stacked corpus and weights, exact joint-feature differences dF, the
# sparse weight updates with lazy averaging, and the k-best candidate decoder.

from sklstruct._viterbi cimport KBestScratch


cdef struct Corpus:
    const long long* indptr
    const int* indices
    const double* data


cdef struct Weights:
    double* W                # (F, L) emission weights
    double* P                # (L + 2, L) transitions, start, end
    double* W_sum            # averaging accumulators (NULL without averaging)
    double* P_sum
    Py_ssize_t L
    long long chain_base     # F * L: keys >= chain_base in a Diff index P


cdef struct Entry:
    long long key            # feature * L + label, or chain_base + index into P
    double val


cdef struct Diff:
    Entry* e                 # in token order; a key may repeat (values add up)
    Py_ssize_t n


cdef struct KeyTable:
    # one dF held by key (open addressing) for exact products with others
    long long* keys          # -1 = empty slot
    double* vals
    Py_ssize_t* used         # the occupied slots, to clear them
    Py_ssize_t n_used
    int bits


cdef double margin(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                   const int* path, Weights* w) noexcept nogil
cdef void add_difference(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                         const int* path, Weights* w, double step,
                         double n_seen) noexcept nogil
cdef bint same_path(const int* a, const int* b, Py_ssize_t T) noexcept nogil
cdef Py_ssize_t diff_capacity(Py_ssize_t nnz, Py_ssize_t T) noexcept nogil
cdef void build_diff(Corpus* X, Py_ssize_t row0, Py_ssize_t T, const int* gold,
                     const int* path, Weights* w, Diff* d) noexcept nogil
cdef int table_init(KeyTable* h, Py_ssize_t capacity) noexcept nogil
cdef void table_free(KeyTable* h) noexcept nogil
cdef void table_load(KeyTable* h, Diff* d) noexcept nogil
cdef double table_dot(KeyTable* h, Diff* d) noexcept nogil
cdef void table_clear(KeyTable* h) noexcept nogil
cdef double diff_sqnorm(KeyTable* h, Diff* d) noexcept nogil
cdef void apply_diff(Diff* d, Weights* w, double step, double n_seen) noexcept nogil
cdef double cost_of(const int* gold, const int* path, Py_ssize_t T, int cost) noexcept nogil


cdef class _Workspace:
    cdef double* E
    cdef KBestScratch kb     # the decoder's scratch (kb.delta, kb.back: Viterbi)
    cdef int* paths
    cdef double* scores
    cdef int* y_hat
    cdef int* order
    cdef Diff* diffs
    cdef Py_ssize_t n_diffs
    cdef KeyTable table
    cdef double* G
    cdef double* ell
    cdef double* alpha
    cdef double* grad


cdef Py_ssize_t decode_candidates(_Workspace ws, Corpus* X, Py_ssize_t row0, Py_ssize_t T,
                                  const int* gold, Weights* w, Py_ssize_t k, bint augmented,
                                  int cost) noexcept nogil
