"""The progress line that long work prints when ``verbose`` is set, in one
format for every learner::

    -- Epoch 3: mistakes 12/100 (12.00%), updates 40, 0.123 s

the unit of work and its number, what it did (name and value, in order), and
the seconds it took.
"""


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
