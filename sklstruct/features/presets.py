"""The preset feature sets: named template lists, each with its window and a
one-line description (which ``sklstruct train --help`` prints).

:data:`PRESETS` is the registry; :func:`feature_set` builds the vectorizer of
one of them.  Adding a preset is one entry of :data:`PRESETS`.
"""
from numbers import Integral
from typing import NamedTuple

import numpy as np

from .._validation import InputTypeError, describe
from ._sequence import SequenceVectorizer
from .clusters import BrownClusters
from .embeddings import EmbeddingFeatures
from .gazetteer import GazetteerFeatures
from .label_dictionary import LabelDictionaryFeatures
from .union import SentenceFeatureUnion


class Preset(NamedTuple):
    """A preset feature set.

    Attributes
    ----------
    templates : tuple of str
        Templates of :class:`~sklstruct.features.SequenceVectorizer`.
    window : int or None
        Its ``window``; None for the ``window`` argument of
        :func:`feature_set`.
    description : str
        One line, for listings such as the command line's help.
    from_labels : bool
        Whether :func:`feature_set` adds, by default, the features learned
        from the training labels (:class:`LabelDictionaryFeatures` and
        :class:`GazetteerFeatures`): the rich presets do.
    """

    templates: tuple
    window: int | None
    description: str
    from_labels: bool = False


#: Altun, Johnson & Hofmann (2003), section 4.2: S1 is the current word, S2
#: adds its spelling features (S3 is S2 in a window, see :func:`feature_set`).
_S1 = ("word",)
_S2 = _S1 + (
    "suffix1", "suffix2", "suffix3",
    "first_lower", "first_upper", "first_alnum",
    "title_dot", "is_upper", "has_hyphen",
)
#: CRFsuite's CoNLL-2000 chunking example: words and POS tags in a +-2 window,
#: word bigrams and POS bigrams and trigrams around the current token (tokens
#: need a POS column).  Used with ``window=2``.
_CHUNKING = (
    "bias", "word", "pos", "word[-1]|word", "word|word[+1]",
    "pos[-2]|pos[-1]", "pos[-1]|pos", "pos|pos[+1]", "pos[+1]|pos[+2]",
    "pos[-2]|pos[-1]|pos", "pos[-1]|pos|pos[+1]", "pos|pos[+1]|pos[+2]",
)
#: Ringel, Dror & Reichart, "The Structured Weighted Violation MIRA",
#: Appendix B: words w and POS tags t at offsets -1..+1 (6 unigrams), 9 bigrams
#: and 4 trigrams of them (tokens need a POS column).  Used with ``window=0``;
#: the label trigrams of their chain come from the model, not from here.
_SWVM = (
    "word", "word[-1]", "word[+1]", "pos", "pos[-1]", "pos[+1]",
    "word|word[-1]", "word|word[+1]", "word[-1]|word[+1]",
    "pos|pos[-1]", "pos|pos[+1]", "pos[-1]|pos[+1]",
    "word|pos[-1]", "word|pos", "word|pos[+1]",
    "pos[-1]|pos|pos[+1]", "word|pos|pos[+1]", "word|pos[-1]|pos[+1]", "word|pos|pos[-1]",
)
#: Named-entity features (the Spanish NER benchmarks'): word, lower case,
#: POS, a prefix, suffixes, shape and spelling flags, the POS bigram, in a
#: window of one token either side.
_NER = ("bias", "word", "lower", "pos", "prefix3", "suffix2", "suffix3", "shape",
        "is_title", "is_upper", "has_digit", "has_hyphen", "pos[-1]|pos")

#: Rich named-entity features, after the local features of the best
#: feature-based CoNLL-2002 systems (Carreras, Marquez & Padro 2002;
#: Stanford's CMM and NER): lower-cased words in a window of three either
#: side (the word itself keeps its case) and, disjunctively, the four words
#: before and the four after (after Stanford NER's ``useDisjunctive``), affixes of
#: one to four letters, the affixes of the neighbours, collapsed shapes and
#: their conjunctions over the window, the word's long shape,
#: capitalization flags in a window, orthographic flags, sentence position,
#: and POS tags with their bigrams and trigram (when the tokens have a POS
#: column: :func:`feature_set` drops them otherwise).  Measured in
#: ``benchmarks/bench_features_accuracy.py``; the disjunctive words and the
#: long shape were chosen on esp.testa (perceptron, three seeds: 76.56 ->
#: 77.21; SWVM 76.19 -> 77.86; CRF 76.64 -> 77.30, with 500 Brown clusters
#: 76.83 -> 77.21) and leave CoNLL-2000 chunking as it was on its
#: development data, so ``chunking-rich`` has neither.
_NER_RICH = (
    "bias",
    "lower[-3]", "lower[-2]", "lower[-1]", "lower", "lower[+1]", "lower[+2]", "lower[+3]",
    "lower[-4..-1]", "lower[+1..+4]",
    "word[-1]", "word", "word[+1]", "lower[-1]|lower", "lower|lower[+1]",
    "prefix1", "prefix2", "prefix3", "prefix4", "suffix1", "suffix2", "suffix3", "suffix4",
    "prefix3[-1]", "prefix3[+1]", "suffix3[-1]", "suffix3[+1]",
    "shape[-1]", "shape", "shape[+1]", "shape[-1]|shape", "shape|shape[+1]",
    "shape[-1]|shape|shape[+1]", "long_shape",
    "is_title[-1]", "is_title", "is_title[+1]", "is_upper[-1]", "is_upper", "is_upper[+1]",
    "has_digit", "is_digit", "has_hyphen", "has_dot", "is_punct", "is_first", "is_last",
    "pos[-2]", "pos[-1]", "pos", "pos[+1]", "pos[+2]", "pos[-1]|pos", "pos|pos[+1]",
    "pos[-1]|pos|pos[+1]",
)
#: Rich chunking features: CRFsuite's chunking templates (words and POS tags
#: in a window of two, word bigrams, POS bigrams and trigrams) widened to a
#: window of three, with the current word's lower case, suffixes of one to
#: four letters, prefixes of one to three, shapes in a window, spelling
#: flags, and the word conjoined with the neighbouring POS tags (those when
#: the tokens have a POS column).  Measured in ``benchmarks/bench_features_accuracy.py``.
_CHUNKING_RICH = _CHUNKING[:3] + (
    "word[-3]", "word[-2]", "word[-1]", "word[+1]", "word[+2]", "word[+3]",
    "pos[-3]", "pos[-2]", "pos[-1]", "pos[+1]", "pos[+2]", "pos[+3]",
) + _CHUNKING[3:] + (
    "lower", "suffix1", "suffix2", "suffix3", "suffix4", "prefix1", "prefix2", "prefix3",
    "shape[-1]", "shape", "shape[+1]", "is_title", "has_digit", "has_hyphen", "is_punct",
    "word|pos", "word[-1]|pos", "word[+1]|pos", "pos[-1]|word", "pos[+1]|word",
)

#: The preset feature sets by name, in the order the command line lists them.
PRESETS = {
    "chunking": Preset(_CHUNKING, 2, "CRFsuite's chunking templates (words and POS in a "
                                     "window; needs a POS column)"),
    "S1": Preset(_S1, 0, "Altun et al.'s S1: the word"),
    "S2": Preset(_S2, 0, "S1 and spelling features of the word"),
    "S3": Preset(_S2, None, "S2 of every word in a window (default: one word either side)"),
    "swvm": Preset(_SWVM, 0, "Ringel, Dror & Reichart's templates (needs a POS column)"),
    "ner": Preset(_NER, 1, "named-entity features: word, case, affixes, shape, POS (needs a "
                           "POS column)"),
    "ner-rich": Preset(_NER_RICH, 0, "words, affixes, shapes, case, POS in a window of 3, "
                                     "words within 4, label features", True),
    "chunking-rich": Preset(_CHUNKING_RICH, 0, "chunking in a window of three, affixes, shapes, "
                                               "word-POS pairs, label dictionary", True),
}


#: Path prefixes of the ``clusters=`` templates of :func:`feature_set`, after
#: Koo, Carreras & Collins (2008) and Turian, Ratinov & Bengio (2010): short
#: prefixes generalize, long ones approach the word.
CLUSTER_PREFIXES = (4, 6, 10, 20)

#: ``min_count`` of the Brown clusters of ``feature_set(name, clusters=n)``:
#: a word seen fewer times in the training text gets no cluster (its
#: bigram counts say too little to place it).
CLUSTER_MIN_COUNT = 3


def feature_set(name, window=1, clusters=None, embeddings=None, label_dictionary="auto",
                gazetteer="auto", random_state=None, **kwargs):
    """Vectorizer for a feature set of Altun, Johnson & Hofmann (2003).

    The sets of section 4.2 of "Investigating Loss Functions and
    Optimization Methods for Discriminative Learning of Label Sequences"
    (EMNLP 2003), without the label bigrams, which come from the chain
    model:

    * ``S1``: the current word (``word``);
    * ``S2``: S1 plus spelling features of the current word: its last one,
      two and three letters, whether its first letter is lower case, upper
      case or alphanumeric, whether it is capitalized and contains a dot,
      whether all its letters are capitalized, whether it contains a hyphen;
    * ``S3``: the S2 features of every word in a window around the current
      one.

    and ``chunking``, the templates of CRFsuite's CoNLL-2000 chunking example
    (a bias, words and POS tags at offsets -2..+2, the word bigrams and POS
    bigrams and trigrams around the current token; needs a POS column), the
    default of the command line and of the CoNLL-2000 benchmark; and
    ``swvm``, the 19 templates of Appendix B of Ringel, Dror & Reichart, "The
    Structured Weighted Violation MIRA" (words and POS tags at offsets
    -1..+1, 9 bigrams and 4 trigrams of them; needs a POS column); and
    ``ner``, named-entity features (word, lower case, POS, prefix, suffixes,
    shape, spelling flags and the POS bigram, one token either side; needs a
    POS column), those of the Spanish NER benchmarks; ``ner-rich`` and
    ``chunking-rich``, the richer local features of the best feature-based
    systems (see :data:`PRESETS`; ``benchmarks/bench_features.py`` measures
    what they add).

    Parameters
    ----------
    name : {"S1", "S2", "S3", "chunking", "swvm", "ner", "ner-rich", "chunking-rich"}
        Feature set: a key of :data:`PRESETS`, which holds its templates,
        window and a one-line description.
    window : int, default=1
        Half-width of the S3 window: the paper's window of size ``w`` is
        ``window = (w - 1) // 2`` (``w = 3``: previous, current and next
        word).  Ignored by S1 and S2, which describe the current word only,
        by ``chunking``, whose window is 2, ``ner`` (1), and by ``swvm``,
        ``ner-rich`` and ``chunking-rich``, whose offsets are explicit.
    clusters : None, int, mapping of str to str, or BrownClusters, default=None
        Word clusters (see :class:`SequenceVectorizer`): when given, the
        templates ``cluster4``, ``cluster6``, ``cluster10`` and
        ``cluster20`` of the word and of its neighbours at offsets -1 and +1
        are added to the preset's.  An int ``n``: ``n`` Brown clusters
        learned at fit from the training sentences' own words (an unfitted
        ``BrownClusters(n_clusters=n, min_count=3)``, see
        :data:`CLUSTER_MIN_COUNT`), so that no other text is needed.
        Measured on development data (``benchmarks/bench_features_accuracy.py``,
        ``chunking-rich``, CoNLL-2000 with its last 1,000 training sentences
        held out, perceptron, mean of five seeds): none 94.72, 100 clusters
        94.72, 200 94.79, 500 94.90, 1000 94.83 (CRF, two seeds: none
        94.72, 500 94.96); on Spanish NER (``ner-rich``, esp.testa, three
        seeds) 500 clusters are neutral (CRF 76.19 -> 76.18, perceptron
        76.47 -> 76.30).  500 is the benchmarks' choice for training sets
        of this size (about 200,000 words); on the test files it gives
        CoNLL-2000 94.07 (perceptron; 94.08 with 100 clusters; 94.12 with
        the CRF run to convergence) and Spanish testb 81.49 (the CRF run to
        convergence; 82.23 stopped at 100 iterations, 81.60 without clusters).
        With today's ``ner-rich`` (its disjunctive words and long shape)
        they are neutral on esp.testa (CRF 77.30 without, 77.21 with) and
        cost 0.48 on Spanish testb (81.90 without, 81.42 with).
    embeddings : None, mapping of str to array-like, KeyedVectors, or EmbeddingFeatures, default=None
        Word vectors as real-valued features beside the templates' (Turian,
        Ratinov & Bengio 2010): an :class:`EmbeddingFeatures` as it is, or
        the ``vectors`` of a new one with its defaults (rescaled to
        standard deviation 0.1).  The result is then a
        :class:`SentenceFeatureUnion` of the vectorizer (``"templates"``)
        and the embeddings (``"embeddings"``).
    label_dictionary : "auto", bool or LabelDictionaryFeatures, default="auto"
        Add :class:`LabelDictionaryFeatures`: the labels each (lower-cased)
        word took in the training data, as features of the word and of its
        neighbours, cross-fitted on the training sentences.  ``"auto"``:
        with the presets that have them (:attr:`Preset.from_labels`, the
        rich ones); True: with any preset; an instance: that one.
        Measured (``benchmarks/bench_features_accuracy.py``, perceptron,
        development data): +1.7 F1 on CoNLL-2002 Spanish (esp.testa), +0.15
        on CoNLL-2000 (1,000 training sentences held out).
    gazetteer : "auto", bool or GazetteerFeatures, default="auto"
        Add :class:`GazetteerFeatures`: the training chunks' strings by
        type, matched in new sentences, cross-fitted likewise; as
        ``label_dictionary``.  Measured likewise: +0.7 on Spanish alone,
        +0.07 beside the dictionary on CoNLL-2000.  Both together, on the
        test files: CoNLL-2000 93.94 -> 94.02 (perceptron), Spanish testb
        81.53 -> 81.60 (CRF; esp.testa 75.97 -> 76.30).
    random_state : int, RandomState instance or None, default=None
        Seeds the cross-fitting folds of the label features (those of
        instances given as ``label_dictionary`` or ``gazetteer`` are kept).
    **kwargs
        Other parameters of :class:`SequenceVectorizer` (``min_freq``,
        ``hashing``, ``n_features``...).  ``missing_columns`` is ``"drop"``
        unless given: a preset's templates of a column the tokens lack (the
        POS tags of plain words) are left out at fit.

    Returns
    -------
    vectorizer : SequenceVectorizer or SentenceFeatureUnion
        Unfitted; a union with ``embeddings`` or label features, of the
        vectorizer (``"templates"``), ``"embeddings"``,
        ``"label_dictionary"`` and ``"gazetteer"``, in that order.  The
        label features learn from ``y``: fit the union with the labels (a
        :class:`~sklearn.pipeline.Pipeline` passes them); fitted without,
        it leaves them out with a warning.
    """
    if name not in PRESETS:
        raise ValueError(
            f"Unknown feature set {name!r}; expected one of {sorted(PRESETS)}."
        )
    preset = PRESETS[name]
    window = window if preset.window is None else preset.window
    templates = list(preset.templates)
    if isinstance(clusters, Integral) and not isinstance(clusters, (bool, np.bool_)):
        if clusters < 1:
            raise ValueError(f"clusters={clusters}: the number of Brown clusters must be at "
                             "least 1")
        clusters = BrownClusters(n_clusters=int(clusters), min_count=CLUSTER_MIN_COUNT)
    elif isinstance(clusters, (bool, np.bool_)):
        raise InputTypeError(f"clusters: expected None, a number of Brown clusters, a mapping "
                             f"of words to paths or a BrownClusters; got {describe(clusters)}")
    if clusters is not None:
        # explicit offsets, so that the preset's window does not widen them
        templates += [f"cluster{n}[{k:+d}]" if k else f"cluster{n}[0]"
                      for n in CLUSTER_PREFIXES for k in (-1, 0, 1)]
    # one preset for word-only and (word, POS, ...) tokens: the templates of
    # a column the tokens lack are dropped at fit
    kwargs.setdefault("missing_columns", "drop")
    vectorizer = SequenceVectorizer(templates, window=window, clusters=clusters, **kwargs)
    parts = [("templates", vectorizer)]
    if embeddings is not None:
        if not isinstance(embeddings, EmbeddingFeatures):
            embeddings = EmbeddingFeatures(vectors=embeddings)
        parts.append(("embeddings", embeddings))
    for key, value, default in (
            ("label_dictionary", label_dictionary, _label_dictionary),
            ("gazetteer", gazetteer, _gazetteer)):
        transformer = _from_labels(key, value, default, preset, random_state)
        if transformer is not None:
            parts.append((key, transformer))
    if len(parts) == 1:
        return vectorizer
    return SentenceFeatureUnion(parts)


def _label_dictionary(random_state):
    """The label dictionary of the rich presets."""
    return LabelDictionaryFeatures(("lower",), labels="both", window=1,
                                   random_state=random_state)


def _gazetteer(random_state):
    """The gazetteer of the rich presets."""
    return GazetteerFeatures(window=1, random_state=random_state)


def _from_labels(key, value, default, preset, random_state):
    """The transformer of ``label_dictionary=`` or ``gazetteer=``, or None."""
    kind = type(default(None))
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value == "auto":
        return default(random_state) if preset.from_labels else None
    if isinstance(value, (bool, np.bool_)):
        return default(random_state) if value else None
    if value is None:
        return None
    raise InputTypeError(f"{key}: expected 'auto', a bool or a {kind.__name__}; got "
                         f"{describe(value)}")
