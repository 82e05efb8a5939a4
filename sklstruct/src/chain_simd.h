/* C helpers of the chain decoding kernels (sklstruct/_viterbi.pyx): the
   emission scores of a sentence and one step of first-order Viterbi.

   They are written in C rather than Cython so that GCC vectorises them:
   Cython would emit an if/else for each select, and the function
   attributes below (an AVX2 clone chosen at load time where the CPU has
   it, no-trapping-math) cannot be spelled in Cython.  Included by one
   module only, so the functions are static.  Py_ssize_t comes from
   Python.h, which Cython's generated code includes first. */
#ifndef SKLSTRUCT_CHAIN_SIMD_H
#define SKLSTRUCT_CHAIN_SIMD_H

#include <Python.h>
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define SKLSTRUCT_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SKLSTRUCT_CLONES
#endif
#if defined(__GNUC__) || defined(__clang__)
#define SKLSTRUCT_PREFETCH(p) __builtin_prefetch(p)
#define SKLSTRUCT_RESTRICT __restrict__
#else
#define SKLSTRUCT_PREFETCH(p) ((void)0)
#define SKLSTRUCT_RESTRICT
#endif

/* E[t, :] = X[row0 + t, :] @ W for t < T, W of doubles or (a model
   stored in float32) floats, E in doubles.  The rows of W a sentence
   reads are scattered over a matrix larger than the caches, so the row
   PF features ahead is prefetched while this one is added. */
#define SKLSTRUCT_EMISSION(NAME, WTYPE)                                              \
SKLSTRUCT_CLONES                                                                     \
static void NAME(const long long *indptr, const int *indices, const double *data,   \
                 Py_ssize_t row0, Py_ssize_t T, const WTYPE *W, Py_ssize_t L,       \
                 double *E) {                                                        \
    enum { PF = 16 };                                                                \
    const long long j0 = indptr[row0], j1 = indptr[row0 + T];                        \
    const Py_ssize_t row_bytes = L * (Py_ssize_t)sizeof(WTYPE);                      \
    for (Py_ssize_t t = 0; t < T * L; t++) E[t] = 0.0;                               \
    for (long long j = j0; j < j0 + PF && j < j1; j++) {                             \
        const char *p = (const char *)(W + (Py_ssize_t)indices[j] * L);             \
        for (Py_ssize_t b = 0; b < row_bytes; b += 64) SKLSTRUCT_PREFETCH(p + b);  \
    }                                                                                \
    for (Py_ssize_t t = 0; t < T; t++) {                                             \
        double *SKLSTRUCT_RESTRICT e = E + t * L;                                    \
        for (long long j = indptr[row0 + t]; j < indptr[row0 + t + 1]; j++) {        \
            if (j + PF < j1) {                                                       \
                const char *p = (const char *)(W + (Py_ssize_t)indices[j + PF] * L); \
                for (Py_ssize_t b = 0; b < row_bytes; b += 64)                       \
                    SKLSTRUCT_PREFETCH(p + b);                                       \
            }                                                                        \
            const double v = data[j];                                                \
            const WTYPE *SKLSTRUCT_RESTRICT w = W + (Py_ssize_t)indices[j] * L;      \
            for (Py_ssize_t l = 0; l < L; l++) e[l] += v * (double)w[l];             \
        }                                                                            \
    }                                                                                \
}
SKLSTRUCT_EMISSION(sklstruct_emission, double)
SKLSTRUCT_EMISSION(sklstruct_emission_f32, float)

/* The same emission scores of one sentence that nothing has checked (a
   sentence of a list, decoded where it lies): rows indptr[t]..indptr[t+1]
   of T rows, indptr already checked (from 0, non-decreasing, within the
   arrays).  Each entry is checked as it is read, and only then used: its
   column index strictly above the row's previous one (sorted, no
   duplicates, not negative) and below n_cols, its value finite and at most
   max_abs in absolute value.  Returns 0 at the first entry that fails (E
   is then garbage), 1 otherwise; the sums are those of the function above,
   in the same order.  An index is read once, so that another thread
   rewriting the caller's arrays cannot make W be read out of bounds; the
   index of the row prefetched ahead is clamped for the same reason. */
#define SKLSTRUCT_EMISSION_CHECKED(NAME, WTYPE)                                      \
SKLSTRUCT_CLONES                                                                     \
static int NAME(const long long *indptr, const int *indices, const double *data,    \
                Py_ssize_t T, Py_ssize_t n_cols, double max_abs, const WTYPE *W,    \
                Py_ssize_t L, double *E) {                                           \
    enum { PF = 16 };                                                                \
    const long long j1 = indptr[T];                                                  \
    const Py_ssize_t row_bytes = L * (Py_ssize_t)sizeof(WTYPE);                      \
    for (Py_ssize_t t = 0; t < T * L; t++) E[t] = 0.0;                               \
    for (Py_ssize_t t = 0; t < T; t++) {                                             \
        double *SKLSTRUCT_RESTRICT e = E + t * L;                                    \
        int prev = -1;                                                               \
        for (long long j = indptr[t]; j < indptr[t + 1]; j++) {                      \
            if (j + PF < j1) {                                                       \
                const int a = indices[j + PF];                                       \
                const char *p = (const char *)(W + (Py_ssize_t)(                     \
                    a >= 0 && a < n_cols ? a : 0) * L);                              \
                for (Py_ssize_t b = 0; b < row_bytes; b += 64)                       \
                    SKLSTRUCT_PREFETCH(p + b);                                       \
            }                                                                        \
            const int c = indices[j];                                                \
            const double v = data[j];                                                \
            if (c <= prev || c >= n_cols || !(fabs(v) <= max_abs)) return 0;        \
            prev = c;                                                                \
            const WTYPE *SKLSTRUCT_RESTRICT w = W + (Py_ssize_t)c * L;               \
            for (Py_ssize_t l = 0; l < L; l++) e[l] += v * (double)w[l];             \
        }                                                                            \
    }                                                                                \
    return 1;                                                                        \
}
SKLSTRUCT_EMISSION_CHECKED(sklstruct_emission_checked, double)
SKLSTRUCT_EMISSION_CHECKED(sklstruct_emission_checked_f32, float)

/* One step of first-order Viterbi: cur[y] = max over yp of prev[yp] +
   P[yp, y], bk[y] the smallest yp reaching it (yp ascends, only a strictly
   greater score replaces), with the max over predecessors in the outer
   loop so that the inner loop runs over contiguous rows.
   The selects vectorise with blend instructions on x86-64, so an AVX2
   clone is chosen at load time where the CPU has them, and
   no-trapping-math (FP exceptions only; results are unchanged) lets
   the selects be if-converted. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((optimize("no-trapping-math"), target_clones("avx2", "default")))
#endif
static void sklstruct_viterbi_step(const double *prev, const double *P, double *cur,
                                   int *bk, Py_ssize_t L) {
    for (Py_ssize_t y = 0; y < L; y++) {
        cur[y] = prev[0] + P[y];
        bk[y] = 0;
    }
    for (Py_ssize_t yp = 1; yp < L; yp++) {
        const double d = prev[yp];
        const double *row = P + yp * L;
        for (Py_ssize_t y = 0; y < L; y++) {
            double c = cur[y];
            int b = bk[y];
            double s = d + row[y];
            cur[y] = s > c ? s : c;
            bk[y] = s > c ? (int)yp : b;
        }
    }
}

/* The same maximum without back-pointers: one add and one max per
   entry (vmaxpd; `s > c ? s : c` is its exact semantics). */
SKLSTRUCT_CLONES
static void sklstruct_viterbi_max(const double *prev, const double *P, double *cur,
                                  Py_ssize_t L) {
    for (Py_ssize_t y = 0; y < L; y++)
        cur[y] = prev[0] + P[y];
    for (Py_ssize_t yp = 1; yp < L; yp++) {
        const double d = prev[yp];
        const double *row = P + yp * L;
        for (Py_ssize_t y = 0; y < L; y++) {
            double s = d + row[y];
            cur[y] = s > cur[y] ? s : cur[y];
        }
    }
}

#endif
