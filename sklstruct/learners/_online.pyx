# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The online learners' kernel: one epoch loop, one function per update rule.

For each sentence n (in the given order) :func:`online_epoch` calls the
learner's update rule, which finds the k best label sequences under the
current weights (plain or loss-augmented, Mancev & Todorovic eq. 12) and
updates the weights as the paper says, each test made with the weights left by
the previous update (Algorithm 4).  Updates are sparse and lazily averaged
(:mod:`sklstruct._chain`).

An update rule is a ``cdef`` function of the type ``UpdateRule``; its row of
the table :data:`RULES` names its parameters (with their defaults) and the
scratch it needs of the shared workspace.  Adding a learner means writing one
function and one row: ``Params``, :func:`online_epoch` and ``Workspace`` stay
as they are.
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


cdef enum:
    MAX_RULE_ARGS = 8        # parameters a rule's row may name, at most


cdef struct Params:
    Py_ssize_t k             # candidates per example
    int cost                 # COSTS code of L(y^n, y)
    bint augment             # loss-augmented candidates (eq. 12): asked for, and the rule takes them
    double arg[MAX_RULE_ARGS]    # the rule's own parameters, in the order of its row


cdef struct Templates:
    # SWVP's and SWVM's weighting of the single-position templates
    int gamma                # the SETGAMMA function (GAMMAS)
    bint aggressive          # drop the templates that do not violate first


cdef inline Templates _templates(const double* arg) noexcept nogil:
    """The template weighting from two consecutive rule parameters (gamma, aggressive)."""
    cdef Templates t
    t.gamma = <int>arg[0]
    t.aggressive = arg[1] != 0.0
    return t


# An update rule: learn from one example; returns the number of sequences that
# changed the weights and sets ``mistake`` when the best candidate is not gold.
ctypedef long long (*UpdateRule)(Example* ex, Workspace ws, Weights* w, Params* p,
                                 bint* mistake) noexcept nogil


cdef long long perceptron_update(Example* ex, Workspace ws, Weights* w, Params* p,
                                 bint* mistake) noexcept nogil:
    """k-best perceptron (Mancev & Todorovic eq. 36): for each of the k best
    sequences y by score, w += dF(y) when w . dF(y) <= 0.  No parameters."""
    return _violation_steps(ex, ws, w, p, mistake, NULL)


cdef long long _violation_steps(Example* ex, Workspace ws, Weights* w, Params* p,
                                bint* mistake, const Templates* weighted) noexcept nogil:
    """For each of the k best sequences y by score that violates
    (w . dF(y) <= 0, with the weights left by the previous step): w += dF(y),
    or with ``weighted`` templates the SWVP difference of
    :c:func:`weighted_violation`."""
    cdef Py_ssize_t j, n, T = ex.T
    cdef long long updates = 0
    cdef int* path
    n = decode_candidates(ws, ex.X, ex.row0, T, ex.gold, w, p.k, False, p.cost)
    mistake[0] = not same_path(ws.paths, ex.gold, T)
    for j in range(n):
        path = ws.paths + j * T
        if same_path(path, ex.gold, T) or margin(ex.X, ex.row0, T, ex.gold, path, w) > 0.0:
            continue
        if weighted != NULL:
            weighted_violation(ex, ws, w, weighted, path, &ws.diffs[0])
            apply_diff(&ws.diffs[0], w, 1.0)
        else:
            add_difference(ex.X, ex.row0, T, ex.gold, path, w, 1.0)
        updates += 1
    return updates


cdef long long _pa_steps(Example* ex, Workspace ws, Weights* w, Params* p, bint* mistake,
                         double C, bint restricted) noexcept nogil:
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
        step = ell / sq if sq > 0.0 else C
        if step > C:
            step = C
        apply_diff(&ws.diffs[0], w, step)
        updates += 1
        stale = True
    return updates


cdef long long pa_update(Example* ex, Workspace ws, Weights* w, Params* p,
                         bint* mistake) noexcept nogil:
    """k-best passive-aggressive (eqs. 24-25).  Parameters: C."""
    return _pa_steps(ex, ws, w, p, mistake, p.arg[0], False)


cdef long long rpa_update(Example* ex, Workspace ws, Weights* w, Params* p,
                          bint* mistake) noexcept nogil:
    """Restricted k-best passive-aggressive (eqs. 27-28).  Parameters: C."""
    return _pa_steps(ex, ws, w, p, mistake, p.arg[0], True)


cdef long long _mira_step(Workspace ws, Weights* w, const double* solver,
                          Py_ssize_t m) noexcept nogil:
    """The MIRA QP over diffs 1..m-1 of ``ws`` with costs minus margins in
    ``ws.ell``: min 1/2||w' - w||^2 + C xi  s.t.  w' . D_j >= ell_j - xi,
    in its dual over a = (slack, a_j) on the simplex sum(a) = C (variable 0
    is the gold sequence: D = 0, cost 0), solved by the shared SMO
    (sklstruct._qp); then w += sum_j a_j D_j.  ``solver``: three consecutive
    rule parameters, C, the KKT tolerance and the SMO step cap.  Returns the
    D_j applied."""
    cdef double C = solver[0], tol = solver[1]
    cdef Py_ssize_t max_steps = <Py_ssize_t>solver[2]
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
        ws.grad[a] = C * ws.G[a * m] - ws.ell[a]
    ws.alpha[0] = C
    dense.G = ws.G
    dense.m = m
    qp.m = m
    qp.alpha = ws.alpha
    qp.grad = ws.grad
    qp.column = dense_column
    qp.ctx = &dense
    simplex_smo(&qp, tol, 0.0, False, max_steps, &gain)
    for a in range(1, m):
        if ws.alpha[a] > 0.0:
            apply_diff(&ws.diffs[a], w, ws.alpha[a])
            updates += 1
    return updates


cdef long long mira_update(Example* ex, Workspace ws, Weights* w, Params* p,
                           bint* mistake) noexcept nogil:
    """k-best MIRA (Mancev & Todorovic, section 4.1): the MIRA QP over the
    k (loss-augmented) best non-gold sequences, D_y = dF(y).  Parameters: C,
    tol, max_smo_steps."""
    return _mira_step(ws, w, &p.arg[0], _constraints(ex, ws, w, p, mistake, NULL))


cdef Py_ssize_t _constraints(Example* ex, Workspace ws, Weights* w, Params* p, bint* mistake,
                             const Templates* weighted) noexcept nogil:
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
        if weighted != NULL:
            weighted_violation(ex, ws, w, weighted, path, &ws.diffs[m])
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

cdef Py_ssize_t weighted_violation(Example* ex, Workspace ws, Weights* w,
                                   const Templates* tpl, const int* ystar,
                                   Diff* out) noexcept nogil:
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
        if tpl.aggressive and ws.tv[t] > 0.0:
            ws.tg[t] = -1.0                    # dropped
            continue
        ws.tg[t] = 0.0
        if n_J == 0 or ws.tv[t] < vmin:
            vmin = ws.tv[t]
        n_J += 1
    out.n = 0
    if n_J == 0 or (vmin > 0.0 and (tpl.gamma == GAMMA_WM or tpl.gamma == GAMMA_OPTIMIZATION)):
        build_diff(ex.X, ex.row0, T, ex.gold, ystar, w, out)
        return 1
    # the weights of the templates kept (tg >= 0 marks them)
    for t in range(T):
        if ystar[t] == ex.gold[t] or ws.tg[t] < 0.0:
            continue
        if tpl.gamma == GAMMA_UNIFORM:
            g = 1.0
        elif tpl.gamma == GAMMA_WM:
            g = -ws.tv[t] if ws.tv[t] < 0.0 else 0.0
        elif tpl.gamma == GAMMA_SOFTMIN:
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
    (w . dF(y*) <= 0; k = 1: the argmax), w += sum_J gamma(m^J) dF(m^J).
    Parameters: gamma, aggressive."""
    cdef Templates t = _templates(&p.arg[0])
    return _violation_steps(ex, ws, w, p, mistake, &t)


cdef long long swvm_update(Example* ex, Workspace ws, Weights* w, Params* p,
                           bint* mistake) noexcept nogil:
    """SWVM (Ringel, Dror & Reichart, Figure 1): the MIRA QP whose constraint
    for each of the k best non-gold sequences y* by score uses
    D = sum_J gamma(m^J) dF(m^J):  w' . D >= L(y, y*) - xi.  Parameters: C,
    tol, max_smo_steps, gamma, aggressive."""
    cdef Templates t = _templates(&p.arg[3])
    return _mira_step(ws, w, &p.arg[0], _constraints(ex, ws, w, p, mistake, &t))


cdef class Rule:
    """One row of the table: an update rule and what it needs.

    ``params``: its parameters in the order it reads them from
    ``Params.arg``, each ``(name, default)`` or ``(name, default, codes)``
    for one given by name (``codes`` maps the names to numbers);
    ``extra_diffs``: joint-feature differences it holds at once, per
    candidate, beyond one; ``augmentable``: it takes loss-augmented candidates
    (eq. 12) when asked to; ``templates``: its differences are sums of
    single-position ones (the workspace sizes them so).
    """
    cdef UpdateRule update
    cdef readonly tuple params
    cdef readonly Py_ssize_t extra_diffs
    cdef readonly bint augmentable, templates

    cdef void fill(self, Params* p, dict given) except *:
        """The rule's parameters from ``given`` (by name; the defaults for
        the rest) into ``p.arg``."""
        cdef Py_ssize_t i
        unknown = set(given) - {spec[0] for spec in self.params}
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)} of this update rule; it "
                             f"takes {[spec[0] for spec in self.params]}")
        for i, spec in enumerate(self.params):
            value = given.get(spec[0], spec[1])
            if len(spec) > 2:
                if value not in spec[2]:
                    raise ValueError(f"unknown {spec[0]} {value!r}")
                value = spec[2][value]
            p.arg[i] = float(value)


cdef Rule _row(UpdateRule update, tuple params, Py_ssize_t extra_diffs, bint augmentable,
               bint templates):
    """A row of the table (see :class:`Rule`)."""
    if len(params) > MAX_RULE_ARGS:
        raise ValueError(f"an update rule takes at most {MAX_RULE_ARGS} parameters")
    cdef Rule r = Rule.__new__(Rule)
    r.update = update
    r.params = params
    r.extra_diffs = extra_diffs
    r.augmentable = augmentable
    r.templates = templates
    return r


_MIRA = (("C", 1.0), ("tol", 1e-6), ("max_smo_steps", 1000))
_TEMPLATES = (("gamma", "uniform", GAMMAS), ("aggressive", True))


cdef dict _table():
    """Every update rule of this family, once: adding a learner means its
    function above and one row here."""
    # name: _row(function, parameters, extra_diffs, augmentable, templates)
    return {
        "perceptron": _row(perceptron_update, (), 0, False, False),
        "pa": _row(pa_update, (("C", 1.0),), 0, True, False),
        "rpa": _row(rpa_update, (("C", 1.0),), 0, True, False),
        "mira": _row(mira_update, _MIRA, 1, True, False),
        "swvp": _row(swvp_update, _TEMPLATES, 0, False, True),
        "swvm": _row(swvm_update, _MIRA + _TEMPLATES, 1, False, True),
    }


#: The update rules by name (:class:`Rule`).
RULES = _table()


def online_epoch(ChainData data, const int[::1] y, const long long[::1] order,
                 ChainWeights weights, str rule, Py_ssize_t k, int cost=COST_HAMMING,
                 bint augment=True, **params):
    """Run one epoch of an online learner (callers validate all arguments).

    Parameters
    ----------
    data : ChainData, the stacked corpus
    y : int32 array, one encoded gold label per row
    order : int64 array, the sentence indices to visit, in order
    weights : ChainWeights, updated in place (its averaging clock too)
    rule : a key of :data:`RULES`: "perceptron" (eq. 36), "pa" (eqs. 24-25),
        "rpa" (eqs. 27-28), "mira" (section 4.1), "swvp" or "swvm" (Ringel,
        Dror & Reichart)
    k : number of best sequences per example
    cost : COSTS code of L(y^n, y)
    augment : a rule that takes them (pa, rpa, mira) uses the loss-augmented
        k best (eq. 12); False: the k best by score (prediction-based updates)
    **params : the rule's own parameters, as its row names them (the
        defaults for those not given): C, the step cap (pa, rpa) or the slack
        weight (mira, swvm); tol and max_smo_steps, the MIRA solver's KKT
        tolerance and step limit; gamma and aggressive (swvp, swvm): the
        SETGAMMA function (GAMMAS) and whether non-violating templates are
        dropped first

    Returns
    -------
    n_mistakes : sentences whose best candidate was not the gold sequence
    n_updates : sequences that changed the weights
    """
    if rule not in RULES:
        raise ValueError(f"unknown update rule {rule!r}")
    cdef Rule r = RULES[rule]
    cdef UpdateRule update = r.update
    cdef Params p
    p.k = k
    p.cost = cost
    p.augment = augment and r.augmentable
    r.fill(&p, params)
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
