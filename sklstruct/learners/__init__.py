"""The learners of the linear-chain model: one short file per estimator.

Online learners (``_online.pyx``: one epoch loop, one update function per
rule): ``perceptron.py``, ``passive_aggressive.py``, ``mira.py``.  Dual
learners (``_dual.pyx``: working sets over the shared SMO of
:mod:`sklstruct._qp`): ``sdm.py``, ``larank.py``.  ``_base.py`` holds the
training loop they share.  The public names are listed once, in
:mod:`sklstruct._registry`.
"""
