"""sklstruct: scikit-learn compatible structured max-margin learners for
sequence labeling and constituency parsing, with Cython decoding kernels."""

__version__ = "0.1.0"

from .features import SequenceVectorizer, feature_set  # noqa: E402
from .larank import LaRankTagger  # noqa: E402
from .mira import KBestMIRATagger  # noqa: E402
from .passive_aggressive import PassiveAggressiveTagger  # noqa: E402
from .perceptron import StructuredPerceptronTagger  # noqa: E402
from .sdm import SDMTagger  # noqa: E402
from .parsing import F1MaxMarginParser, PCFGParser  # noqa: E402

__all__ = [
    "F1MaxMarginParser",
    "PCFGParser",
    "KBestMIRATagger",
    "LaRankTagger",
    "PassiveAggressiveTagger",
    "SDMTagger",
    "SequenceVectorizer",
    "StructuredPerceptronTagger",
    "feature_set",
    "__version__",
]
