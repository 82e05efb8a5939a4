# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The online learners' kernel: one epoch loop, one function per update rule.

For each sentence n (in the given order) :func:`online_epoch` calls the
learner's update rule, which finds the k best label sequences under the
current weights (plain or loss-augmented, Mancev & Todorovic eq. 12) and
updates the weights as the paper says, each test made with the weights left by
the previous update (Algorithm 4).  Updates are sparse and lazily averaged
(:mod:`sklstruct._chain`).

An update rule is a ``cdef`` function of the type ``UpdateRule``; adding a
learner means writing one and giving it one line in ``_rule`` (with what it
needs of the shared workspace).
"""
from libc.math cimport exp

from sklstruct._chain cimport (ChainData, ChainWeights, Corpus, Diff, Weights, Workspace,
                               COST_HAMMING, add_difference, apply_diff, best_sequence,
                               build_diff, candidates_needed, cost_of, decode_candidates,
                               diff_margin, diff_sqnorm, gram, margin, same_path)
from sklstruct._qp cimport DenseGram, SimplexQP, dense_column, simplex_smo


cdef enum:
    GAMMA_UNIFORM = 0        # SETGAMMA of Ringel, Dror & Reichart, section 3
    GAMMA_WM = 1             # weighted margin (Dror & Reichart 2016)
    GAMMA_SOFTMIN = 2
    GAMMA_OPTIMIZATION = 3

#: The SETGAMMA functions of SWVP and SWVM, by name.
GAMMAS = {"uniform": GAMMA_UNIFORM, "wm": GAMMA_WM, "softmin": GAMMA_SOFTMIN,
          "optimization": GAMMA_OPTIMIZATION}


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
    int gamma                # SWVP, SWVM: the SETGAMMA function (GAMMAS)
    bint aggressive          # SWVP, SWVM: drop non-violating templates first


# An update rule: learn from one example; returns the number of sequences that
# changed the weights and sets ``mistake`` when the best candidate is not gold.
ctypedef long long (*UpdateRule)(Example* ex, Workspace ws, Weights* w, Params* p,
                                 bint* mistake) noexcept nogil


cdef long long perceptron_update(Example* ex, Workspace ws, Weights* w, Params* p,
                                 bint* mistake) noexcept nogil:
    """k-best perceptron (Mancev & Todorovic eq. 36): for each of the k best
    sequences y by score, w += dF(y) when w . dF(y) <= 0."""
    return _violation_steps(ex, ws, w, p, mistake, False)


cdef long long _violation_steps(Example* ex, Workspace ws, Weights* w, Params* p,
                                bint* mistake, bint weighted) noexcept nogil:
    """For each of the k best sequences y by score that violates
    (w . dF(y) <= 0, with the weights left by the previous step): w += dF(y),
    or with ``weighted`` the SWVP difference of :c:func:`weighted_violation`."""
    cdef Py_ssize_t j, n, T = ex.T
    cdef long long updates = 0
    cdef int* path
    n = decode_candidates(ws, ex.X, ex.row0, T, ex.gold, w, p.k, False, p.cost)
    mistake[0] = not same_path(ws.paths, ex.gold, T)
    for j in range(n):
        path = ws.paths + j * T
        if same_path(path, ex.gold, T) or margin(ex.X, ex.row0, T, ex.gold, path, w) > 0.0:
            continue
        if weighted:
            weighted_violation(ex, ws, w, p, path, &ws.diffs[0])
            apply_diff(&ws.diffs[0], w, 1.0)
        else:
            add_difference(ex.X, ex.row0, T, ex.gold, path, w, 1.0)
        updates += 1
    return updates


cdef long long _pa_steps(Example* ex, Workspace ws, Weights* w, Params* p, bint* mistake,
                         bint restricted) noexcept nogil:
    """Sequential passive-aggressive steps over the k candidates: for each y
    with loss l = L(y^n, y) - w . dF(y) > 0, w += min(C, l / ||dF||^2) dF(y)
    (eqs. 24-25).  ``restricted``: skip y unless it loses at least as much as
    the prediction of the current weights (y in A_w, eqs. 27-28)."""
    cdef Py_ssize_t j, n, T = ex.T
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
                best_sequence(ws, ex.X, ex.row0, T, w, ws.y_hat)
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


cdef long long _mira_step(Workspace ws, Weights* w, Params* p, Py_ssize_t m) noexcept nogil:
    """The MIRA QP over diffs 1..m-1 of ``ws`` with costs minus margins in
    ``ws.ell``: min 1/2||w' - w||^2 + C xi  s.t.  w' . D_j >= ell_j - xi,
    in its dual over a = (slack, a_j) on the simplex sum(a) = C (variable 0
    is the gold sequence: D = 0, cost 0), solved by the shared SMO
    (sklstruct._qp); then w += sum_j a_j D_j.  Returns the D_j applied."""
    cdef Py_ssize_t a
    cdef long long updates = 0
    cdef DenseGram dense
    cdef SimplexQP qp
    cdef double gain = 0.0
    if m == 1:
        return 0
    ws.diffs[0].n = 0
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


cdef long long mira_update(Example* ex, Workspace ws, Weights* w, Params* p,
                           bint* mistake) noexcept nogil:
    """k-best MIRA (Mancev & Todorovic, section 4.1): the MIRA QP over the
    k (loss-augmented) best non-gold sequences, D_y = dF(y)."""
    return _mira_step(ws, w, p, _constraints(ex, ws, w, p, mistake, False))


cdef Py_ssize_t _constraints(Example* ex, Workspace ws, Weights* w, Params* p, bint* mistake,
                             bint weighted) noexcept nogil:
    """The MIRA constraints of one example into ws.diffs[1:] and ws.ell[1:]:
    for each of the k best non-gold sequences y, D_y = dF(y) (or, with
    ``weighted``, the SWVM difference of :c:func:`weighted_violation`) and
    ell_y = L(y^n, y) - w . D_y.  Returns 1 + the number of constraints."""
    cdef Py_ssize_t j, n, m = 1, T = ex.T
    cdef int* path
    n = decode_candidates(ws, ex.X, ex.row0, T, ex.gold, w, p.k, p.augment, p.cost)
    mistake[0] = not same_path(ws.paths, ex.gold, T)
    for j in range(n):
        path = ws.paths + j * T
        if same_path(path, ex.gold, T):
            continue
        if weighted:
            weighted_violation(ex, ws, w, p, path, &ws.diffs[m])
            ws.ell[m] = cost_of(ex.gold, path, T, p.cost) - diff_margin(&ws.diffs[m], w)
        else:
            build_diff(ex.X, ex.row0, T, ex.gold, path, w, &ws.diffs[m])
            ws.ell[m] = cost_of(ex.gold, path, T, p.cost) - margin(ex.X, ex.row0, T,
                                                                   ex.gold, path, w)
        m += 1
    return m


# ---------------------------------------------------------------------------
# Structured weighted violations (Dror & Reichart 2016; Ringel, Dror & Reichart)
# ---------------------------------------------------------------------------

cdef Py_ssize_t weighted_violation(Example* ex, Workspace ws, Weights* w, Params* p,
                                   const int* ystar, Diff* out) noexcept nogil:
    """D = sum_J gamma(m^J) dF(x, y, m^J) over the single-position templates
    J = {i}, i where ystar differs from gold (m^J: gold with position i from
    ystar), into ``out``; returns the number of templates with gamma > 0.

    The template margins v_J = w . dF(m^J) are exact; SETGAMMA (section 3):
    uniform 1/|JJ|; wm |min(v_J, 0)| / sum |min(v_j, 0)|; softmin
    exp(-v_J) / sum exp(-v_j), computed from v - min v so it cannot
    overflow; optimization: the linear program  max_gamma w . sum gamma_J
    Phi(x, m^J)  s.t. the simplex and  w . sum gamma_J dF_J <= 0, i.e.
    min sum gamma_J v_J, whose optimum is the vertex at argmin v_J (first on
    ties); it is feasible iff min v_J <= 0.  ``aggressive`` drops the
    templates with v_J > 0 first.  When no template is left (aggressive and
    none violates), or wm / optimization have no violation to weigh, D is
    the full difference dF(x, y, ystar) (the template of all differing
    positions, gamma = 1), which violates whenever ystar scores at least
    the gold sequence, so the two conditions of Dror & Reichart hold."""
    cdef Py_ssize_t i, t, n_J = 0, n_used = 0, T = ex.T
    cdef double vmin = 0.0, total = 0.0, g
    cdef int* m = ws.tmp
    cdef Diff one
    for t in range(T):
        m[t] = ex.gold[t]
    # template margins
    for t in range(T):
        if ystar[t] == ex.gold[t]:
            continue
        m[t] = ystar[t]
        build_diff(ex.X, ex.row0, T, ex.gold, m, w, out)
        m[t] = ex.gold[t]
        ws.tv[t] = diff_margin(out, w)
        if p.aggressive and ws.tv[t] > 0.0:
            ws.tg[t] = -1.0                    # dropped
            continue
        ws.tg[t] = 0.0
        if n_J == 0 or ws.tv[t] < vmin:
            vmin = ws.tv[t]
        n_J += 1
    out.n = 0
    if n_J == 0 or (vmin > 0.0 and (p.gamma == GAMMA_WM or p.gamma == GAMMA_OPTIMIZATION)):
        build_diff(ex.X, ex.row0, T, ex.gold, ystar, w, out)
        return 1
    # the weights of the templates kept (tg >= 0 marks them)
    for t in range(T):
        if ystar[t] == ex.gold[t] or ws.tg[t] < 0.0:
            continue
        if p.gamma == GAMMA_UNIFORM:
            g = 1.0
        elif p.gamma == GAMMA_WM:
            g = -ws.tv[t] if ws.tv[t] < 0.0 else 0.0
        elif p.gamma == GAMMA_SOFTMIN:
            g = exp(-(ws.tv[t] - vmin))
        else:
            g = 1.0 if ws.tv[t] == vmin and total == 0.0 else 0.0
        ws.tg[t] = g
        total += g
    if not total > 0.0:          # wm with no strict violation (all v_J = 0)
        build_diff(ex.X, ex.row0, T, ex.gold, ystar, w, out)
        return 1
    # D = sum gamma_J dF_J, each template's entries appended, scaled
    for t in range(T):
        if ystar[t] == ex.gold[t] or ws.tg[t] <= 0.0:
            continue
        g = ws.tg[t] / total
        ws.tg[t] = g
        m[t] = ystar[t]
        one.e = out.e + out.n
        build_diff(ex.X, ex.row0, T, ex.gold, m, w, &one)
        m[t] = ex.gold[t]
        for i in range(one.n):
            one.e[i].val *= g
        out.n += one.n
        n_used += 1
    return n_used


cdef long long swvp_update(Example* ex, Workspace ws, Weights* w, Params* p,
                           bint* mistake) noexcept nogil:
    """SWVP (Dror & Reichart 2016, Algorithm 1 of Ringel, Dror & Reichart):
    for each of the k best sequences y* by score that violates
    (w . dF(y*) <= 0; k = 1: the argmax), w += sum_J gamma(m^J) dF(m^J)."""
    return _violation_steps(ex, ws, w, p, mistake, True)


cdef long long swvm_update(Example* ex, Workspace ws, Weights* w, Params* p,
                           bint* mistake) noexcept nogil:
    """SWVM (Ringel, Dror & Reichart, Figure 1): the MIRA QP whose constraint
    for each of the k best non-gold sequences y* by score uses
    D = sum_J gamma(m^J) dF(m^J):  w' . D >= L(y, y*) - xi."""
    return _mira_step(ws, w, p, _constraints(ex, ws, w, p, mistake, True))


cdef struct Rule:
    UpdateRule update
    Py_ssize_t extra_diffs   # joint-feature differences held at once, per candidate, beyond one
    bint augmentable         # takes loss-augmented candidates (eq. 12) when asked to
    bint templates           # its differences are sums of single-position ones (size them so)


cdef inline Rule _entry(UpdateRule update, Py_ssize_t extra_diffs, bint augmentable,
                        bint templates) noexcept:
    cdef Rule r
    r.update = update
    r.extra_diffs = extra_diffs
    r.augmentable = augmentable
    r.templates = templates
    return r


cdef Rule _rule(str name) except *:
    """Every update rule of this family, once: adding a learner means its
    function above and one line here."""
    if name == "perceptron":
        return _entry(perceptron_update, 0, False, False)
    if name == "pa":
        return _entry(pa_update, 0, True, False)
    if name == "rpa":
        return _entry(rpa_update, 0, True, False)
    if name == "mira":
        return _entry(mira_update, 1, True, False)
    if name == "swvp":
        return _entry(swvp_update, 0, False, True)
    if name == "swvm":
        return _entry(swvm_update, 1, False, True)
    raise ValueError(f"unknown update rule {name!r}")


def online_epoch(ChainData data, const int[::1] y, const long long[::1] order,
                 ChainWeights weights, str rule, Py_ssize_t k, double C=1.0,
                 int cost=COST_HAMMING, double tol=1e-6, Py_ssize_t max_smo_steps=1000,
                 bint augment=True, str gamma="uniform", bint aggressive=True):
    """Run one epoch of an online learner (callers validate all arguments).

    Parameters
    ----------
    data : ChainData, the stacked corpus
    y : int32 array, one encoded gold label per row
    order : int64 array, the sentence indices to visit, in order
    weights : ChainWeights, updated in place (its averaging clock too)
    rule : "perceptron" (eq. 36), "pa" (eqs. 24-25), "rpa" (eqs. 27-28),
        "mira" (section 4.1), "swvp" or "swvm" (Ringel, Dror & Reichart)
    k : number of best sequences per example
    C : the step cap (pa, rpa) or the slack weight (mira)
    cost : COSTS code of L(y^n, y)
    tol, max_smo_steps : the MIRA solver's KKT tolerance and step limit
    augment : pa, rpa and mira use the loss-augmented k best (eq. 12); False:
        the k best by score (prediction-based updates)
    gamma, aggressive : swvp and swvm: the SETGAMMA function (GAMMAS) and
        whether non-violating templates are dropped first

    Returns
    -------
    n_mistakes : sentences whose best candidate was not the gold sequence
    n_updates : sequences that changed the weights
    """
    cdef Rule r = _rule(rule)
    cdef UpdateRule update = r.update
    cdef Params p
    p.k = k
    p.C = C
    p.cost = cost
    p.tol = tol
    p.max_steps = max_smo_steps
    p.augment = augment and r.augmentable
    if gamma not in GAMMAS:
        raise ValueError(f"unknown gamma {gamma!r}")
    p.gamma = GAMMAS[gamma]
    p.aggressive = aggressive
    cdef Py_ssize_t K = candidates_needed(k, p.augment, cost)
    cdef Workspace ws = Workspace(data, weights.n_labels, weights.order, K,
                                  1 + r.extra_diffs * K, r.templates)
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
