# Kernel emission scores over support tokens: the model of a kernel M3N,
# which its training (learners/_m3n_sgd.pyx, learners/_m3n_smo.pyx) and its
# prediction share.  See _kernel_scores.pyx.

from sklstruct._chain cimport ChainData, Corpus


cdef enum:
    KERNEL_POLY = 0     # (gamma <a, b> + coef0) ** degree
    KERNEL_TANH = 1     # tanh(gamma <a, b> + coef0)


cdef struct Kernel:
    int kind
    double gamma
    double coef0
    int degree
    double k0            # k(0): what a support token with no shared feature adds


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


cdef class KernelFunction:
    cdef Kernel k
    cdef readonly bint linear


cdef class KernelState:
    cdef public object colptr, slot_entry, pos, n_sup, row_of, is_sup
    cdef public object beta, beta_sum, vco, bsum, vsum
    cdef object acc, mark, touched, buf
    cdef Index ix
    cdef Index* bind(self, ChainData data) except NULL


cdef void promote(Index* ix, Corpus* X, Py_ssize_t r) noexcept nogil
cdef void kernel_rows(Index* ix, Kernel* k, Corpus* Q, Py_ssize_t row0, Py_ssize_t T,
                      const double* beta, const double* bsum, double* E,
                      const double* beta2, const double* bsum2, double* E2) noexcept nogil
cdef double emission_sqnorm(const int* a, const int* b, Py_ssize_t T, const double* G,
                            Corpus* X, Kernel* k, Py_ssize_t row0, double* buf) noexcept nogil
cdef void token_gram(Corpus* X, Kernel* k, Py_ssize_t row0, Py_ssize_t T, double* buf,
                     double* G) noexcept nogil
cdef double* matrix_ptr(object a) except? NULL
cdef double* vector_ptr(object a) except? NULL
