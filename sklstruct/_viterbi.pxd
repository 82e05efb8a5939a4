# Declarations of the chain decoding kernels, shared with the learners' Cython loops.
#
# Layout conventions (all arrays C-contiguous):
#   E      (T, L)    emission scores of one sentence, E[t, y]
#   P      (L+2, L)  chain parameters: rows 0..L-1 transitions P[y', y],
#                    row L start scores, row L+1 end scores
#   W      (F, L)    emission weights, one row per feature
#   CSR    indptr (int64), indices (int32), data (float64) of the stacked corpus

cdef void compute_emission(const long long* indptr, const int* indices, const double* data,
                           Py_ssize_t row0, Py_ssize_t T, const double* W, Py_ssize_t L,
                           double* E) noexcept nogil

cdef void add_hamming(double* E, Py_ssize_t T, Py_ssize_t L, const int* gold,
                      double cost) noexcept nogil

cdef double viterbi(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                    double* delta, int* back, int* path) noexcept nogil

cdef Py_ssize_t kbest(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                      Py_ssize_t K, double* delta, int* cnt, int* back_label,
                      int* back_rank, int* heads, double* cand, int* paths,
                      double* scores) noexcept nogil

cdef double path_score(const double* E, Py_ssize_t T, Py_ssize_t L, const double* P,
                       const int* path) noexcept nogil
