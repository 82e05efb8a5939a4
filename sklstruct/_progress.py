"""The progress line that long work prints when ``verbose`` is set, in one
format for every learner::

    -- Epoch 3: mistakes 12/100 (12.00%), updates 40, 0.123 s

the unit of work and its number, what it did (name and value, in order), and
the seconds it took.  With ``verbose >= 2`` long work also shows a progress
bar (:func:`progress_bar`, tqdm's, an optional dependency) and prints those
lines above it.
"""
import contextlib
import contextvars
import sys
import warnings

# The bars of the work done under :func:`bars_from` (the command line's), or None.
_PROVIDER = contextvars.ContextVar("sklstruct_progress_bars", default=None)


def _value(value):
    """A float to 6 significant digits; anything else as ``str`` gives it
    (a string is shown as it is, so a caller formats what needs more)."""
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def progress_line(step, number, fields, seconds):
    """One line of ``verbose`` progress.

    Parameters
    ----------
    step : str
        The unit of work: ``"Epoch"``, ``"Pass"``, ``"Round"``, ``"Iteration"``.
    number : int
        Its count, from 1.
    fields : iterable of (str, object)
        What it did, in order: each ``name value``; a float is shown to 6
        significant digits, any other value with ``str``.
    seconds : float
        The time it took.

    Returns
    -------
    line : str
        ``"-- Step number: name value, ..., 0.123 s"``.
    """
    parts = [f"{name} {_value(value)}" for name, value in fields]
    return f"-- {step} {number}: {', '.join(parts + [f'{seconds:.3f} s'])}"


def report(verbose, step, number, fields, seconds):
    """Print :func:`progress_line` (flushed) when ``verbose`` is set."""
    if verbose:
        print(progress_line(step, number, fields, seconds), flush=True)


class _Lines:
    """The stand-in of a bar where there is none: ``write`` prints the line."""
    n = 0

    def update(self, n=1):
        self.n += n

    @staticmethod
    def write(line):
        print(line, flush=True)

    def close(self):
        pass


@contextlib.contextmanager
def bars_from(provider):
    """Within it, :func:`progress_bar` gives ``provider(total, unit, desc)``
    whatever ``verbose`` is: a tqdm bar, or None for none (the command line
    draws the bar of a fit that advances its own, on its terminal only)."""
    token = _PROVIDER.set(provider)
    try:
        yield
    finally:
        _PROVIDER.reset(token)


def progress_bar(verbose, total, unit, desc):
    """A progress bar for ``verbose >= 2`` (tqdm's, on stderr), else None
    (within :func:`bars_from`, its provider's).

    Without tqdm installed, ``verbose >= 2`` warns once and gets an object
    with the bar's ``update``, ``write`` and ``close`` that prints the lines
    only, as ``verbose=1`` does.
    """
    provider = _PROVIDER.get()
    if provider is not None:
        return provider(total, unit, desc)
    if not verbose or verbose < 2:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        warnings.warn("verbose=2 shows a progress bar with tqdm, which is not installed "
                      "(pip install tqdm); printing one line per step instead", stacklevel=3)
        return _Lines()
    return tqdm(total=total, unit=unit, desc=desc, file=sys.stderr, dynamic_ncols=True)
