"""sklstruct: scikit-learn compatible structured max-margin learners for
sequence labeling and constituency parsing, with Cython decoding kernels."""

__version__ = "0.1.0"

from .features import (BrownClusters, DictSequenceVectorizer,  # noqa: E402
                       EmbeddingFeatures, GazetteerFeatures, LabelDictionaryFeatures,
                       SentenceFeatureUnion, SequenceVectorizer, TokenTransformer,
                       feature_set)
from ._registry import ESTIMATORS  # noqa: E402
from .serialization import load_model, save_model  # noqa: E402

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
    "load_model",
    "save_model",
    "__version__",
]
