"""sklstruct: scikit-learn compatible structured max-margin learners for
sequence labeling and constituency parsing, with Cython decoding kernels."""

__version__ = "0.1.0"

import importlib as _importlib
import importlib.util as _importlib_util
import os as _os

# Is this tree built?  Its compiled kernel is found, not imported: importing
# the package imports nothing heavy (so that ``sklstruct --help`` starts at
# once); the public names below are imported when first used.  (Another
# checkout's compiled module, found by an editable install's import hook,
# does not build this tree.)
_chain = _importlib_util.find_spec(f"{__name__}._chain")
if _chain is None or (_os.path.dirname(_os.path.realpath(_chain.origin or ""))
                      != _os.path.dirname(_os.path.realpath(__file__))):
    raise ImportError(
        f"sklstruct has not been built: its compiled extensions are missing from "
        f"{_os.path.dirname(__file__)}.  In a source checkout, build them in place with "
        "'pip install -e .' (or 'python setup.py build_ext --inplace'); to use a "
        "sklstruct installed with pip, start Python outside the checkout, whose "
        "sklstruct/ folder hides the installed package.")
del _chain

#: The estimators of the registry (``_registry.ESTIMATORS``; a test checks
#: that the two lists agree), imported from it when first used.
_ESTIMATOR_NAMES = (
    "CRFTagger", "ConstrainedTagger", "F1MaxMarginParser", "KBestMIRATagger",
    "LaRankTagger", "M3NTagger", "PCFGParser", "ParameterMixingTagger",
    "PassiveAggressiveTagger", "SDMTagger", "SWVMTagger", "SWVPTagger",
    "SequenceBoostingTagger", "StructuredPerceptronTagger",
)

#: Every public name, with the module it is imported from when first used.
_PUBLIC = {
    **dict.fromkeys(_ESTIMATOR_NAMES, "._registry"),
    "M3NSGDTagger": ".learners.m3n",        # (deprecated alias of M3NTagger)
    **dict.fromkeys(["BrownClusters", "DictSequenceVectorizer", "EmbeddingFeatures",
                     "GazetteerFeatures", "LabelDictionaryFeatures", "SentenceFeatureUnion",
                     "SequenceVectorizer", "TokenTransformer", "feature_set"], ".features"),
    "Pipeline": ".pipeline",
    "make_pipeline": ".pipeline",
    "load_model": ".serialization",
    "save_model": ".serialization",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name):
    """A public name (imported from its module when first used), or a
    submodule (``sklstruct.metrics``)."""
    if name in _PUBLIC:
        value = getattr(_importlib.import_module(_PUBLIC[name], __name__), name)
    elif name == "ESTIMATORS":
        value = _importlib.import_module("._registry", __name__).ESTIMATORS
    elif not name.startswith("__") and _importlib_util.find_spec(f"{__name__}.{name}"):
        value = _importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))
