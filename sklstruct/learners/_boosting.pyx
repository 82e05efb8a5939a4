# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Sequence boosting's kernels (Altun, Johnson & Hofmann, section 5.2).

:func:`boost_pass` runs forward-backward on a set of sentences of the stacked
corpus and writes what the rounds of Algorithm 2 read: ``d = log Z - s(gold)``
(the sentence's exp-loss is ``exp(d) - 1``, eq. 2), the node marginals, the
expected chain counts and, for the diagonal second moments, the marginal
probability of each gold bigram (and of the gold first and last labels).

:func:`tilted_moments` is the exact line search's oracle: for one feature k
and a step ``delta`` it gives, per sentence, ``l(delta) = log Z(theta + delta
e_k) - s_gold(theta + delta e_k)`` and its first two derivatives in delta
(``E[F_k] - F_k(gold)`` and ``Var[F_k]`` under the tilted model), from one
forward pass that carries the conditional first and second moments of the
feature's count (a forward pass in the second-order expectation semiring),
in scaled space with an exact log-sum-exp fallback where a sum underflows.

Callers (:mod:`sklstruct.learners.boosting`) validate every index first.
"""
from libc.math cimport INFINITY, exp, log
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from sklstruct._chain cimport ChainData, Corpus
from sklstruct._forward_backward cimport (FBWork, Lattice, add_marginals, fb_alloc, fb_free,
                                          fb_prepare, forward_backward)
from sklstruct._viterbi cimport compute_emission, path_score

cdef double TINY = 1e-280


def boost_pass(ChainData data, const int[::1] y, const double[::1] W, const double[:, ::1] P,
               const long long[::1] sentences, double[::1] d, double[:, ::1] node,
               double[:, :, ::1] chain, double[:, :, ::1] gold_pair):
    """Forward-backward (scaled where that is exact, else in log space) on
    the sentences listed.

    For each listed sentence s (rows r of the corpus): ``d[s] = log Z -
    s(gold)``; ``node[r, b] = P(y_t = b | x)``; ``chain[s]`` the expected
    transition, start and end counts in the layout of P; ``gold_pair[s]``
    zero except ``gold_pair[s, a, b] = sum over the positions t >= 1 with gold
    bigram (a, b) of P(y_{t-1} = a, y_t = b | x)``, row L: P(y_0 = gold_0 |
    x) at the gold first label, row L + 1: the same at the last token.
    """
    cdef Py_ssize_t L = P.shape[1], i, s, t, a, b, c, row0, T, max_T = 0
    cdef Py_ssize_t n = sentences.shape[0]
    cdef const Corpus* cp = &data.c
    for i in range(n):
        s = sentences[i]
        max_T = max(max_T, cp.offsets[s + 1] - cp.offsets[s])
    if max_T == 0:
        return
    cdef FBWork w
    cdef Lattice lat
    cdef double log_z, z
    cdef double* E = <double*>malloc(max_T * L * sizeof(double))
    if E == NULL or fb_alloc(&w, max_T, L, 1, False) != 0:
        free(E)
        raise MemoryError()
    cdef double* gp
    with nogil:
        fb_prepare(&w, &P[0, 0], L, 1)
        lat.E, lat.P, lat.L, lat.order = E, &P[0, 0], L, 1
        for i in range(n):
            s = sentences[i]
            row0 = cp.offsets[s]
            T = cp.offsets[s + 1] - row0
            lat.T = T
            compute_emission(cp.indptr, cp.indices, cp.data, row0, T,
                             &W[0] if W.shape[0] else NULL, L, E)
            log_z = forward_backward(&lat, &w, False)
            d[s] = log_z - path_score(E, T, L, &P[0, 0], 1, &y[row0])
            memset(&node[row0, 0], 0, T * L * sizeof(double))
            memset(&chain[s, 0, 0], 0, (L + 2) * L * sizeof(double))
            add_marginals(&lat, &w, log_z, 1.0, &node[row0, 0], &chain[s, 0, 0])
            gp = &gold_pair[s, 0, 0]
            memset(gp, 0, (L + 2) * L * sizeof(double))
            for t in range(1, T):
                a = y[row0 + t - 1]
                b = y[row0 + t]
                if w.scaled:
                    # the scaled recursions' edge marginal (as add_marginals)
                    z = 0.0
                    for c in range(L):
                        z += w.alpha[t * L + c] * w.beta[t * L + c]
                    gp[a * L + b] += (w.alpha[(t - 1) * L + a] * w.eTr[a * L + b]
                                      * w.eE[t * L + b] * w.beta[t * L + b]) / (z * w.norm[t])
                else:
                    gp[a * L + b] += exp(min(w.alpha[(t - 1) * L + a] + P[a, b] + E[t * L + b]
                                             + w.beta[t * L + b] - log_z, 0.0))
            gp[L * L + y[row0]] += node[row0, y[row0]]
            gp[(L + 1) * L + y[row0 + T - 1]] += node[row0 + T - 1, y[row0 + T - 1]]
    fb_free(&w)
    free(E)


cdef struct Tilt:
    # the feature k being stepped: an emission (label >= 0, coefficient
    # coef[r] per corpus row) or a chain parameter P[prow, pcol] (prow >= 0)
    const double* coef
    Py_ssize_t label
    Py_ssize_t prow
    Py_ssize_t pcol
    double delta


cdef inline double _count(const Tilt* k, Py_ssize_t r, Py_ssize_t b) noexcept nogil:
    """The feature's count at corpus row r with label b (emission part)."""
    if b == k.label:
        return k.coef[r]
    return 0.0


cdef struct TiltWork:
    # what :c:func:`_tilted` and :c:func:`_tilted_scaled` read for every
    # sentence: the corpus, gold labels, weights (P already tilted), the
    # feature's tilt, and scratch (E: max_T x L emissions; eP = exp(P[:L, :L] -
    # pmax); buf: 7 L doubles)
    const Corpus* c
    const int* y
    const double* W
    const double* P
    Py_ssize_t L
    const Tilt* k
    double* E
    double* eP
    double pmax
    double* buf


cdef inline double _moments_into(const double* v, const double* eP, const double* m1,
                                 const double* m2, Py_ssize_t L, const Tilt* k, Py_ssize_t b,
                                 double* M) noexcept nogil:
    """One forward step's sums into label b: returns z = sum_a v[a] eP[a, b]
    and sets M[0], M[1] to the weighted first and second moments of the
    count (a tilted transition a -> b adds one to it)."""
    cdef Py_ssize_t a
    cdef double w_, kab, z = 0.0, M1 = 0.0, M2 = 0.0
    if k.prow < 0 or k.prow >= L:
        # no transition tilted: the moments just flow along
        for a in range(L):
            w_ = v[a] * eP[a * L + b]
            z += w_
            M1 += w_ * m1[a]
            M2 += w_ * m2[a]
    else:
        for a in range(L):
            w_ = v[a] * eP[a * L + b]
            kab = 1.0 if (k.prow == a and k.pcol == b) else 0.0
            z += w_
            M1 += w_ * (m1[a] + kab)
            M2 += w_ * (m2[a] + 2.0 * kab * m1[a] + kab)
    M[0] = M1
    M[1] = M2
    return z


cdef void _tilted(const TiltWork* tw, Py_ssize_t s, double* out) noexcept nogil:
    """One sentence: out = (l, dl/ddelta, d2l/ddelta2) with P already tilted
    (eP = exp(P[:L, :L] - pmax) of the tilted transitions)."""
    cdef const Corpus* c = tw.c
    cdef const int* y = tw.y
    cdef const double* W = tw.W
    cdef const double* P = tw.P
    cdef Py_ssize_t L = tw.L
    cdef const Tilt* k = tw.k
    cdef double* E = tw.E
    cdef double* eP = tw.eP
    cdef double pmax = tw.pmax
    cdef double* la = tw.buf
    cdef double* m1 = tw.buf + L
    cdef double* m2 = tw.buf + 2 * L
    cdef double* nla = tw.buf + 3 * L
    cdef double* nm1 = tw.buf + 4 * L
    cdef double* nm2 = tw.buf + 5 * L
    cdef double* v = tw.buf + 6 * L
    cdef double Msum[2]
    cdef Py_ssize_t row0 = c.offsets[s], T = c.offsets[s + 1] - row0, t, a, b, r
    cdef double amax, z, w_, kab, M1, M2, cnt, gold, fg, lz, mx, tot, e1, e2
    compute_emission(c.indptr, c.indices, c.data, row0, T, W, L, E)
    if k.label >= 0:
        for t in range(T):
            E[t * L + k.label] += k.delta * k.coef[row0 + t]
    # position 0: log alpha, and the conditional moments of the count given y_0 = b
    for b in range(L):
        la[b] = P[L * L + b] + E[b]
        cnt = _count(k, row0, b)
        if k.prow == L and k.pcol == b:
            cnt += 1.0
        m1[b] = cnt
        m2[b] = cnt * cnt
    for t in range(1, T):
        r = row0 + t
        amax = -INFINITY
        for a in range(L):
            if la[a] > amax:
                amax = la[a]
        for a in range(L):
            v[a] = exp(la[a] - amax)
        for b in range(L):
            z = _moments_into(v, eP, m1, m2, L, k, b, Msum)
            M1 = Msum[0]
            M2 = Msum[1]
            if z < TINY:
                # the scaled products underflow: the exact log-sum-exp
                mx = -INFINITY
                for a in range(L):
                    if la[a] + P[a * L + b] > mx:
                        mx = la[a] + P[a * L + b]
                z = 0.0
                M1 = 0.0
                M2 = 0.0
                if mx > -INFINITY:
                    for a in range(L):
                        w_ = exp(la[a] + P[a * L + b] - mx)
                        kab = 1.0 if (k.prow == a and k.pcol == b) else 0.0
                        z += w_
                        M1 += w_ * (m1[a] + kab)
                        M2 += w_ * (m2[a] + 2.0 * kab * m1[a] + kab)
                    nla[b] = mx + log(z) + E[t * L + b]
                else:
                    nla[b] = -INFINITY
            else:
                nla[b] = amax + pmax + log(z) + E[t * L + b]
            if z > 0.0:
                M1 /= z
                M2 /= z
            cnt = _count(k, r, b)
            nm1[b] = M1 + cnt
            nm2[b] = M2 + 2.0 * cnt * M1 + cnt * cnt
        for b in range(L):
            la[b], m1[b], m2[b] = nla[b], nm1[b], nm2[b]
    # the end: log Z and the moments of the whole count
    mx = -INFINITY
    for b in range(L):
        if la[b] + P[(L + 1) * L + b] > mx:
            mx = la[b] + P[(L + 1) * L + b]
    tot = 0.0
    e1 = 0.0
    e2 = 0.0
    for b in range(L):
        w_ = exp(la[b] + P[(L + 1) * L + b] - mx)
        kab = 1.0 if (k.prow == L + 1 and k.pcol == b) else 0.0
        tot += w_
        e1 += w_ * (m1[b] + kab)
        e2 += w_ * (m2[b] + 2.0 * kab * m1[b] + kab)
    lz = mx + log(tot)
    e1 /= tot
    e2 /= tot
    # the gold path: its score (tilted) and its count
    gold = path_score(E, T, L, P, 1, y + row0)
    fg = 0.0
    for t in range(T):
        fg += _count(k, row0 + t, y[row0 + t])
        if t > 0 and k.prow == y[row0 + t - 1] and k.pcol == y[row0 + t]:
            fg += 1.0
    if k.prow == L and k.pcol == y[row0]:
        fg += 1.0
    if k.prow == L + 1 and k.pcol == y[row0 + T - 1]:
        fg += 1.0
    out[0] = lz - gold
    out[1] = e1 - fg
    out[2] = e2 - e1 * e1
    if out[2] < 0.0:
        out[2] = 0.0


cdef bint _tilted_scaled(const TiltWork* tw, Py_ssize_t s, double* out) noexcept nogil:
    """:c:func:`_tilted` in scaled probability space: alpha normalised at
    every position (one logarithm per position instead of L); False, with
    nothing written, where a normaliser underflows (the caller then runs the
    log-space version)."""
    cdef const Corpus* c = tw.c
    cdef const int* y = tw.y
    cdef const double* W = tw.W
    cdef const double* P = tw.P
    cdef Py_ssize_t L = tw.L
    cdef const Tilt* k = tw.k
    cdef double* E = tw.E
    cdef double* eP = tw.eP
    cdef double pmax = tw.pmax
    cdef double* al = tw.buf
    cdef double* m1 = tw.buf + L
    cdef double* m2 = tw.buf + 2 * L
    cdef double* nal = tw.buf + 3 * L
    cdef double* nm1 = tw.buf + 4 * L
    cdef double* nm2 = tw.buf + 5 * L
    cdef double* v = tw.buf + 6 * L
    cdef double Msum[2]
    cdef Py_ssize_t row0 = c.offsets[s], T = c.offsets[s + 1] - row0, t, a, b, r
    cdef double z, w_, kab, M1, M2, cnt, gold, fg, mx, tot, e1, e2, emax, lz = 0.0
    compute_emission(c.indptr, c.indices, c.data, row0, T, W, L, E)
    if k.label >= 0:
        for t in range(T):
            E[t * L + k.label] += k.delta * k.coef[row0 + t]
    mx = -INFINITY
    for b in range(L):
        if P[L * L + b] + E[b] > mx:
            mx = P[L * L + b] + E[b]
    tot = 0.0
    for b in range(L):
        al[b] = exp(P[L * L + b] + E[b] - mx)
        tot += al[b]
        cnt = _count(k, row0, b)
        if k.prow == L and k.pcol == b:
            cnt += 1.0
        m1[b] = cnt
        m2[b] = cnt * cnt
    for b in range(L):
        al[b] /= tot
    lz = mx + log(tot)
    for t in range(1, T):
        r = row0 + t
        emax = -INFINITY
        for b in range(L):
            if E[t * L + b] > emax:
                emax = E[t * L + b]
        tot = 0.0
        for b in range(L):
            z = _moments_into(al, eP, m1, m2, L, k, b, Msum)
            M1 = Msum[0]
            M2 = Msum[1]
            if z > 0.0:
                M1 /= z
                M2 /= z
            cnt = _count(k, r, b)
            nm1[b] = M1 + cnt
            nm2[b] = M2 + 2.0 * cnt * M1 + cnt * cnt
            nal[b] = z * exp(E[t * L + b] - emax)
            tot += nal[b]
        if not tot > TINY:
            return False
        for b in range(L):
            al[b], m1[b], m2[b] = nal[b] / tot, nm1[b], nm2[b]
        lz += log(tot) + emax + pmax
    mx = -INFINITY
    for b in range(L):
        if P[(L + 1) * L + b] > mx:
            mx = P[(L + 1) * L + b]
    tot = 0.0
    e1 = 0.0
    e2 = 0.0
    for b in range(L):
        w_ = al[b] * exp(P[(L + 1) * L + b] - mx)
        kab = 1.0 if (k.prow == L + 1 and k.pcol == b) else 0.0
        tot += w_
        e1 += w_ * (m1[b] + kab)
        e2 += w_ * (m2[b] + 2.0 * kab * m1[b] + kab)
    if not tot > TINY:
        return False
    lz += mx + log(tot)
    e1 /= tot
    e2 /= tot
    gold = path_score(E, T, L, P, 1, y + row0)
    fg = 0.0
    for t in range(T):
        fg += _count(k, row0 + t, y[row0 + t])
        if t > 0 and k.prow == y[row0 + t - 1] and k.pcol == y[row0 + t]:
            fg += 1.0
    if k.prow == L and k.pcol == y[row0]:
        fg += 1.0
    if k.prow == L + 1 and k.pcol == y[row0 + T - 1]:
        fg += 1.0
    out[0] = lz - gold
    out[1] = e1 - fg
    out[2] = e2 - e1 * e1
    if out[2] < 0.0:
        out[2] = 0.0
    return True


def tilted_moments(ChainData data, const int[::1] y, const double[::1] W,
                   const double[:, ::1] P, const long long[::1] sentences,
                   const double[::1] coef, Py_ssize_t label, Py_ssize_t prow,
                   Py_ssize_t pcol, double delta, double[:, ::1] out):
    """Per listed sentence i: ``out[i] = (l, l', l'')`` at theta + delta e_k.

    ``l = log Z - s(gold) = log(1 / P(gold | x))`` and its derivatives in
    delta: ``E[F_k | x] - F_k(x, gold)`` and ``Var[F_k | x]``, under the
    tilted model.  The feature k is the emission weight (attribute, label)
    when ``label >= 0`` (``coef[r]``: the attribute's value at corpus row r,
    read on the listed sentences' rows only), else the chain parameter
    ``P[prow, pcol]`` (rows L and L + 1: start and end).
    """
    cdef Py_ssize_t L = P.shape[1], i, s, a, b, max_T = 0
    cdef Py_ssize_t n = sentences.shape[0]
    cdef const Corpus* c = &data.c
    for i in range(n):
        s = sentences[i]
        max_T = max(max_T, c.offsets[s + 1] - c.offsets[s])
    if max_T == 0:
        return
    cdef Tilt k
    cdef TiltWork tw
    k.coef = &coef[0] if coef.shape[0] else NULL
    k.label, k.prow, k.pcol, k.delta = label, prow, pcol, delta
    cdef double* Pt = <double*>malloc((L + 2) * L * sizeof(double))
    cdef double* eP = <double*>malloc(L * L * sizeof(double))
    cdef double* E = <double*>malloc(max_T * L * sizeof(double))
    cdef double* buf = <double*>malloc(7 * L * sizeof(double))
    cdef double pmax = -INFINITY
    if Pt == NULL or eP == NULL or E == NULL or buf == NULL:
        free(Pt)
        free(eP)
        free(E)
        free(buf)
        raise MemoryError()
    with nogil:
        for a in range(L + 2):
            for b in range(L):
                Pt[a * L + b] = P[a, b]
        if prow >= 0:
            Pt[prow * L + pcol] += delta
        for a in range(L * L):
            if Pt[a] > pmax:
                pmax = Pt[a]
        for a in range(L * L):
            eP[a] = exp(Pt[a] - pmax)
        tw.c, tw.y, tw.W, tw.P, tw.L, tw.k = c, &y[0], &W[0] if W.shape[0] else NULL, Pt, L, &k
        tw.E, tw.eP, tw.pmax, tw.buf = E, eP, pmax, buf
        for i in range(n):
            if not _tilted_scaled(&tw, sentences[i], &out[i, 0]):
                _tilted(&tw, sentences[i], &out[i, 0])
    free(Pt)
    free(eP)
    free(E)
    free(buf)
