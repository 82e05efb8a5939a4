"""The CRF's losses, one small class each: what the objective is made of and
the weights that :func:`sklstruct.learners._crf.crf_pass` gives the
gradient's terms.

The kernel computes, per sentence, ``d = log Z - s(gold)`` (so
P(gold | x) = exp(-d)) or, per token, ``e_t = log Z - log Z_t``
(P(gold_t | x) = exp(-e_t)), and adds up

    node_w[s] * E[F | x] - gold_w[s] * F(x, gold) + sum_t cond_c[t] E[F | x, y_t = gold_t]

which is sum_i slope_i * grad v_i for the values v (d per sentence: weights
``(slope, slope, None)``; e_t per token: ``(sum of the sentence's slopes, 0,
-slope)``, since grad e_t = E[F | x] - E[F | x, y_t = gold_t]).  A loss says
which values it needs (:attr:`CRFLoss.pointwise`), the objective they give
(:meth:`CRFLoss.value`) and those weights (:meth:`CRFLoss.weights`); a new
loss is one more class here and one entry in :data:`LOSSES`.

The losses are those of Altun, Johnson & Hofmann, "Investigating Loss
Functions and Optimization Methods for Discriminative Learning of Label
Sequences" (EMNLP 2003, section 3.3), with the gradients of section 4.1.
"""
import numpy as np


class CRFLoss:
    """A loss summed over the training sentences, with a Gaussian prior:
    the objective is a function of the kernel's values ``v`` (per sentence
    or per token), of ``C`` and of ``reg = 1/2 ||w||^2``.

    Attributes
    ----------
    pointwise : bool
        The values are per token (``log Z - log Z_t``, which needs the
        log-space forward-backward) rather than per sentence.
    values_first : bool
        The gradient's weights depend on the values: they are computed by a
        pass of their own before the gradient pass (else one pass gives both).
    """

    pointwise = False
    values_first = False

    def weights(self, C, data, v=None, reg=None):
        """``(node_w, gold_w, cond_c)`` of the gradient pass.

        Parameters
        ----------
        C : float
        data : StackedSentences
            The training sentences (their count, lengths and offsets).
        v, reg : ndarray and float, optional
            The values and the regulariser (given when ``values_first``).
        """
        raise NotImplementedError

    def value(self, v, C, reg):
        """``(objective, scale)``: the objective from the values ``v``, and
        the factor of the regulariser's gradient ``theta`` in its gradient."""
        raise NotImplementedError


class LogLoss(CRFLoss):
    """``-log P(y | x)`` (eq. 1, maximum likelihood): ``C sum_s d_s + reg``."""

    def weights(self, C, data, v=None, reg=None):
        return np.full(len(data), C), np.full(len(data), C), None

    def value(self, v, C, reg):
        return C * float(np.sum(v)) + reg, 1.0


class PointwiseLogLoss(CRFLoss):
    """``-sum_t log P(y_t | x)``: ``C sum_t e_t + reg``."""

    pointwise = True

    def weights(self, C, data, v=None, reg=None):
        return (C * data.lengths.astype(np.float64), np.zeros(len(data)),
                np.full(int(data.offsets[-1]), -C))

    def value(self, v, C, reg):
        return C * float(np.sum(v)) + reg, 1.0


class _ExpLoss(CRFLoss):
    """The exp losses grow like ``L ** T`` when the model is poor, beyond
    floating point for long sentences, so the objective is
    ``J = log(1 + C S + reg)`` with ``S = sum exp(v) - n0``, which has the
    same minimiser and is computed with each term scaled by exp(-M),
    M = max(v, 0): from log-space terms only."""

    values_first = True

    def _n0(self, v):
        raise NotImplementedError

    def _parts(self, v, C, reg):
        """(M, exp(v - M), D) with J = M + log D."""
        M = max(float(v.max()), 0.0)
        terms = np.exp(v - M)
        D = C * float(np.sum(terms)) + (1.0 + reg - C * self._n0(v)) * np.exp(-M)
        return M, terms, D

    def _slope(self, v, C, reg):
        """dJ/dv = C exp(v) / (1 + C S + reg)."""
        _, terms, D = self._parts(v, C, reg)
        return C * terms / D

    def value(self, v, C, reg):
        M, _, D = self._parts(v, C, reg)
        return M + np.log(D), np.exp(-M) / D             # scale: 1 / (1 + C S + reg)


class ExpLoss(_ExpLoss):
    """``1 / P(y | x) - 1`` (eq. 2): ``S = sum_s exp(d_s) - n_sentences``."""

    def _n0(self, v):
        return v.shape[0]

    def weights(self, C, data, v=None, reg=None):
        slope = self._slope(v, C, reg)
        return slope, slope, None


class PointwiseExpLoss(_ExpLoss):
    """``sum_t 1 / P(y_t | x)``: ``S = sum_t exp(e_t)``."""

    pointwise = True

    def _n0(self, v):
        return 0

    def weights(self, C, data, v=None, reg=None):
        slope = self._slope(v, C, reg)
        return np.add.reduceat(slope, data.offsets[:-1]), np.zeros(len(data)), -slope


#: The CRF's losses by the name ``CRFTagger(loss=)`` takes.
LOSSES = {"log": LogLoss(), "exp": ExpLoss(), "pointwise_log": PointwiseLogLoss(),
          "pointwise_exp": PointwiseExpLoss()}
