"""The command line's progress bars (:mod:`sklstruct.cli`): tqdm's, on
standard error, on a terminal only and not with ``--quiet``."""
import contextlib
import io
import os
import re
import sys


def _progress_shown(args):
    """Whether a command shows a progress bar: on a terminal (standard
    error), without ``--quiet``, with tqdm installed (an optional
    dependency: without it, no bar)."""
    if getattr(args, "quiet", False):
        return False
    try:
        if not sys.stderr.isatty():
            return False
    except (AttributeError, ValueError):      # a replaced or closed stream
        return False
    import importlib.util

    return importlib.util.find_spec("tqdm") is not None


def _bar(args, total, unit, desc):
    """tqdm's bar on standard error where :func:`_progress_shown`, else None."""
    if not _progress_shown(args):
        return None
    from tqdm import tqdm

    try:
        size = os.get_terminal_size(sys.stderr.fileno())
    except (AttributeError, ValueError, OSError):
        size = None
    # (tqdm hides its bar on a terminal that says it is 0 x 0, as a new
    # pseudo-terminal does)
    sized = ({"dynamic_ncols": True} if size and size.columns and size.lines
             else {"ncols": 80, "nrows": 24})
    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, **sized)


def _in_batches(function, X, bar):
    """``function(X)`` (a list), in about 100 batches advancing ``bar`` by
    their sentences; at once when ``bar`` is None.  Each sentence is labelled
    (or parsed) on its own, so the batches give the same result."""
    if bar is None:
        return list(function(X))
    out = []
    try:
        step = max(32, -(-len(X) // 100))
        for start in range(0, len(X), step):
            part = function(X[start:start + step])
            out.extend(part)
            bar.update(len(part))
    finally:
        bar.close()
    return out


class _ProgressLines(io.TextIOBase):
    """Standard output while a learner fits with a bar: each of its
    ``verbose`` progress lines (``-- Epoch 3: ...``, ``-- Iteration 3: ...``,
    :mod:`sklstruct._progress`'s one format) moves the bar to its number; the
    lines starting ``--`` are shown above the bar when ``echo``, other output
    as it is."""

    _STEP = re.compile(r"-- (?:\[[^]]*\] )?[A-Za-z]+ (\d+):")

    def __init__(self, bar, out, echo):
        super().__init__()
        self.bar, self.out, self.echo, self._pending = bar, out, echo, ""

    def writable(self):
        return True

    def write(self, text):
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            step = self._STEP.match(line)
            if step and int(step.group(1)) > self.bar.n:
                self.bar.update(int(step.group(1)) - self.bar.n)
            if self.echo or not line.startswith("-- "):
                self.bar.write(line, file=self.out)
        return len(text)

    def flush(self):
        self.out.flush()


@contextlib.contextmanager
def _own_progress(args, desc):
    """While an estimator that advances a bar of its own fits
    (:class:`BrownClusters`: its merges): that bar is :func:`_bar`'s, shown
    where :func:`_progress_shown`, whatever the estimator's ``verbose``."""
    from ._progress import bars_from

    with bars_from(lambda total, unit, _: _bar(args, total, unit, desc)):
        yield


def _n_steps(estimator):
    """The epochs, iterations or rounds a fit runs at most (None if unknown)."""
    params = estimator.get_params(deep=False)
    for name in ("max_iter", "n_rounds"):
        if isinstance(params.get(name), int):
            return params[name]
    return None


@contextlib.contextmanager
def _fit_progress(args, estimator, desc):
    """While fitting: a bar of ``estimator``'s epochs (iterations, rounds)
    where :func:`_progress_shown` and the estimator reports them
    (``verbose``): it is fitted with ``verbose`` at least 1, its lines
    shown only if ``--verbose`` asked for them."""
    params = estimator.get_params(deep=False)
    bar = (_bar(args, _n_steps(estimator), "it", desc) if "verbose" in params else None)
    if bar is None:
        yield
        return
    verbose = params["verbose"]
    estimator.set_params(verbose=max(verbose, 1))
    lines = _ProgressLines(bar, sys.stdout, echo=bool(verbose))
    try:
        with contextlib.redirect_stdout(lines):
            yield
        if lines._pending:
            lines.write("\n")
        if bar.total is not None and bar.n < bar.total:     # converged early
            bar.total = bar.n
            bar.refresh()
    finally:
        bar.close()
        estimator.set_params(verbose=verbose)   # (the saved model as without the bar)
