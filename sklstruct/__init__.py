"""sklstruct: scikit-learn compatible structured max-margin learners for
sequence labeling and constituency parsing, with Cython decoding kernels."""

__version__ = "0.1.0"

import importlib as _importlib

try:
    _importlib.import_module(f"{__name__}._chain")  # a compiled kernel: is this tree built?
except ModuleNotFoundError as exc:
    if exc.name != f"{__name__}._chain":
        raise
    import os as _os

    raise ImportError(
        f"sklstruct has not been built: its compiled extensions are missing from "
        f"{_os.path.dirname(__file__)}.  In a source checkout, build them in place with "
        "'pip install -e .' (or 'python setup.py build_ext --inplace'); to use a "
        "sklstruct installed with pip, start Python outside the checkout, whose "
        "sklstruct/ folder hides the installed package.") from exc

from .features import (BrownClusters, DictSequenceVectorizer,  # noqa: E402
                       EmbeddingFeatures, GazetteerFeatures, LabelDictionaryFeatures,
                       SentenceFeatureUnion, SequenceVectorizer, TokenTransformer,
                       feature_set)
from ._registry import ESTIMATORS  # noqa: E402
from .pipeline import Pipeline, make_pipeline  # noqa: E402
from .serialization import load_model, save_model  # noqa: E402
from . import compat  # noqa: E402,F401  (registers its classes with the model file format)

from .learners.m3n import M3NSGDTagger  # noqa: E402  (deprecated alias of M3NTagger)

globals().update({cls.__name__: cls for cls in ESTIMATORS.values()})

__all__ = sorted(cls.__name__ for cls in ESTIMATORS.values()) + [
    "M3NSGDTagger",
    "BrownClusters",
    "DictSequenceVectorizer",
    "EmbeddingFeatures",
    "GazetteerFeatures",
    "LabelDictionaryFeatures",
    "SentenceFeatureUnion",
    "SequenceVectorizer",
    "TokenTransformer",
    "feature_set",
    "Pipeline",
    "make_pipeline",
    "load_model",
    "save_model",
    "__version__",
]
