"""The estimator registry: every public estimator once.

``sklstruct.__init__``, the command line and the common tests read their lists
of estimators from here, so adding a learner means adding one line below.
"""
from .larank import LaRankTagger
from .mira import KBestMIRATagger
from .parsing import F1MaxMarginParser, PCFGParser
from .passive_aggressive import PassiveAggressiveTagger
from .perceptron import StructuredPerceptronTagger
from .sdm import SDMTagger

#: The sequence taggers, by the short name the command line uses.
TAGGERS = {
    "perceptron": StructuredPerceptronTagger,
    "pa": PassiveAggressiveTagger,
    "mira": KBestMIRATagger,
    "sdm": SDMTagger,
    "larank": LaRankTagger,
}

#: The constituency parsers, by short name.
PARSERS = {
    "f1parser": F1MaxMarginParser,
    "pcfg": PCFGParser,
}

#: Every public estimator class.
ESTIMATORS = {**TAGGERS, **PARSERS}
