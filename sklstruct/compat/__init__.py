"""A drop-in for sklearn-crfsuite: ``from sklstruct.compat import CRF``.

:class:`CRF` has sklearn-crfsuite's constructor, methods, attributes and
output types, on sklstruct's vectorizer and learners; :func:`from_crfsuite`
reads an existing ``.crfsuite`` model file.
"""
from . import _model_file  # noqa: F401  (its classes, registered with the model file format)
from ._crf import CRF, from_crfsuite

__all__ = ["CRF", "from_crfsuite"]
