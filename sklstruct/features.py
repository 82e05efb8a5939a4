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
``shape``
    collapsed word shape: upper-case letters become ``X``, lower-case ``x``,
    digits ``d``, other characters are kept, and runs of one symbol are
    collapsed: ``Confidence -> Xx``, ``U.S. -> X.X.``, ``1,000 -> d,d``,
    ``well-known -> x-x``.
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
atoms in all after window expansion.
"""
import re
from collections.abc import Mapping
from hashlib import blake2b
from itertools import groupby, repeat
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context, clone
from sklearn.feature_extraction import FeatureHasher
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._validation import check_sentence, check_sentence_list, describe
from .chain import StackedSentences, as_stacked

__all__ = ["BOS", "EOS", "SequenceVectorizer", "TokenTransformer", "feature_set"]

BOS = "__BOS__"
"""Value of a column atom that points before the start of the sentence."""

EOS = "__EOS__"
"""Value of a column atom that points after the end of the sentence."""


def _is_punct(s):
    return bool(s) and not any(c.isalnum() or c.isspace() for c in s)


_FLAGS = {
    "is_title": str.istitle,
    "is_upper": str.isupper,
    "is_lower": str.islower,
    "is_digit": str.isdigit,
    "has_digit": lambda s: any(c.isdigit() for c in s),
    "has_hyphen": lambda s: "-" in s,
    "has_dot": lambda s: "." in s,
    "is_punct": _is_punct,
    "title_dot": lambda s: s[:1].isupper() and "." in s,
    "first_upper": lambda s: s[:1].isupper(),
    "first_lower": lambda s: s[:1].islower(),
    "first_alnum": lambda s: s[:1].isalnum(),
}

_SHAPE_TABLE = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "X" * 26 + "x" * 26 + "d" * 10,
)


def _shape(s):
    if s.isascii():
        s = s.translate(_SHAPE_TABLE)
    else:
        s = "".join(
            "X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c
            for c in s
        )
    return "".join([c for c, _ in groupby(s)])


_DERIVED = {"lower": str.lower, "shape": _shape}

#: Flags of a token's place in its sentence (they read no column).
_POSITION_FLAGS = ("is_first", "is_last")

# ---------------------------------------------------------------------------
# Template parsing
# ---------------------------------------------------------------------------

#: Largest offset a template may read (``word[+1000]``), hence the largest
#: ``window``: beyond it every value is ``__BOS__`` or ``__EOS__`` anyway.
_MAX_OFFSET = 1000
#: Largest column number (``colN``) and affix length (``prefixN``).
_MAX_NUMBER = 10**6
#: Most template instances after window expansion: the output has up to one
#: feature per token and instance.
_MAX_INSTANCES = 10_000
#: Most atoms in all template instances together (conjunctions count each).
_MAX_ATOMS = 100_000

_ATOM_RE = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_]*(?::[^\s|\[\]()=]+)?)"
    r"(?:\((?P<src>[^\s|\[\]()=]+)\))?"
    r"(?:\[(?P<off>[+-]?[0-9]+)\])?"
)
_COL_RE = re.compile(r"col([0-9]+)")
_AFFIX_RE = re.compile(r"(prefix|suffix)([0-9]+)")

"""repr() cut to a readable length, for error messages."""


def _bounded_int(text, limit, what, template):
    """``int(text)`` of a ``[+-]digits`` string whose absolute value is at
    most ``limit``; ValueError otherwise (checked on the digits, so that a
    thousand-digit number is refused, not converted)."""
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > len(str(limit)) or int(digits) > limit:
        raise ValueError(
            f"Malformed template {describe(template)}: {what} {describe(text)} is too "
            f"large; at most {limit}."
        )
    return -int(digits) if text.startswith("-") else int(digits)


def _parse_column(name, template):
    """Canonical column name ('word', 'pos', 'colN', 'col:KEY') or None."""
    if name in ("word", "pos"):
        return name
    m = _COL_RE.fullmatch(name)
    if m:
        n = _bounded_int(m.group(1), _MAX_NUMBER, "column number", template)
        return "word" if n == 0 else f"col{n}"
    if name.startswith("col:"):
        key = name[4:]
        return key if key in ("word", "pos") else name
    return None


def _parse_atom(text, template):
    """Parse one atom into ``(kind, arg, column, offset, explicit_offset)``.

    ``kind`` is 'column', 'derived' (arg: 'lower', 'shape', ('prefix', N),
    ('suffix', N)), 'flag' (arg: the flag name) or 'bias'; ``column`` is the
    canonical column name ('word', 'pos', 'colN' or 'col:KEY').
    """
    m = _ATOM_RE.fullmatch(text)
    if m is None:
        raise ValueError(
            f"Malformed template {describe(template)}: cannot parse {describe(text)}; "
            "expected NAME, NAME(COLUMN), NAME[OFFSET] or NAME(COLUMN)[OFFSET]."
        )
    name, src, off = m.group("name", "src", "off")
    explicit = off is not None
    offset = _bounded_int(off, _MAX_OFFSET, "offset", template) if explicit else 0
    column = "word"
    if src is not None:
        column = _parse_column(src, template)
        if column is None:
            raise ValueError(
                f"Malformed template {describe(template)}: {describe(src)} is not a column; "
                "expected word, pos, colN or col:KEY."
            )
    if name == "bias":
        if src is not None or explicit:
            raise ValueError(
                f"Malformed template {describe(template)}: 'bias' takes no column and "
                "no offset."
            )
        return ("bias", None, None, 0, False)
    column_name = _parse_column(name, template)
    if column_name is not None:
        if src is not None:
            raise ValueError(
                f"Malformed template {describe(template)}: column atom {describe(name)} takes no "
                "column argument."
            )
        return ("column", None, column_name, offset, explicit)
    if name in _DERIVED:
        return ("derived", name, column, offset, explicit)
    if name in _POSITION_FLAGS:
        if src is not None:
            raise ValueError(
                f"Malformed template {describe(template)}: {describe(name)} takes no "
                "column argument."
            )
        return ("flag", name, None, offset, explicit)
    if name in _FLAGS:
        return ("flag", name, column, offset, explicit)
    m = _AFFIX_RE.fullmatch(name)
    if m:
        n = _bounded_int(m.group(2), _MAX_NUMBER, f"{m.group(1)} length", template)
        if n < 1:
            raise ValueError(
                f"Malformed template {describe(template)}: {describe(name)} needs a length N >= 1."
            )
        return ("derived", (m.group(1), n), column, offset, explicit)
    raise ValueError(
        f"Malformed template {describe(template)}: unknown template name {describe(name)} "
        "(other dict keys are read with col:KEY)."
    )


def _base_name(kind, arg, column):
    """Canonical name of an atom without its offset, e.g. 'suffix3(pos)'."""
    if kind == "bias":
        return "bias"
    if kind == "column":
        return column
    name = f"{arg[0]}{arg[1]}" if isinstance(arg, tuple) else arg
    return name if column in ("word", None) else f"{name}({column})"


def _atom_name(base, offset):
    return base if offset == 0 else f"{base}[{offset:+d}]"


def _parse_templates(templates, window):
    """Parse and expand templates.

    Returns a list of template instances ``(name, atoms)`` where ``name`` is
    the canonical string and ``atoms`` a tuple of ``(kind, arg, base_name,
    column, offset)``; duplicates are dropped, order is kept.
    """
    if len(templates) == 0:
        raise ValueError("templates must contain at least one template.")
    if len(templates) > _MAX_INSTANCES:
        raise ValueError(
            f"templates has {len(templates)} templates; at most {_MAX_INSTANCES} "
            "are allowed."
        )
    instances = {}
    n_atoms = 0
    for i, template in enumerate(templates):
        if not isinstance(template, str):
            raise ValueError(
                f"Template at position {i} must be a string, got {describe(template)}."
            )
        parts = [p.strip() for p in template.split("|", _MAX_ATOMS)]
        if len(parts) > _MAX_ATOMS:
            raise ValueError(
                f"Malformed template {describe(template)}: more than {_MAX_ATOMS} atoms."
            )
        atoms = [_parse_atom(p, template) for p in parts]
        if any(a[0] == "bias" for a in atoms) and len(atoms) > 1:
            raise ValueError(
                f"Malformed template {describe(template)}: 'bias' cannot be part of a "
                "conjunction."
            )
        if (atoms[0][0] == "bias" or any(a[4] for a in atoms)
                or all(a[0] == "flag" and a[1] in _POSITION_FLAGS for a in atoms)):
            shifts = [0]
        else:
            shifts = range(-window, window + 1)
        for k in shifts:
            inst = tuple(
                (kind, arg, _base_name(kind, arg, col), col, off + k)
                for kind, arg, col, off, _ in atoms
            )
            name = "|".join(_atom_name(a[2], a[4]) for a in inst)
            if instances.setdefault(name, inst) is inst:
                n_atoms += len(inst)
        if len(instances) > _MAX_INSTANCES or n_atoms > _MAX_ATOMS:
            raise ValueError(
                f"templates[:{i + 1}] with window={window} already expand to "
                f"{len(instances)} template instances of {n_atoms} atoms; at most "
                f"{_MAX_INSTANCES} instances of {_MAX_ATOMS} atoms are allowed (use "
                "fewer templates or a smaller window)."
            )
    return list(instances.items())


# ---------------------------------------------------------------------------
# Corpus: flat token arrays and per-template value codes
# ---------------------------------------------------------------------------


def _token_kind(token):
    if isinstance(token, str):
        return "str"
    if isinstance(token, Mapping):
        return "dict"
    if isinstance(token, (tuple, list, np.ndarray)):
        return "seq"
    return None


def _join_values(values):
    r"""Value part of a conjunction's feature name: the values joined by ``|``.

    When a value contains ``|``, every value is escaped (``\`` becomes
    ``\\`` and ``|`` becomes ``\|``), so that two different tuples never
    share a name: a name of ``|``-free values has exactly ``len(values) - 1``
    bars and splits one way only; an escaped name has more bars than that and
    decodes one way only.  Names of ``|``-free values are left as they are.
    """
    if any("|" in v for v in values):
        values = [v.replace("\\", "\\\\").replace("|", "\\|") for v in values]
    return "|".join(values)


def _factorize(values):
    """Integer codes and the list of distinct values, in order of appearance."""
    uniques = list(dict.fromkeys(values))
    index = {v: i for i, v in enumerate(uniques)}
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.intp,
                        count=len(values))
    return codes, uniques


class _Corpus:
    """All tokens of ``X`` flattened, with the helpers the templates need."""

    def __init__(self, X, boundary="symbol"):
        self.boundary = boundary
        flat, lengths = [], []
        X = check_sentence_list(X, "X", "sentences (sequences of tokens)", item_ndim=1,
                                sized=False)
        for i, sentence in enumerate(X):
            tokens = check_sentence(sentence, f"X[{i}]", "tokens")
            lengths.append(len(tokens))
            flat.extend(tokens)
        self.flat = flat
        self.n_tokens = n = len(flat)
        self.lengths = np.asarray(lengths, dtype=np.intp)
        self.starts = np.zeros(len(lengths) + 1, dtype=np.intp)
        np.cumsum(self.lengths, out=self.starts[1:])
        sentence_of = np.repeat(np.arange(len(lengths)), self.lengths)
        self.position = np.arange(n) - self.starts[:-1][sentence_of]
        self.sentence_length = self.lengths[sentence_of]

        kind_of = {tp: _token_kind(next(t for t in flat if type(t) is tp))
                   for tp in set(map(type, flat))}
        if None in kind_of.values():
            i, tp = next((i, type(t)) for i, t in enumerate(flat)
                         if kind_of[type(t)] is None)
            raise TypeError(
                f"{self._where(i)}: unsupported token type {tp.__name__}; "
                "expected a str, a tuple/list of str or a dict of str"
            )
        kinds = set(kind_of.values())
        self.kind = kinds.pop() if len(kinds) == 1 else "mixed"
        self._columns = {}
        self._bases = {}
        self._valid = {}

    def _where(self, i):
        s = int(np.searchsorted(self.starts, i, side="right")) - 1
        return f"X[{s}], token {i - self.starts[s]}"

    @staticmethod
    def _getter(column):
        """Function reading ``column`` from any token, and its seq/dict keys."""
        if column.startswith("col:"):
            seq_key, dict_key = None, column[4:]
        elif column.startswith("col"):
            seq_key, dict_key = int(column[3:]), None  # dicts have no positions
        else:
            seq_key, dict_key = ("word", "pos").index(column), column

        def get(token):
            if isinstance(token, str):
                if column != "word":
                    raise KeyError(column)
                return token
            key = dict_key if isinstance(token, Mapping) else seq_key
            if key is None:
                raise KeyError(column)
            return token[key]

        return get, seq_key, dict_key

    def column(self, column):
        """Codes and distinct values of a column over all tokens."""
        if column in self._columns:
            return self._columns[column]
        get, seq_key, dict_key = self._getter(column)
        flat = self.flat
        try:
            if self.kind == "str" and column == "word":
                values = flat
            elif self.kind == "seq" and seq_key is not None:
                values = [t[seq_key] for t in flat]
            elif self.kind == "dict" and dict_key is not None:
                values = [t[dict_key] for t in flat]
            else:
                values = [get(t) for t in flat]
            ok = all(issubclass(tp, str) for tp in set(map(type, values)))
        except (KeyError, IndexError, TypeError):
            ok = False
        if not ok:
            self._raise_column_error(get, column)
        result = self._columns[column] = _factorize(values)
        return result

    def word_keys(self):
        """A stable 64-bit key of every token's word (the same word, the same
        key, in any process), or None when the tokens have no word column."""
        try:
            codes, words = self.column("word")
        except (ValueError, TypeError):
            return None
        keys = np.fromiter(
            (int.from_bytes(blake2b(w.encode("utf-8", "surrogatepass"), digest_size=8)
                            .digest(), "little", signed=True) for w in words),
            dtype=np.int64, count=len(words))
        return keys[codes]

    def _raise_column_error(self, get, column):
        for i, token in enumerate(self.flat):
            try:
                value = get(token)
            except (KeyError, IndexError, TypeError):
                raise ValueError(
                    f"{self._where(i)}: no column {column!r} in {describe(token)}"
                ) from None
            if not isinstance(value, str):
                raise TypeError(
                    f"{self._where(i)}: the value of column {column!r} must be "
                    f"a string; got {describe(value)} ({type(value).__name__})"
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def base(self, kind, arg, base_name, column):
        """Unshifted values of an atom: ``(codes, table)`` or a boolean mask."""
        if base_name in self._bases:
            return self._bases[base_name]
        if arg in _POSITION_FLAGS:
            result = self._bases[base_name] = (
                self.position == 0 if arg == "is_first"
                else self.position == self.sentence_length - 1)
            return result
        codes, table = self.column(column)
        if kind == "flag":
            func = _FLAGS[arg]
            result = np.fromiter(map(func, table), dtype=bool, count=len(table))[
                codes
            ]
        elif kind == "column":
            result = codes, table
        else:
            if isinstance(arg, tuple):
                side, n = arg
                derived = [v[:n] for v in table] if side == "prefix" else [
                    v[-n:] for v in table
                ]
            else:
                derived = list(map(_DERIVED[arg], table))
            remap, table = _factorize(derived)
            result = remap[codes], table
        self._bases[base_name] = result
        return result

    def valid(self, offset):
        """Tokens whose neighbour at ``offset`` lies inside the sentence."""
        if offset not in self._valid:
            p = self.position + offset
            self._valid[offset] = (p >= 0) & (p < self.sentence_length)
        return self._valid[offset]

    def atom(self, kind, arg, base_name, column, offset):
        """``(codes, table, mask)`` of an atom at ``offset``; mask may be None."""
        n = self.n_tokens
        if kind == "bias":
            return np.zeros(n, dtype=np.intp), [""], None
        base = self.base(kind, arg, base_name, column)
        if offset != 0:
            valid = self.valid(offset)
            source = np.clip(np.arange(n) + offset, 0, n - 1)
        if kind == "flag":
            mask = base if offset == 0 else valid & base[source]
            return np.zeros(n, dtype=np.intp), ["1"], mask
        codes, table = base
        if offset == 0:
            return codes, table, None
        if self.boundary == "skip":
            return np.where(valid, codes[source], 0), table, valid
        codes = np.where(valid, codes[source], len(table))
        return codes, table + [BOS if offset < 0 else EOS], None

    def template(self, name, atoms):
        """``(codes, names, mask)`` of a template instance.

        ``names[codes[t]]`` is the feature of token ``t``, which fires where
        ``mask`` is true (everywhere when ``mask`` is None).
        """
        codes, table, mask = self.atom(*atoms[0])
        if len(atoms) > 1:
            table = [(v,) for v in table]
        for atom in atoms[1:]:
            codes_b, table_b, mask_b = self.atom(*atom)
            nb = len(table_b)
            combined = codes.astype(np.int64) * nb + codes_b
            uniq, codes = np.unique(combined, return_inverse=True)
            codes = codes.reshape(-1)
            qa, rb = np.divmod(uniq, nb)
            table = [
                table[i] + (table_b[j],) for i, j in zip(qa.tolist(), rb.tolist())
            ]
            if mask_b is not None:
                mask = mask_b if mask is None else mask & mask_b
        if len(atoms) > 1:
            table = list(map(_join_values, table))
        if all(a[0] in ("flag", "bias") for a in atoms):
            names = [name] * len(table)
        else:
            prefix = name + "="
            names = [prefix + v for v in table]
        return codes, names, mask


# ---------------------------------------------------------------------------
# The vectorizer
# ---------------------------------------------------------------------------


class _SentencesOut:
    """For transformers whose output is sentences (StackedSentences), not a
    table: ``set_output`` refuses pandas and polars containers clearly."""

    def set_output(self, *, transform=None):
        """Only the default output: these transformers return sentences.

        Parameters
        ----------
        transform : {"default"} or None
        """
        if transform not in (None, "default"):
            raise ValueError(f"{type(self).__name__}.set_output(transform={transform!r}): "
                             "the output is a list of sentences (StackedSentences: one "
                             "feature matrix per sentence), not a table, so it cannot be a "
                             "pandas or polars container")
        return self


class SequenceVectorizer(_SentencesOut, TransformerMixin, BaseEstimator):
    """Map sentences to per-token sparse feature matrices.

    Features are produced by templates (see the module documentation for
    the template mini-language); ``fit`` learns a vocabulary of feature
    names, ``transform`` returns one ``scipy.sparse.csr_matrix`` of shape
    ``(n_tokens, n_features_out_)`` per sentence, with value 1.0 for each
    feature of each token.  Features unseen during ``fit`` are ignored.

    Parameters
    ----------
    templates : list or tuple of str, default=("word",)
        Feature templates, e.g. ``["bias", "word", "suffix3", "pos[-1]|pos"]``.
    window : int, default=0
        Templates written without an explicit offset (except ``bias``) are
        expanded to offsets ``-window`` to ``+window``.  At most 1000, as are
        explicit offsets; the templates may expand to at most 10000 template
        instances of 100000 atoms in all.
    min_freq : int, default=1
        Features occurring on fewer than ``min_freq`` tokens of the training
        data are dropped from the vocabulary.  Must be 1 with hashing.
    hashing : bool, default=False
        If True, map feature names to columns with
        ``FeatureHasher(n_features, input_type="string",
        alternate_sign=False)`` instead of a learned vocabulary (colliding
        features of a token add up).
    n_features : int, default=2**20
        Number of columns with ``hashing=True``; ignored otherwise.
    boundary : {"symbol", "skip"}, default="symbol"
        What an atom reading beyond the sentence gives: the value
        ``__BOS__`` / ``__EOS__`` (``"symbol"``: ``word[-1]=__BOS__`` on the
        first token), or no feature (``"skip"``: CRFsuite's convention, as
        in sklearn-crfsuite's tutorial, whose ``BOS`` / ``EOS`` features are
        the ``is_first`` / ``is_last`` flags here).

    Attributes
    ----------
    templates_ : list of str
        Canonical template instances after window expansion, in the order
        their features appear in :meth:`token_features`.  Each re-parses to
        itself with ``window=0``.
    vocabulary_ : dict of str to int
        Feature name to column, names sorted alphabetically (not set with
        ``hashing=True``).
    n_features_out_ : int
        Number of output columns.

    See Also
    --------
    feature_set : Preset feature sets S1, S2, S3 of Altun et al. (2003).

    Notes
    -----
    There is no ``n_features_in_``: the input is not a fixed-width array.

    Examples
    --------
    >>> from sklstruct.features import SequenceVectorizer
    >>> X = [[("He", "PRP"), ("reckons", "VBZ")]]
    >>> vec = SequenceVectorizer(["bias", "word", "pos[-1]|pos"]).fit(X)
    >>> vec.token_features(X)[0][1]
    ['bias', 'word=reckons', 'pos[-1]|pos=PRP|VBZ']
    >>> [m.shape for m in vec.transform(X)]
    [(2, 5)]
    """

    _parameter_constraints = {
        "templates": [list, tuple],
        "window": [Interval(Integral, 0, _MAX_OFFSET, closed="both")],
        "min_freq": [Interval(Integral, 1, None, closed="left")],
        "hashing": ["boolean"],
        "n_features": [Interval(Integral, 1, np.iinfo(np.int32).max, closed="both")],
        "boundary": [StrOptions({"symbol", "skip"})],
    }

    def __init__(
        self, templates=("word",), *, window=0, min_freq=1, hashing=False,
        n_features=2**20, boundary="symbol",
    ):
        self.templates = templates
        self.window = window
        self.min_freq = min_freq
        self.hashing = hashing
        self.n_features = n_features
        self.boundary = boundary

    def __setstate__(self, state):
        # vectorizers pickled before ``boundary`` existed read as "symbol"
        state.setdefault("boundary", "symbol")
        if "templates_" in state:
            state.setdefault("_boundary", "symbol")
        super().__setstate__(state)

    # -- fitting ------------------------------------------------------------

    def _prepare(self):
        """Validate the parameters and parse the templates."""
        for param in ("window", "min_freq", "n_features"):
            if isinstance(getattr(self, param), (bool, np.bool_)):
                raise TypeError(
                    f"{param}={getattr(self, param)} must be an int, not a bool."
                )
        if self.hashing and self.min_freq != 1:
            raise ValueError(
                f"min_freq={self.min_freq} cannot be used with hashing=True: "
                "hashed features keep no counts; use min_freq=1."
            )
        return _parse_templates(self.templates, self.window)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the template instances and the vocabulary of features.

        Parameters
        ----------
        X : sequence of sentences
            Sentences of tokens (str, tuple/list of str or dict of str).
        y : None
            Ignored.

        Returns
        -------
        self : SequenceVectorizer
            Fitted vectorizer.
        """
        self._fit(_Corpus(X, self.boundary))
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit to ``X`` and transform it, computing the features once.

        Parameters
        ----------
        X : sequence of sentences
            Sentences of tokens (str, tuple/list of str or dict of str).
        y : None
            Ignored.

        Returns
        -------
        Xt : StackedSentences
            One ``(n_tokens, n_features_out_)`` float64 CSR matrix per sentence,
            held as one stacked matrix (see :meth:`transform`).
        """
        corpus = _Corpus(X, self.boundary)
        columns = self._fit(corpus)
        return self._assemble(corpus, columns)

    def _fit(self, corpus):
        instances = self._prepare()
        columns = [corpus.template(name, atoms) for name, atoms in instances]
        if self.hashing:
            self.__dict__.pop("vocabulary_", None)
            self._set_templates(instances, self.n_features)
            return columns
        # Names from different templates differ (their prefixes do), so
        # a name can repeat only within a template, e.g. a word "__BOS__".
        counts = {}
        for codes, names, mask in columns:
            freq = np.bincount(codes if mask is None else codes[mask],
                               minlength=len(names))
            present = np.flatnonzero(freq).tolist()
            template_counts = dict(zip(map(names.__getitem__, present),
                                       freq[present].tolist()))
            if len(template_counts) < len(present):  # repeated names: add up
                template_counts = {}
                for i in present:
                    template_counts[names[i]] = (
                        template_counts.get(names[i], 0) + int(freq[i])
                    )
            counts.update(template_counts)
        min_freq = self.min_freq
        kept = sorted(
            counts if min_freq == 1
            else (name for name, c in counts.items() if c >= min_freq)
        )
        if not kept:
            raise ValueError(
                "No feature fires on X: the vocabulary is empty."
                if not counts
                else f"No feature occurs at least min_freq={min_freq} times; "
                "lower min_freq."
            )
        self.vocabulary_ = dict(zip(kept, range(len(kept))))
        self._set_templates(instances, len(kept))
        return columns

    def _set_templates(self, instances, n_features_out):
        self._instances = instances
        self._boundary = self.boundary
        self.templates_ = [name for name, _ in instances]
        self.n_features_out_ = n_features_out

    # -- transforming -------------------------------------------------------

    def _lookup(self, names):
        """Column of each feature name, -1 for names outside the vocabulary."""
        if self.hashing:
            hasher = FeatureHasher(
                self.n_features, input_type="string", alternate_sign=False
            )
            # surrogatepass: a lone surrogate (e.g. from a file read with
            # errors="surrogateescape") hashes instead of failing to encode.
            return hasher.transform(
                [name.encode("utf-8", "surrogatepass")] for name in names
            ).indices
        return np.fromiter(
            map(self.vocabulary_.get, names, repeat(-1)),
            dtype=np.intp,
            count=len(names),
        )

    def _assemble(self, corpus, columns):
        # Each template gives at most one feature per token: gather the
        # columns in a (n_tokens, n_templates) table, -1 where none fires.
        table = np.empty((corpus.n_tokens, len(columns)), dtype=np.int32)
        for j, (codes, names, mask) in enumerate(columns):
            col = self._lookup(names).astype(np.int32)[codes]
            if mask is not None:
                col[~mask] = -1
            table[:, j] = col
        table.sort(axis=1)
        present = table >= 0
        indptr = np.zeros(corpus.n_tokens + 1, dtype=np.int64)
        np.cumsum(present.sum(axis=1), out=indptr[1:])
        n_out = self.n_features_out_
        matrix = sp.csr_matrix(
            (np.ones(int(indptr[-1])), table[present], indptr),
            shape=(corpus.n_tokens, n_out),
        )
        matrix.sum_duplicates()  # hash collisions
        # one stacked matrix: the taggers read it as it is (no cut and re-stack)
        return StackedSentences._trusted(matrix, corpus.starts.astype(np.int64),
                                         corpus.word_keys())

    def transform(self, X):
        """Compute the feature matrix of each sentence.

        Parameters
        ----------
        X : sequence of sentences
            Sentences of tokens (str, tuple/list of str or dict of str).

        Returns
        -------
        Xt : StackedSentences
            A list of ``(n_tokens, n_features_out_)`` float64 CSR matrices, one
            per sentence, held as one stacked matrix (see
            :class:`sklstruct.chain.StackedSentences`); features not in the
            vocabulary are ignored.
        """
        check_is_fitted(self, "templates_")
        corpus = _Corpus(X, self._boundary)
        columns = [corpus.template(name, atoms) for name, atoms in self._instances]
        return self._assemble(corpus, columns)

    def token_features(self, X):
        """Feature names of every token, exactly as indexed by ``transform``.

        Uses the fitted templates if the vectorizer is fitted, the current
        parameters otherwise.  The names are not filtered by the vocabulary.

        Parameters
        ----------
        X : sequence of sentences
            Sentences of tokens (str, tuple/list of str or dict of str).

        Returns
        -------
        features : list of list of list of str
            ``features[s][t]`` lists the features of token ``t`` of sentence
            ``s``, in template order.
        """
        if hasattr(self, "templates_"):
            instances, boundary = self._instances, self._boundary
        else:
            self._validate_params()
            instances, boundary = self._prepare(), self.boundary
        corpus = _Corpus(X, boundary)
        per_template = []
        for name, atoms in instances:
            codes, names, mask = corpus.template(name, atoms)
            values = np.array(names, dtype=object)[codes]
            if mask is not None:
                values[~mask] = None
            per_template.append(values.tolist())
        if any(None in v for v in per_template):
            flat = [[f for f in row if f is not None] for row in zip(*per_template)]
        else:
            flat = [list(row) for row in zip(*per_template)]
        starts = corpus.starts.tolist()
        return [flat[a:b] for a, b in zip(starts[:-1], starts[1:])]

    def get_feature_names_out(self, input_features=None):
        """Feature names of the output columns.

        Parameters
        ----------
        input_features : None
            Ignored; present for API consistency.

        Returns
        -------
        feature_names_out : ndarray of str objects
            Name of each column (vocabulary mode only).
        """
        check_is_fitted(self, "templates_")
        if self.hashing:
            raise ValueError(
                "get_feature_names_out is not available with hashing=True: "
                "hashed columns have no names."
            )
        names = np.empty(len(self.vocabulary_), dtype=object)
        for name, i in self.vocabulary_.items():
            names[i] = name
        return names

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.two_d_array = False
        return tags


# ---------------------------------------------------------------------------
# Preset feature sets
# ---------------------------------------------------------------------------

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

_FEATURE_SETS = {"S1": _S1, "S2": _S2, "S3": _S2, "chunking": _CHUNKING, "swvm": _SWVM,
                 "ner": _NER}


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
        Feature set.
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
    if name not in _FEATURE_SETS:
        raise ValueError(
            f"Unknown feature set {name!r}; expected one of {sorted(_FEATURE_SETS)}."
        )
    window = {"S3": window, "chunking": 2, "ner": 1}.get(name, 0)
    return SequenceVectorizer(list(_FEATURE_SETS[name]), window=window, **kwargs)


# ---------------------------------------------------------------------------
# Sentences of feature dicts (the input of sklearn-crfsuite and python-crfsuite)
# ---------------------------------------------------------------------------

def _item_features(item, prefix, where, out):
    """Add the (name, value) attributes of one token's features to ``out``,
    named as python-crfsuite names them (see :class:`DictSequenceVectorizer`)."""
    if isinstance(item, Mapping):
        for key, value in item.items():
            name = prefix + str(key)
            if isinstance(value, str):
                out[f"{name}={value}"] = out.get(f"{name}={value}", 0.0) + 1.0
            elif isinstance(value, (bool, np.bool_, Integral, float, np.floating)):
                value = float(value)
                if not np.isfinite(value):
                    raise ValueError(f"{where}: feature {name!r} has the value {value}; "
                                     "values must be finite")
                out[name] = out.get(name, 0.0) + value
            elif isinstance(value, (Mapping, list, tuple, set, frozenset)):
                _item_features(value, name + ":", where, out)
            else:
                raise TypeError(f"{where}: feature {name!r} has a value of type "
                                f"{type(value).__name__}; expected str, a number, a bool, a "
                                "dict or a list of str")
    elif isinstance(item, (list, tuple, set, frozenset)):
        for key in item:
            if not isinstance(key, str):
                raise TypeError(f"{where}: a feature list holds a {type(key).__name__}; "
                                "expected str")
            out[prefix + key] = out.get(prefix + key, 0.0) + 1.0
    else:
        raise TypeError(f"{where}: expected a dict (or list) of features; got "
                        f"{type(item).__name__}")
    return out


class DictSequenceVectorizer(_SentencesOut, TransformerMixin, BaseEstimator):
    """Sentences of feature dicts, as sklearn-crfsuite takes them, to the
    taggers' input.

    Each sentence is a list of tokens, each token a dict of features exactly
    as for sklearn-crfsuite's ``CRF.fit`` (python-crfsuite's ``ItemSequence``
    formats): ``{"key": "value"}`` is the attribute ``key=value`` with value
    1; ``{"key": 1.5}`` the attribute ``key`` with value 1.5 (real-valued
    features, such as word-embedding dimensions, flow through as they are);
    ``{"key": True}`` value 1 (``False``: 0, left out); a nested dict or a
    list of strings prefixes its keys with ``key:``; a token may also be a
    plain list of attribute names.  Keys may hold any characters and vary
    from token to token.  Switching from sklearn-crfsuite is then::

        model = make_pipeline(DictSequenceVectorizer(), CRFTagger())
        model.fit(X_train, y_train)          # the same sent2features output

    Attributes are indexed by :class:`sklearn.feature_extraction.DictVectorizer`
    (the attribute names are built here, so that they are CRFsuite's);
    attributes not seen in ``fit`` are ignored by ``transform``.

    Parameters
    ----------
    sort : bool, default=True
        Sort the attribute names (the column order), as ``DictVectorizer``.

    Attributes
    ----------
    vocabulary_ : dict of str to int
        Attribute name to column.
    n_features_out_ : int
    """

    _parameter_constraints = {"sort": ["boolean"]}

    def __init__(self, sort=True):
        self.sort = sort

    def _items(self, X):
        """Every token's attributes, and the sentence offsets."""
        sentences = check_sentence_list(X, "X", "sentences of feature dicts", item_ndim=1)
        items, offsets = [], [0]
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, (str, Mapping)) or not hasattr(sentence, "__len__"):
                raise TypeError(f"X[{i}]: expected a list of token feature dicts; got "
                                f"{type(sentence).__name__}")
            if len(sentence) == 0:
                raise ValueError(f"X[{i}]: the sentence is empty")
            items.extend(_item_features(token, "", f"X[{i}][{t}]", {})
                         for t, token in enumerate(sentence))
            offsets.append(len(items))
        return items, np.array(offsets, dtype=np.int64)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the attribute vocabulary.

        Parameters
        ----------
        X : list of list of dict
        y : ignored

        Returns
        -------
        self
        """
        self._fit_items(self._items(X)[0])
        return self

    def _fit_items(self, items):
        from sklearn.feature_extraction import DictVectorizer

        vectorizer = DictVectorizer(sort=self.sort).fit(items)
        self.vectorizer_ = vectorizer
        self.vocabulary_ = vectorizer.vocabulary_
        self.n_features_out_ = len(vectorizer.vocabulary_)

    def fit_transform(self, X, y=None):
        """:meth:`fit` then :meth:`transform`, reading the dicts once."""
        self._validate_params()
        items, offsets = self._items(X)
        self._fit_items(items)
        return self._stack(items, offsets)

    def transform(self, X):
        """The feature matrices of the sentences.

        Parameters
        ----------
        X : list of list of dict

        Returns
        -------
        Xt : StackedSentences
            One ``(n_tokens, n_features_out_)`` CSR matrix per sentence, held
            stacked (see :class:`sklstruct.chain.StackedSentences`).
        """
        check_is_fitted(self, "vectorizer_")
        return self._stack(*self._items(X))

    def _stack(self, items, offsets):
        matrix = sp.csr_matrix(self.vectorizer_.transform(items), dtype=np.float64)
        matrix.eliminate_zeros()
        matrix.sort_indices()
        return StackedSentences(matrix, offsets)

    def get_feature_names_out(self, input_features=None):
        """Attribute names of the output columns (CRFsuite's attribute names)."""
        check_is_fitted(self, "vectorizer_")
        return self.vectorizer_.get_feature_names_out().astype(object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.dict = True
        tags.input_tags.two_d_array = False
        return tags


# ---------------------------------------------------------------------------
# A scikit-learn transformer applied to every token
# ---------------------------------------------------------------------------

class TokenTransformer(_SentencesOut, TransformerMixin, BaseEstimator):
    """Apply a scikit-learn transformer to the feature vector of every token.

    Sentences are lists of per-token feature matrices; this fits
    ``transformer`` on all training tokens at once (rows of the stacked
    matrix) and maps every token of every sentence through it, keeping the
    sentences.  Its main use is an explicit kernel approximation in front of
    a linear tagger, for example
    ``TokenTransformer(Nystroem(kernel="poly", degree=2, coef0=1, gamma=1,
    n_components=2000))`` or ``PolynomialCountSketch``, followed by
    ``M3NSGDTagger(kernel="linear")``: training and prediction then cost what
    the linear model costs, whatever the number of support tokens, at the
    price of an approximate kernel (see :class:`~sklstruct.M3NSGDTagger`).
    Dense outputs are stored as CSR matrices.

    Parameters
    ----------
    transformer : estimator with ``fit`` and ``transform``
        Cloned before fitting; it receives a sparse (n_tokens, n_features)
        matrix.

    Attributes
    ----------
    transformer_ : the fitted clone
    n_features_in_ : int
    """

    def __init__(self, transformer):
        self.transformer = transformer

    def fit(self, X, y=None):
        """Fit the transformer on the tokens of all sentences of ``X``."""
        if not (hasattr(self.transformer, "fit") and hasattr(self.transformer, "transform")):
            raise TypeError("transformer: expected an estimator with fit and transform; got "
                            f"{type(self.transformer).__name__}")
        data = as_stacked(X)
        self.transformer_ = clone(self.transformer).fit(data.matrix)
        self.n_features_in_ = data.n_features
        return self

    def transform(self, X):
        """The sentences of ``X`` with every token mapped by the transformer.

        Returns
        -------
        Xt : StackedSentences
        """
        check_is_fitted(self)
        data = as_stacked(X, self.n_features_in_)
        Z = self.transformer_.transform(data.matrix)
        Z = sp.csr_matrix(Z, dtype=np.float64)
        return StackedSentences(Z, data.offsets, data.keys)
