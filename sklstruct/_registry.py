"""The estimator registry: every public estimator once.

``sklstruct.__init__``, the command line and the common tests read their lists
of estimators from here, so adding a learner means adding one line below.
"""
from .learners.boosting import SequenceBoostingTagger
from .learners.constrained import ConstrainedTagger
from .learners.crf import CRFTagger
from .learners.larank import LaRankTagger
from .learners.m3n import M3NTagger
from .learners.mixing import ParameterMixingTagger
from .learners.mira import KBestMIRATagger
from .learners.passive_aggressive import PassiveAggressiveTagger
from .learners.perceptron import StructuredPerceptronTagger
from .learners.sdm import SDMTagger
from .learners.swvm import SWVMTagger
from .learners.swvp import SWVPTagger
from .parsing import F1MaxMarginParser, PCFGParser

#: The sequence taggers, by the short name the command line uses.
TAGGERS = {
    "perceptron": StructuredPerceptronTagger,
    "pa": PassiveAggressiveTagger,
    "mira": KBestMIRATagger,
    "sdm": SDMTagger,
    "larank": LaRankTagger,
    "swvp": SWVPTagger,
    "swvm": SWVMTagger,
    "m3n": M3NTagger,
    "crf": CRFTagger,
    "boosting": SequenceBoostingTagger,
}

#: The constituency parsers, by short name.
PARSERS = {
    "f1parser": F1MaxMarginParser,
    "pcfg": PCFGParser,
}

#: Meta-estimators over a tagger (not in the command line's list: they wrap one).
META_TAGGERS = {
    "mixing": ParameterMixingTagger,
    "constrained": ConstrainedTagger,
}

#: Every public estimator class.
ESTIMATORS = {**TAGGERS, **PARSERS, **META_TAGGERS}
