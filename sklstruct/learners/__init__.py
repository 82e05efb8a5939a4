"""The learners of the linear-chain model: one short file per estimator.

Online learners (``learners/_online.pyx``: one epoch loop, one update function
per rule): :class:`StructuredPerceptronTagger`, :class:`PassiveAggressiveTagger`,
:class:`KBestMIRATagger`.  Dual learners (``learners/_dual.pyx``: working sets
and the shared SMO of :mod:`sklstruct._qp`): :class:`SDMTagger`,
:class:`LaRankTagger`.
"""
from .larank import LaRankTagger
from .mira import KBestMIRATagger
from .passive_aggressive import PassiveAggressiveTagger
from .perceptron import StructuredPerceptronTagger
from .sdm import SDMTagger

__all__ = ["KBestMIRATagger", "LaRankTagger", "PassiveAggressiveTagger", "SDMTagger",
           "StructuredPerceptronTagger"]
