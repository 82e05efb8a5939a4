# Declarations of the chain decoding kernels, shared with the learners' Cython loops
# (forward-backward: _forward_backward.pxd).
#
# Layout conventions (all arrays C-contiguous):
#   E      (T, L)    emission scores of one sentence, E[t, y]
#   P      (L+2, L)  chain parameters: rows 0..L-1 transitions P[y', y],
#                    row L start scores, row L+1 end scores; a second-order
#                    chain appends L*L rows of trigram scores, P[L+2+a*L+b, c]
#                    for the labels (a, b, c) at (t-2, t-1, t): (L+2+L*L, L)
#   W      (F, L)    emission weights, one row per feature
#   CSR    indptr (int64), indices (int32), data (float64) of the stacked corpus

cdef void compute_emission(const long long* indptr, const int* indices, const double* data,
                           Py_ssize_t row0, Py_ssize_t T, const double* W, Py_ssize_t L,
                           double* E) noexcept nogil
# (the _f32 variants: W stored in float32, the sums in float64)
cdef bint compute_emission_checked(const long long* indptr, const int* indices,
                                   const double* data, Py_ssize_t T, Py_ssize_t n_cols,
                                   double max_abs, const double* W, Py_ssize_t L,
                                   double* E) noexcept nogil
cdef bint compute_emission_checked_f32(const long long* indptr, const int* indices,
                                       const double* data, Py_ssize_t T, Py_ssize_t n_cols,
                                       double max_abs, const float* W, Py_ssize_t L,
                                       double* E) noexcept nogil

cdef void add_hamming(double* E, Py_ssize_t T, Py_ssize_t L, const int* gold,
                      double cost) noexcept nogil

cdef double viterbi(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                    double* delta, int* back, int* path) noexcept nogil
cdef double viterbi2(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                     double* delta, int* back, int* path) noexcept nogil
cdef double viterbi_allowed(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                            const long long* aptr, const int* alab,
                            double* delta, int* path) noexcept nogil
cdef double decode_best(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P, int order,
                        double* delta, int* back, int* path) noexcept nogil
cdef Py_ssize_t lattice_nodes(Py_ssize_t T, Py_ssize_t L, int order) noexcept nogil

cdef struct KBestScratch:
    # scratch of the k-best decoder (see kbest_alloc); nodes v = t * S + s with
    # S = L ** order states per position (first order: s = y_t; second order:
    # s = y_{t-1} * L + y_t, and s = y_0 at position 0) and the end node T * S
    double* delta            # (nodes) Viterbi prefix scores, rank 0
    int* back                # (nodes) Viterbi back-pointers (labels)
    int* cnt                 # (nodes) ranks found so far
    int* set_of              # (nodes) candidate set of the node, -1 none yet, -2 exhausted
    int* stack               # (T + 1) the nodes of one descent
    double* rscore           # (nodes * K) ranks r >= 1: score,
    int* rlabel              # predecessor label
    int* rrank               # and predecessor rank
    double* ckey             # (max_sets * cap) candidate sets: score,
    int* clabel              # predecessor label
    int* crank               # and predecessor rank
    int* csize               # (max_sets)
    Py_ssize_t* cstart       # (max_sets) first slot of each set in ckey/clabel/crank
    Py_ssize_t K
    Py_ssize_t max_slots
    Py_ssize_t n_slots
    Py_ssize_t max_sets
    Py_ssize_t n_sets
    Py_ssize_t L             # the lattice: labels,
    Py_ssize_t S             # states per position (L ** order),
    int order                # chain order (1 or 2), fixed at allocation;
    Py_ssize_t T             # and of the current call: tokens,
    const double* E          # emissions
    const double* P          # and chain parameters

cdef int kbest_alloc(KBestScratch* s, Py_ssize_t max_T, Py_ssize_t L,
                     Py_ssize_t K, int order) noexcept nogil
cdef void kbest_free(KBestScratch* s) noexcept nogil
cdef Py_ssize_t kbest(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                      Py_ssize_t K, KBestScratch* s, int* paths, double* scores) noexcept nogil

cdef double path_score(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                       int order, const int* path) noexcept nogil
