"""Docstring paragraphs that several estimators share, written once.

An estimator's docstring holds a placeholder line such as ``    {order}`` in its
Parameters section, and the class is decorated with :func:`fill_doc`, which
replaces each placeholder line by the paragraph (indented as the placeholder).
Only whole placeholder lines are replaced, so the braces of ``{1, 2}`` and of
formulas elsewhere in a docstring are left alone.
"""
import re

PARAGRAPHS = {
    "order": """\
order : {1, 2}, default=1
    Order of the linear chain.  ``order=2`` adds label-trigram scores
    ``trigram_coef_[y_{t-2}, y_{t-1}, y_t]`` to the model; decoding (Viterbi,
    exact k-best, loss-augmented) then runs over label pairs, so its time per
    token grows from O(L^2) to O(L^3) for L labels (``benchmarks/bench_order.py``
    measures it; the results are in the documentation's benchmarks page).""",
    "n_jobs": """\
n_jobs : int or None, default=None
    Threads for ``predict``, ``predict_kbest`` and ``score`` (blocks of
    sentences decoded without the GIL; ``None`` is 1, -1 all cores).
    Predictions do not depend on it.""",
}

_PLACEHOLDER = re.compile(r"^( *)\{(\w+)\}$", re.M)


def fill_doc(obj):
    """Replace the placeholder lines of ``obj.__doc__`` by their paragraphs.

    Raises
    ------
    KeyError
        A placeholder names no paragraph (a typo is caught at import).
    """
    def paragraph(match):
        indent, name = match.groups()
        return "\n".join(indent + line if line else line
                         for line in PARAGRAPHS[name].splitlines())

    if obj.__doc__:
        obj.__doc__ = _PLACEHOLDER.sub(paragraph, obj.__doc__)
    return obj
