"""L-BFGS for objectives with millions of parameters, and OWL-QN for their
L1-regularised form.

scipy's ``minimize(method="L-BFGS-B")`` costs about 0.8 s per iteration of
its own bookkeeping at 2.7 million parameters (measured here on a diagonal
quadratic: 16 iterations, 12.8 s, scipy 1.17), more than the CRF objective
itself on CoNLL-2000.  This is plain L-BFGS without bounds: the two-loop
recursion of Nocedal (1980) over the last ``m`` updates, about ``4 m``
vector operations per iteration, and scipy's public Wolfe line search
(:func:`scipy.optimize.line_search`).  ``tests/test_crf.py`` checks it
against scipy's L-BFGS-B on the same problems.  :func:`owlqn` (Andrew &
Gao 2007) adds an L1 term by the same recursion over the pseudo-gradient,
with a backtracking line search on orthant-projected points, as CRFsuite
does through liblbfgs (``tests/learners/test_crf_l1.py`` checks it).
"""
import warnings
from collections import deque

import numpy as np
from scipy.linalg.blas import daxpy
from scipy.optimize import OptimizeResult, line_search
try:                                   # scipy's warning class is not public
    from scipy.optimize._linesearch import LineSearchWarning
except ImportError:                    # pragma: no cover
    LineSearchWarning = RuntimeWarning
from threadpoolctl import threadpool_limits

from ._validation import MAX_COUNT, check_number, check_real_array


def lbfgs(fun, x0, max_iter=100, gtol=1e-5, ftol=1e-10, m=6, callback=None, rtol=None,
          past=0, delta=0.0, max_linesearch=20):
    """Minimise ``fun`` by L-BFGS.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)``.
    x0 : ndarray
    max_iter : int
        Iterations (accepted steps).
    gtol : float
        Stop when the largest absolute gradient component is at most ``gtol``
        (scipy's criterion of the same name).
    ftol : float
        Stop when an iteration lowers the value by at most
        ``ftol * max(|f|, |f_new|, 1)`` (scipy's ``ftol``).
    m : int, default=6
        Updates kept (CRFsuite's default; each costs two vectors of x's size).
    callback : callable, optional
        Called with the new x after each iteration.
    rtol : float, optional
        Also stop when ``||g|| / max(1, ||x||) <= rtol`` (liblbfgs's and
        CRFsuite's ``epsilon``).
    past, delta : int and float
        Also stop when ``(f_{k-past} - f_k) / f_k < delta`` (liblbfgs's
        ``past`` and ``delta``, CRFsuite's ``period`` and ``delta``); 0 turns
        it off.
    max_linesearch : int, default=20
        Iterations of the line search.

    Returns
    -------
    OptimizeResult
        ``x``, ``fun``, ``jac``, ``nit``, ``nfev``, ``success``, ``message``.

    Notes
    -----
    BLAS runs single-threaded inside (threadpoolctl): a threaded dot product
    sums in an order that depends on the thread count, and L-BFGS would
    follow it to a slightly different point; this way the result depends
    only on ``fun``.  The vector operations are memory-bound, so threads
    gain little here.
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable; got {type(fun).__name__}")
    x0 = check_real_array(x0, "x0", 1, kinds="iuf")
    max_iter = check_number(max_iter, "max_iter", 0, MAX_COUNT, integer=True)
    m = check_number(m, "m", 1, MAX_COUNT, integer=True)
    gtol, ftol = check_number(gtol, "gtol", 0), check_number(ftol, "ftol", 0)
    past = check_number(past, "past", 0, MAX_COUNT, integer=True)
    delta = check_number(delta, "delta", 0)
    rtol = None if rtol is None else check_number(rtol, "rtol", 0)
    max_linesearch = check_number(max_linesearch, "max_linesearch", 1, MAX_COUNT, integer=True)
    with threadpool_limits(limits=1, user_api="blas"):
        return _lbfgs(fun, x0, max_iter, gtol, ftol, m, callback, rtol, past, delta,
                      max_linesearch)


def _converged_extra(x, g, f, rtol, past, delta, past_f):
    """The message of liblbfgs's stopping tests that hold (relative gradient
    norm, value over the last ``past`` iterations), else None; records ``f``."""
    if rtol is not None and np.linalg.norm(g) <= rtol * max(1.0, np.linalg.norm(x)):
        return "the relative gradient norm is below rtol"
    if past:
        if len(past_f) == past and (past_f[0] - f) / max(abs(f), 1e-300) < delta:
            return f"the value fell by less than delta over the last {past} iterations"
        past_f.append(f)
    return None


def _lbfgs(fun, x0, max_iter, gtol, ftol, m, callback, rtol=None, past=0, delta=0.0,
           max_linesearch=20):
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    if not (np.isfinite(f) and np.isfinite(g).all()):
        raise ValueError("fun(x0) is not finite: the value or the gradient holds NaN or "
                         "infinity at the starting point")
    nfev = 1
    history = deque(maxlen=m)             # (s, y, 1 / (y . s))
    f_old = None
    message, success = "maximum number of iterations reached", False
    nit = 0
    cache = {}
    past_f = deque(maxlen=max(past, 1))

    def evaluate(xt):
        """fun at xt, once: the line search asks for the value and the
        gradient at the same point in two calls."""
        nonlocal nfev
        if cache.get("x") is None or not np.array_equal(cache["x"], xt):
            cache["x"] = xt
            cache["f"], cache["g"] = fun(xt)
            nfev += 1
        return cache["f"], cache["g"]

    while nit < max_iter:
        if np.max(np.abs(g)) <= gtol:
            message, success = "the gradient is below gtol", True
            break
        # (with no usable history, a first step of length at most 1)
        p = _two_loop(history, g, -1.0 / max(1.0, float(np.linalg.norm(g))))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LineSearchWarning)   # reported in `message`
            step, _, _, f_new, _, g_new = line_search(
                lambda xt: evaluate(xt)[0], lambda xt: evaluate(xt)[1], x, p, gfk=g,
                old_fval=f, old_old_fval=f_old, maxiter=max_linesearch)
        if step is None:
            if history:                 # restart from steepest descent once
                history.clear()
                continue
            message = "the line search found no acceptable step"
            break
        if g_new is None:
            f_new, g_new = evaluate(x + step * p)
        s = step * p
        y = g_new - g
        sy = float(s @ y)
        x = x + s
        f_old, f, g = f, f_new, g_new
        nit += 1
        if sy > 1e-12 * float(np.linalg.norm(s) * np.linalg.norm(y)):
            history.append((s, y, 1.0 / sy))
        if callback is not None:
            callback(x)
        if f_old - f <= ftol * max(abs(f_old), abs(f), 1.0):
            message, success = "the relative reduction of the value is below ftol", True
            break
        extra = _converged_extra(x, g, f, rtol, past, delta, past_f)
        if extra:
            message, success = extra, True
            break
    return OptimizeResult(x=x, fun=f, jac=g, nit=nit, nfev=nfev, success=success,
                          message=message)


def pseudo_gradient(x, g, c):
    """The pseudo-gradient of ``f(x) + c ||x||_1`` from the gradient ``g`` of
    ``f`` (Andrew & Gao 2007, section 3.1): where ``x_i != 0`` the
    derivative ``g_i + c sign(x_i)``; where ``x_i = 0`` the one-sided
    derivative that descends (``g_i + c`` if it is negative, ``g_i - c`` if
    that is positive), else 0 (zero is a minimum along that axis).

    Parameters
    ----------
    x, g : ndarray of shape (n,)
    c : float
        The L1 weight (at least 0).

    Returns
    -------
    ndarray of shape (n,)
    """
    x, g = np.asarray(x, dtype=np.float64), np.asarray(g, dtype=np.float64)
    right, left = g + c, g - c
    pg = np.where(x > 0, right, np.where(x < 0, left, 0.0))
    zero = x == 0
    pg[zero] = np.where(right[zero] < 0, right[zero], np.where(left[zero] > 0, left[zero], 0.0))
    return pg


def owlqn(fun, x0, c, max_iter=100, gtol=1e-5, ftol=1e-10, m=6, callback=None, rtol=None,
          past=0, delta=0.0, max_linesearch=20):
    """Minimise ``fun(x) + c ||x||_1`` by OWL-QN.

    Orthant-Wise Limited-memory Quasi-Newton (Andrew & Gao 2007), the L1
    method of CRFsuite (through liblbfgs): L-BFGS's two-loop recursion over
    the last ``m`` (s, y) pairs of the smooth part ``f`` (``y`` the change of
    ``f``'s gradient), applied to the pseudo-gradient ``v``
    (:func:`pseudo_gradient`); the direction ``p = -H v`` is zeroed where
    its sign disagrees with ``-v`` (it must descend in each coordinate), and
    each trial point is projected onto the orthant ``xi`` of the current
    point (``xi_i = sign(x_i)``, or ``sign(-v_i)`` where ``x_i = 0``):
    coordinates that would cross zero are set to zero, which is how
    weights become exactly 0.  The step halves from 1 (``1 / ||v||`` on the
    first iteration) until the objective ``F = f + c ||x||_1`` decreases
    enough, ``F(x') <= F(x) + 1e-4 v . (x' - x)`` (the backtracking line
    search of the paper, section 3.2, and of liblbfgs).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (value, gradient)`` of the smooth part ``f``.
    x0 : ndarray
    c : float
        The L1 weight (0 gives L-BFGS with a backtracking line search).
    max_iter, gtol, ftol, m, callback
        As for :func:`lbfgs`; ``gtol`` and ``ftol`` apply to the
        pseudo-gradient and to ``F``.
    rtol : float, optional
        Also stop when ``||v|| / max(1, ||x||) <= rtol`` (liblbfgs's and
        CRFsuite's ``epsilon``).
    past, delta : int and float
        Also stop when ``(F_{k-past} - F_k) / F_k < delta`` (liblbfgs's
        ``past`` and ``delta``, CRFsuite's ``period`` and ``delta``); 0 turns
        it off.
    max_linesearch : int
        Trial steps per iteration.

    Returns
    -------
    OptimizeResult
        ``x``, ``fun`` (``F``), ``jac`` (the pseudo-gradient), ``nit``,
        ``nfev``, ``success``, ``message``.

    References
    ----------
    .. [1] G. Andrew and J. Gao, "Scalable Training of L1-Regularized
       Log-Linear Models", ICML 2007.
    .. [2] J. Nocedal, "Updating Quasi-Newton Matrices with Limited Storage",
       Mathematics of Computation 35(151), 1980.
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable; got {type(fun).__name__}")
    x0 = check_real_array(x0, "x0", 1, kinds="iuf")
    c = check_number(c, "c", 0)
    max_iter = check_number(max_iter, "max_iter", 0, MAX_COUNT, integer=True)
    m = check_number(m, "m", 1, MAX_COUNT, integer=True)
    past = check_number(past, "past", 0, MAX_COUNT, integer=True)
    max_linesearch = check_number(max_linesearch, "max_linesearch", 1, MAX_COUNT, integer=True)
    gtol, ftol = check_number(gtol, "gtol", 0), check_number(ftol, "ftol", 0)
    delta = check_number(delta, "delta", 0)
    rtol = None if rtol is None else check_number(rtol, "rtol", 0)
    with threadpool_limits(limits=1, user_api="blas"):
        return _owlqn(fun, x0, float(c), max_iter, gtol, ftol, m, callback, rtol, past,
                      delta, max_linesearch)


def _two_loop(history, v, scale=-1.0):
    """-H v by the two-loop recursion over ``history`` (s, y, 1 / y.s);
    ``scale * v`` when the history gives no usable scaling (empty, or
    ``y.y / y.s`` not positive and finite)."""
    q = v.copy()
    alphas = []
    for s, y, rho in reversed(history):
        a = rho * float(s @ q)
        daxpy(y, q, a=-a)                   # q -= a y, in place
        alphas.append(a)
    gamma = history[-1][2] * float(history[-1][1] @ history[-1][1]) if history else 0.0
    q *= -1.0 / gamma if gamma > 0 and np.isfinite(gamma) else scale
    for (s, y, rho), a in zip(history, reversed(alphas)):
        daxpy(s, q, a=-(a + rho * float(y @ q)))   # (q is -H v from here on)
    return q


def _owlqn(fun, x0, c, max_iter, gtol, ftol, m, callback, rtol, past, delta, max_linesearch):
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    if not (np.isfinite(f) and np.isfinite(g).all()):
        raise ValueError("fun(x0) is not finite: the value or the gradient holds NaN or "
                         "infinity at the starting point")
    F = f + c * float(np.abs(x).sum())
    nfev, nit = 1, 0
    history = deque(maxlen=m)
    past_F = deque(maxlen=max(past, 1))
    message, success = "maximum number of iterations reached", False
    v = pseudo_gradient(x, g, c)
    while True:
        if np.max(np.abs(v), initial=0.0) <= gtol:
            message, success = "the pseudo-gradient is below gtol", True
            break
        if nit >= max_iter:
            break
        p = _two_loop(history, v)
        p[p * v >= 0] = 0.0                      # descend in every coordinate
        orthant = np.sign(x)
        zero = orthant == 0
        orthant[zero] = np.sign(-v[zero])
        step = 1.0 if history else 1.0 / max(float(np.linalg.norm(v)), 1e-300)
        for _ in range(max_linesearch):
            x_new = x + step * p
            x_new[np.sign(x_new) != orthant] = 0.0
            f_new, g_new = fun(x_new)
            nfev += 1
            F_new = f_new + c * float(np.abs(x_new).sum())
            if np.isfinite(F_new) and F_new <= F + 1e-4 * float(v @ (x_new - x)):
                break
            step *= 0.5
        else:
            if history:                          # restart from steepest descent once
                history.clear()
                continue
            message = "the line search found no acceptable step"
            break
        if not np.isfinite(g_new).all():
            raise ValueError("fun returned a non-finite gradient during the line search")
        s = x_new - x
        y = g_new - g
        sy = float(s @ y)
        F_old = F
        x, f, g, F = x_new, f_new, g_new, F_new
        nit += 1
        if sy > 1e-12 * float(np.linalg.norm(s) * np.linalg.norm(y)):
            history.append((s, y, 1.0 / sy))
        v = pseudo_gradient(x, g, c)
        if callback is not None:
            callback(x)
        if F_old - F <= ftol * max(abs(F_old), abs(F), 1.0):
            message, success = "the relative reduction of the value is below ftol", True
            break
        extra = _converged_extra(x, v, F, rtol, past, delta, past_F)
        if extra:
            message, success = extra, True
            break
    return OptimizeResult(x=x, fun=F, jac=v, nit=nit, nfev=nfev, success=success,
                          message=message)


def convex_line_search(evaluate, smoothing, max_step=30.0, max_evals=40, tol=1e-10,
                start=None, slope=None, scale=None):
    """Minimise a convex function of one variable from its value and first
    two derivatives: safeguarded Newton, bracketing the root of the derivative
    (sequence boosting's exact line search).

    Parameters
    ----------
    evaluate : callable
        ``evaluate(delta) -> (h, h', h'')``, ``h`` convex.
    smoothing : float
        Stop once ``|h'(delta)| <= smoothing * |h'(0)|``.  Where the infimum
        lies at infinity (``h`` falls for ever towards an asymptote, as for a
        feature that only ever counts more in wrong sequences) this is where
        the step stops.
    max_step : float
        ``|delta| <= max_step``: where the infimum lies at infinity the step
        stops here at the latest.
    tol : float
        Or once ``|h'| <= tol``.
    start, slope : float, optional
        A guess of the minimiser, and ``h'(0)`` when known: the first
        evaluation is at ``start`` rather than at 0.
    scale : float, optional
        Without ``slope``: stop at ``|h'| <= smoothing * scale``.

    Returns
    -------
    delta, h, n_evals
    """
    lo, hi = -max_step, max_step
    g_lo = g_hi = None                              # slopes at a closed bracket end
    if slope is None:
        x = 0.0 if start is None else float(start)
        h, g, c = evaluate(x)
        stop = max(tol, smoothing * abs(g if scale is None else scale))
    else:
        stop = max(tol, smoothing * abs(slope))
        if abs(slope) <= stop:
            return 0.0, None, 0
        if slope < 0:
            lo, g_lo = 0.0, slope
        else:
            hi, g_hi = 0.0, slope
        x = min(max(float(start), lo), hi)
        if x == 0.0:
            x = 1.0 if slope < 0 else -1.0
        h, g, c = evaluate(x)
    n = 1
    while n < max_evals and abs(g) > stop:
        if g < 0:
            lo, g_lo = x, g
        else:
            hi, g_hi = x, g
        if lo >= hi:
            break                                   # at the cap, still falling
        new = x - g / c if c > 0 else np.inf
        if not lo < new < hi:
            if g_lo is not None and g_hi is not None:
                # both ends closed: where the secant of h' crosses 0
                new = lo - g_lo * (hi - lo) / (g_hi - g_lo)
                if not lo < new < hi:
                    new = 0.5 * (lo + hi)
            elif g < 0:                             # no sign change seen yet: expand
                new = min(hi, x + max(1.0, 2.0 * abs(x)))
            else:
                new = max(lo, x - max(1.0, 2.0 * abs(x)))
        if new == x:
            break
        x = new
        h, g, c = evaluate(x)
        n += 1
    return x, h, n
