"""The learners of the linear-chain model: one short file per estimator.

Online learners (``_online.pyx``: one epoch loop, one update function and one
table row per rule): ``perceptron.py``, ``passive_aggressive.py``, ``mira.py``,
``swvp.py``, ``swvm.py``.  Dual learners (``_dual.pyx``: working sets over the
shared SMO of :mod:`sklstruct._qp`): ``sdm.py``, ``larank.py``.  ``_base.py``
holds the tagger and the one training loop (``ChainTagger``, ``ChainLearner``),
``_families.py`` the online and dual families, ``_confidence.py`` the
calibration and marginals mixin.  ``m3n.py`` (with a strategy per solver in
``_m3n_solvers.py``), ``crf.py``, ``boosting.py`` and the meta-estimators
``mixing.py`` and ``constrained.py`` complete the set.  The public names are
listed once, in :mod:`sklstruct._registry`.
"""
