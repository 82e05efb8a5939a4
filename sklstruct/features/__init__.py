"""Token feature extraction for sequence labeling.

:class:`SequenceVectorizer` turns a corpus of sentences into one sparse
matrix per sentence, with one row per token, ready for the structured
learners of :mod:`sklstruct`.

Input
-----
``X`` is an iterable of sentences; a sentence is a non-empty sequence of
tokens; a token is one of

* a string: the word itself, e.g. ``"Confidence"``;
* a tuple, list or 1-d array of strings (columns of a CoNLL file); column 0
  is the word, e.g. ``("Confidence", "NN")``;
* a dict (any mapping) of strings; key ``"word"`` is the word, other keys
  are read by name, e.g. ``{"word": "Confidence", "pos": "NN"}``.

Template mini-language
----------------------
Each feature template is a string.  A *template* is one or more *atoms*
joined by ``|`` (a conjunction); an *atom* is::

    NAME[(COLUMN)][[OFFSET]]

Column atoms give the value of a column of the token:

``word``
    the word (column 0 / key ``"word"``; ``col0`` and ``col:word`` are
    aliases).
``pos``
    column 1 of tuple tokens, key ``"pos"`` of dict tokens.
``colN``
    column ``N`` of tuple tokens, e.g. ``col2`` (chunk tag in CoNLL-2000).
``col:KEY``
    key ``KEY`` of dict tokens, e.g. ``col:lemma``.

Derived atoms compute a value from the word, or from the column given in
parentheses:

``lower``
    lower-cased word.
``prefixN``, ``suffixN``
    first / last ``N >= 1`` characters (the whole string when shorter).
``clusterN``
    the first ``N >= 1`` bits of the word's cluster path (the whole path
    when shorter), from the ``clusters`` of :class:`SequenceVectorizer`
    (e.g. ``BrownClusters().fit(X).clusters_``; ``cluster4(pos)`` reads the
    path of the POS tag).  A word without a path gives no feature, as a flag
    that does not fire (not a value ``""``, which would make all unknown
    words one feature); beyond the sentence it is ``__BOS__`` / ``__EOS__``
    like any atom.
``shape``
    collapsed word shape (:func:`word_shape`): upper-case letters become ``X``, lower-case ``x``,
    digits ``d``, other characters are kept, and runs of one symbol are
    collapsed: ``Confidence -> Xx``, ``U.S. -> X.X.``, ``1,000 -> d,d``,
    ``well-known -> x-x``.  Letters of scripts without case are ``x``
    (``東京都 -> x``), and the NFC and NFD spellings of a word have one
    shape.
``long_shape``
    the same shape with its runs kept (the long shape beside the short
    one): ``Confidence -> Xxxxxxxxxx``, ``1,000 -> d,ddd``.
flags
    ``is_title``, ``is_upper``, ``is_lower``, ``is_digit`` (the ``str``
    methods), ``has_digit``, ``has_hyphen``, ``has_dot``, ``is_punct``
    (non-empty, no letter, digit or space), ``title_dot`` (first letter
    upper case and contains a dot), ``first_upper``, ``first_lower``,
    ``first_alnum`` (first character upper case / lower case /
    alphanumeric); ``is_first``, ``is_last`` (the token begins / ends its
    sentence: sklearn-crfsuite's ``BOS`` / ``EOS``; they read no column).
    A flag fires only where it is true.

For instance ``suffix2(pos)`` is the last two letters of the POS tag and
``is_upper(col:lemma)`` tests the lemma.  ``bias`` is a constant feature on
every token; it takes no column, no offset and no conjunction.

``[OFFSET]`` reads the token ``OFFSET`` positions away: ``word[-1]`` is the
previous word, ``pos[+2]`` (or ``pos[2]``) the tag two tokens ahead.  Beyond
the sentence the value is ``__BOS__`` (before the start) or ``__EOS__``
(after the end), or, with ``boundary="skip"``, the atom gives no feature
there (CRFsuite's convention); flags do not fire there.  A template in which no atom
has an explicit offset is expanded to the offsets ``-window .. +window`` of
:class:`SequenceVectorizer` (``bias`` and a template of position flags
only are never expanded); in a template
with an explicit offset, atoms without one read the current token.

``[FIRST..LAST]`` makes an atom *disjunctive*: it reads every token from
``FIRST`` to ``LAST`` positions away, and the features of all these
positions share one name, so that a word is a feature of its neighbours
wherever it stands among them (after the disjunctive features of
Stanford NER's ``NERFeatureFactory``, ``useDisjunctive`` with its
``disjunctionWidth=4``: direction kept, position not; there binary
indicators of the word, here any atom, counted):
``lower[-4..-1]=bank`` fires on the four tokens after "bank".  A value met at several positions of the range
adds up (the column holds its count); ``word[-1..+1]|pos`` conjoins each
of the three words with the current tag.  Ranges count as explicit
offsets (never window-expanded); ``word[-1..-1]`` is ``word[-1]``.

Feature names are ``TEMPLATE=VALUE`` with the template in canonical form
(no ``[0]``, signed offsets, values of a conjunction joined by ``|``).  A
template made only of flags is named by the template alone, as is
``bias``.  Examples::

    word=Confidence      word[-1]=__BOS__     pos[-1]|pos=DT|NN
    suffix3=nce          shape(pos)=X         is_title[+1]
    bias                 is_title|pos=1|NN

``SequenceVectorizer(templates=["word", "pos[-1]|pos"], window=1)`` thus
produces the template instances ``word[-1]``, ``word``, ``word[+1]`` and
``pos[-1]|pos``.

When a value of a conjunction contains ``|``, the values of that feature
are escaped (``\\`` becomes ``\\\\``, ``|`` becomes ``\\|``), so that
different tokens never share a conjunction feature: ``("A|B", "C")`` gives
``pos[-1]|pos=A\\|B|C`` and ``("A", "B|C")`` gives ``pos[-1]|pos=A|B\\|C``.
Offsets (and ``window``) are limited to 1000 tokens, column numbers and
affix lengths to 10**6, and the templates to 10000 instances of 100000
atoms in all after window and range expansion.

Modules
-------
``_templates`` parses the template language, ``_tokens`` holds the token
table that evaluates the atoms over a corpus (and the atoms themselves: the
flags, :func:`word_shape`, ``BOS`` / ``EOS``), ``_featurize`` the compiled
per-token featurizer (feature keys, names, lookups, the CSR rows; the GIL
released), ``_fitted_index`` the fitted vocabulary as it reads it,
``_sequence`` the :class:`SequenceVectorizer` built on them, :mod:`~sklstruct.features.presets`
the named feature sets (:func:`feature_set`, :data:`PRESETS`), ``_dict``
:class:`DictSequenceVectorizer`, ``_token_transformer``
:class:`TokenTransformer`, ``clusters`` :class:`BrownClusters` (word
clusters whose paths :meth:`BrownClusters.transform` appends as a column,
for templates such as ``prefix4(col2)``; its kernel is ``_brown``),
``embeddings`` :class:`EmbeddingFeatures` (word vectors, given or trained
with gensim, as real-valued token features, and k-means clusters of them)
``label_dictionary`` :class:`LabelDictionaryFeatures` (the labels each
word took in the training data) and ``gazetteer`` :class:`GazetteerFeatures`
(the training chunks' strings matched in new sentences), both learned from
``y`` and cross-fitted on the training sentences (``_crossfit``), and
``union`` :class:`SentenceFeatureUnion` (the token features of several
transformers side by side).
"""
from ._dict import DictSequenceVectorizer
from .clusters import BrownClusters
from .embeddings import EmbeddingFeatures
from .gazetteer import GazetteerFeatures
from .label_dictionary import LabelDictionaryFeatures
from ._sequence import SequenceVectorizer
from ._token_transformer import TokenTransformer
from ._tokens import BOS, EOS, word_shape
from .presets import PRESETS, Preset, feature_set
from .union import SentenceFeatureUnion

__all__ = [
    "BOS",
    "BrownClusters",
    "EOS",
    "EmbeddingFeatures",
    "GazetteerFeatures",
    "LabelDictionaryFeatures",
    "PRESETS",
    "DictSequenceVectorizer",
    "Preset",
    "SentenceFeatureUnion",
    "SequenceVectorizer",
    "TokenTransformer",
    "feature_set",
    "word_shape",
]
