"""The preset feature sets: named template lists, each with its window and a
one-line description (which ``sklstruct train --help`` prints).

:data:`PRESETS` is the registry; :func:`feature_set` builds the vectorizer of
one of them.  Adding a preset is one entry of :data:`PRESETS`.
"""
from typing import NamedTuple

from ._sequence import SequenceVectorizer


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
    """

    templates: tuple
    window: int | None
    description: str


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
}


def feature_set(name, window=1, **kwargs):
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
    POS column), those of the Spanish NER benchmarks.

    Parameters
    ----------
    name : {"S1", "S2", "S3", "chunking", "swvm", "ner"}
        Feature set: a key of :data:`PRESETS`, which holds its templates,
        window and a one-line description.
    window : int, default=1
        Half-width of the S3 window: the paper's window of size ``w`` is
        ``window = (w - 1) // 2`` (``w = 3``: previous, current and next
        word).  Ignored by S1 and S2, which describe the current word only,
        by ``chunking``, whose window is 2, ``ner`` (1), and by ``swvm``,
        whose offsets are explicit.
    **kwargs
        Other parameters of :class:`SequenceVectorizer` (``min_freq``,
        ``hashing``, ``n_features``).

    Returns
    -------
    vectorizer : SequenceVectorizer
        Unfitted vectorizer.
    """
    if name not in PRESETS:
        raise ValueError(
            f"Unknown feature set {name!r}; expected one of {sorted(PRESETS)}."
        )
    preset = PRESETS[name]
    window = window if preset.window is None else preset.window
    return SequenceVectorizer(list(preset.templates), window=window, **kwargs)
