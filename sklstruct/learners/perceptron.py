"""The k-best structured perceptron (Mancev & Todorovic, section 4.5, eq. 36, Algorithm 4)."""
from .._docstrings import fill_doc
from ._families import OnlineLearner


@fill_doc
class StructuredPerceptronTagger(OnlineLearner):
    """k-best structured perceptron for a linear chain.

    For each sentence ``x^n`` the tagger finds its ``k`` best label sequences
    ``B^k_w`` under the current weights and walks through them in order; for
    each sequence ``y`` in the error set (``w . dF_n(y) <= 0``, with ``w`` as
    left by the previous step) it updates ``w <- w + dF_n(y)``, where
    ``dF_n(y) = F(x^n, y^n) - F(x^n, y)`` (Mancev & Todorovic, *k-Best
    Max-margin Approaches for Sequence Labeling*, eq. 36 and Algorithm 4).
    ``k=1`` is Collins' (2002) perceptron (Altun et al. 2003, section 5.1,
    Algorithm 1).  Parameter averaging (Collins 2002) is on by default and done
    lazily, so an update costs only the features of the tokens it changes.

    Parameters
    ----------
    k : int, default=1
        Number of best sequences used per example.  Default from the
        benchmarks: on CoNLL-2000 k = 1 scores 93.73 chunk F1 against 93.60
        for k = 5, at 0.63x the time per epoch (``benchmarks/results/conll2000.md``).
    max_iter : int, default=10
        Number of epochs (passes over the training sentences).  Not tuned
        here: the 10 epochs that every benchmark (and CRFsuite's ``ap``
        comparison) uses.
    average : bool, default=True
        Predict with the average of the weights after every example.  The
        paper's recommendation (Collins 2002, averaged parameters); not
        tuned here.
    shuffle : bool, default=True
        Visit the sentences in a new random order each epoch.
    random_state : int, RandomState instance or None, default=None
        Seeds the shuffling.
    verbose : int, default=0
        Print mistakes, updates and time after each epoch.
    warm_start : bool, default=False
        Let ``fit`` continue from the current weights instead of starting over.

    {order}

    {n_jobs}

    Attributes
    ----------
    classes_ : ndarray of shape (n_labels,)
        The labels, sorted; predictions are drawn from it.
    coef_ : ndarray of shape (n_labels, n_features)
        Emission weights (averaged when ``average=True``).
    transition_coef_ : ndarray of shape (n_labels, n_labels)
        ``transition_coef_[a, b]`` scores label ``a`` followed by ``b``.
    start_coef_, end_coef_ : ndarray of shape (n_labels,)
        Scores of the first and last label of a sentence.
    trigram_coef_ : ndarray of shape (n_labels, n_labels, n_labels) or None
        With ``order=2``, ``trigram_coef_[a, b, c]`` scores the labels ``a, b,
        c`` at three consecutive positions; None with ``order=1``.
    n_features_in_ : int
    n_iter_ : int
        Epochs run so far.
    history_ : list of dict
        Per epoch: ``mistakes`` (sentences whose best sequence was wrong),
        ``updates`` (sequences that triggered an update), ``seconds``.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklstruct import SequenceVectorizer, StructuredPerceptronTagger
    >>> from sklstruct.datasets import make_chunking_corpus
    >>> X, y = make_chunking_corpus(300, random_state=0)
    >>> model = make_pipeline(SequenceVectorizer(templates=("word", "pos"), window=1),
    ...                       StructuredPerceptronTagger(max_iter=5, random_state=0))
    >>> model.fit(X, y).score(X, y) > 0.9
    True

    References
    ----------
    .. [1] D. Mančev and B. Todorović, "k-Best Max-margin Approaches for Sequence
       Labeling", Computer Science and Information Systems 12(2):465-486, 2015.
    .. [2] M. Collins, "Discriminative Training Methods for Hidden Markov Models:
       Theory and Experiments with Perceptron Algorithms", EMNLP 2002.
    .. [3] Y. Altun, M. Johnson and T. Hofmann, "Investigating Loss Functions and
       Optimization Methods for Discriminative Learning of Label Sequences",
       EMNLP 2003.
    """

    def __init__(self, k=1, max_iter=10, average=True, shuffle=True, random_state=None,
                 verbose=0, warm_start=False, order=1, n_jobs=None):
        self.k = k
        self.max_iter = max_iter
        self.average = average
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.order = order
        self.n_jobs = n_jobs

    def _update_params(self):
        return {"rule": "perceptron"}
