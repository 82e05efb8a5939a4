# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The online learners' kernel: one epoch loop, one function per update rule.

For each sentence n (in the given order) :func:`online_epoch` calls the
learner's update rule, which finds the k best label sequences under the
current weights (plain or loss-augmented, Mancev & Todorovic eq. 12) and
updates the weights as the paper says, each test made with the weights left by
the previous update (Algorithm 4).  Updates are sparse and lazily averaged
(:mod:`sklstruct._chain`).

An update rule is a ``cdef`` function of the type ``UpdateRule``; adding a
learner means writing one and naming it in ``_rule``.
"""
from sklstruct._chain cimport (ChainData, ChainWeights, Corpus, Weights, Workspace,
                               COST_HAMMING, add_difference, apply_diff, build_diff,
                               candidates_needed, cost_of, decode_candidates, diff_sqnorm,
                               gram, margin, same_path)
from sklstruct._qp cimport DenseGram, SimplexQP, dense_column, simplex_smo
from sklstruct._viterbi cimport compute_emission, viterbi


cdef struct Example:
    Corpus* X
    Py_ssize_t row0
    Py_ssize_t T
    const int* gold


cdef struct Params:
    Py_ssize_t k             # candidates per example
    double C                 # step cap (PA, RPA) or slack weight (MIRA)
    int cost                 # COSTS code of L(y^n, y)
    double tol               # MIRA's KKT tolerance
    Py_ssize_t max_steps     # MIRA's SMO step cap
    bint augment             # PA, RPA, MIRA: loss-augmented candidates (eq. 12)


# An update rule: learn from one example; returns the number of sequences that
# changed the weights and sets ``mistake`` when the best candidate is not gold.
ctypedef long long (*UpdateRule)(Example* ex, Workspace ws, Weights* w, Params* p,
                                 bint* mistake) noexcept nogil


cdef long long perceptron_update(Example* ex, Workspace ws, Weights* w, Params* p,
                                 bint* mistake) noexcept nogil:
    """k-best perceptron (Mancev & Todorovic eq. 36): for each of the k best
    sequences y by score, w += dF(y) when w . dF(y) <= 0."""
    cdef Py_ssize_t j, n, T = ex.T
    cdef long long updates = 0
    cdef int* path
    n = decode_candidates(ws, ex.X, ex.row0, T, ex.gold, w, p.k, False, p.cost)
    mistake[0] = not same_path(ws.paths, ex.gold, T)
    for j in range(n):
        path = ws.paths + j * T
        if not same_path(path, ex.gold, T) and margin(ex.X, ex.row0, T, ex.gold, path, w) <= 0.0:
            add_difference(ex.X, ex.row0, T, ex.gold, path, w, 1.0)
            updates += 1
    return updates


cdef long long _pa_steps(Example* ex, Workspace ws, Weights* w, Params* p, bint* mistake,
                         bint restricted) noexcept nogil:
    """Sequential passive-aggressive steps over the k candidates: for each y
    with loss l = L(y^n, y) - w . dF(y) > 0, w += min(C, l / ||dF||^2) dF(y)
    (eqs. 24-25).  ``restricted``: skip y unless it loses at least as much as
    the prediction of the current weights (y in A_w, eqs. 27-28)."""
    cdef Py_ssize_t j, n, T = ex.T, L = w.L
    cdef long long updates = 0
    cdef int* path
    cdef double ell, sq, step, ell_hat = 0.0
    cdef bint stale = True
    n = decode_candidates(ws, ex.X, ex.row0, T, ex.gold, w, p.k, p.augment, p.cost)
    mistake[0] = not same_path(ws.paths, ex.gold, T)
    for j in range(n):
        path = ws.paths + j * T
        if same_path(path, ex.gold, T):
            continue
        ell = cost_of(ex.gold, path, T, p.cost) - margin(ex.X, ex.row0, T, ex.gold, path, w)
        if ell <= 0.0:
            continue
        if restricted:
            if stale:
                compute_emission(ex.X.indptr, ex.X.indices, ex.X.data, ex.row0, T, w.W, L,
                                 ws.E)
                viterbi(ws.E, T, L, w.P, ws.kb.delta, ws.kb.back, ws.y_hat)
                ell_hat = (cost_of(ex.gold, ws.y_hat, T, p.cost)
                           - margin(ex.X, ex.row0, T, ex.gold, ws.y_hat, w))
                stale = False
            if ell < ell_hat:
                continue
        build_diff(ex.X, ex.row0, T, ex.gold, path, w, &ws.diffs[0])
        sq = diff_sqnorm(&ws.table, &ws.diffs[0])
        step = ell / sq if sq > 0.0 else p.C
        if step > p.C:
            step = p.C
        apply_diff(&ws.diffs[0], w, step)
        updates += 1
        stale = True
    return updates


cdef long long pa_update(Example* ex, Workspace ws, Weights* w, Params* p,
                         bint* mistake) noexcept nogil:
    """k-best passive-aggressive (eqs. 24-25)."""
    return _pa_steps(ex, ws, w, p, mistake, False)


cdef long long rpa_update(Example* ex, Workspace ws, Weights* w, Params* p,
                          bint* mistake) noexcept nogil:
    """Restricted k-best passive-aggressive (eqs. 27-28)."""
    return _pa_steps(ex, ws, w, p, mistake, True)


cdef long long mira_update(Example* ex, Workspace ws, Weights* w, Params* p,
                           bint* mistake) noexcept nogil:
    """k-best MIRA (section 4.1): the QP  min 1/2||w' - w||^2 + C xi  s.t.
    w' . dF(y) >= L(y^n, y) - xi  over the non-gold candidates, in its dual
    over a = (slack, a_y) on the simplex sum(a) = C (variable 0 is the gold
    sequence: dF = 0, cost 0), solved by the shared SMO (sklstruct._qp);
    then w += sum_y a_y dF(y)."""
    cdef Py_ssize_t j, a, n, m = 1, T = ex.T
    cdef long long updates = 0
    cdef int* path
    cdef DenseGram dense
    cdef SimplexQP qp
    cdef double gain = 0.0
    n = decode_candidates(ws, ex.X, ex.row0, T, ex.gold, w, p.k, p.augment, p.cost)
    mistake[0] = not same_path(ws.paths, ex.gold, T)
    ws.diffs[0].n = 0
    for j in range(n):
        path = ws.paths + j * T
        if same_path(path, ex.gold, T):
            continue
        build_diff(ex.X, ex.row0, T, ex.gold, path, w, &ws.diffs[m])
        ws.ell[m] = cost_of(ex.gold, path, T, p.cost) - margin(ex.X, ex.row0, T, ex.gold,
                                                               path, w)
        m += 1
    if m == 1:
        return 0
    gram(&ws.table, ws.diffs, m, ws.G)
    ws.ell[0] = 0.0
    for a in range(m):
        ws.alpha[a] = 0.0
        ws.grad[a] = p.C * ws.G[a * m] - ws.ell[a]
    ws.alpha[0] = p.C
    dense.G = ws.G
    dense.m = m
    qp.m = m
    qp.alpha = ws.alpha
    qp.grad = ws.grad
    qp.column = dense_column
    qp.ctx = &dense
    simplex_smo(&qp, p.tol, 0.0, False, p.max_steps, &gain)
    for a in range(1, m):
        if ws.alpha[a] > 0.0:
            apply_diff(&ws.diffs[a], w, ws.alpha[a])
            updates += 1
    return updates


cdef UpdateRule _rule(str name) except NULL:
    if name == "perceptron":
        return perceptron_update
    if name == "pa":
        return pa_update
    if name == "rpa":
        return rpa_update
    if name == "mira":
        return mira_update
    raise ValueError(f"unknown update rule {name!r}")


#: How many joint-feature differences each rule holds at once, beyond k.
_EXTRA_DIFFS = {"perceptron": 0, "pa": 0, "rpa": 0, "mira": 1}


def online_epoch(ChainData data, const int[::1] y, const long long[::1] order,
                 ChainWeights weights, str rule, Py_ssize_t k, double C=1.0,
                 int cost=COST_HAMMING, double tol=1e-6, Py_ssize_t max_smo_steps=1000,
                 bint augment=True):
    """Run one epoch of an online learner (callers validate all arguments).

    Parameters
    ----------
    data : ChainData, the stacked corpus
    y : int32 array, one encoded gold label per row
    order : int64 array, the sentence indices to visit, in order
    weights : ChainWeights, updated in place (its averaging clock too)
    rule : "perceptron" (eq. 36), "pa" (eqs. 24-25), "rpa" (eqs. 27-28) or
        "mira" (section 4.1)
    k : number of best sequences per example
    C : the step cap (pa, rpa) or the slack weight (mira)
    cost : COSTS code of L(y^n, y)
    tol, max_smo_steps : the MIRA solver's KKT tolerance and step limit
    augment : pa, rpa and mira use the loss-augmented k best (eq. 12); False:
        the k best by score (prediction-based updates)

    Returns
    -------
    n_mistakes : sentences whose best candidate was not the gold sequence
    n_updates : sequences that changed the weights
    """
    cdef UpdateRule update = _rule(rule)
    cdef Params p
    p.k = k
    p.C = C
    p.cost = cost
    p.tol = tol
    p.max_steps = max_smo_steps
    p.augment = augment and rule != "perceptron"
    cdef Py_ssize_t K = candidates_needed(k, p.augment, cost)
    cdef Workspace ws = Workspace(data, weights.n_labels, K, 1 + _EXTRA_DIFFS[rule] * K)
    cdef Weights* w = weights.bind()
    cdef Example ex
    cdef Py_ssize_t i, s, n_sent = order.shape[0]
    cdef long long n_mistakes = 0, n_updates = 0
    cdef bint mistake
    ex.X = &data.c
    with nogil:
        for i in range(n_sent):
            s = order[i]
            ex.row0 = data.c.offsets[s]
            ex.T = data.c.offsets[s + 1] - ex.row0
            ex.gold = &y[ex.row0]
            n_updates += update(&ex, ws, w, &p, &mistake)
            n_mistakes += mistake
            w.n_seen += 1
    weights.n_seen = <long long>w.n_seen
    return n_mistakes, n_updates
