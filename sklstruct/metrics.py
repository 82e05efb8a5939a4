"""Chunk-level evaluation reproducing the CoNLL ``conlleval`` script.

The functions in this module give the same numbers as the ``conlleval`` Perl
script of the CoNLL-2000 shared task (version 2004-01-26, default mode, i.e.
without ``-r``), and :func:`format_conlleval` prints them in the same layout.

Data contract
-------------
``y_true`` and ``y_pred`` are sequences of sentences; each sentence is a
sequence (list, tuple or 1-D numpy array) of string labels such as ``'B-NP'``,
``'I-NP'`` or ``'O'``. The evaluation behaves exactly like ``conlleval`` run on
a file holding the tokens of the sentences, one per line, with one empty line
*between* consecutive sentences (and none after the last one, whose open chunk
is closed by conlleval's final ``if ($inCorrect)``). For the usual tag sets
(IOB1, IOB2, IOE with ``B``/``I``/``E``/``O``) a trailing empty line would give
the same result.

conlleval's rules, reproduced here
----------------------------------
* A label is split on its first hyphen (``/^([^-]*)-(.*)$/``) into a prefix
  and a chunk type; a label without a hyphen is all prefix, with type ``''``.
  As in Perl, where the string ``"0"`` is false, a type ``'0'`` becomes ``''``.
* A sentence boundary is processed like a token tagged ``O`` (type ``''``) in
  both columns, but it is not counted as a token.
* Chunk starts and ends are decided by conlleval's ``startOfChunk`` and
  ``endOfChunk`` functions, so IOB1 (``I-`` may start a chunk) and IOB2 files
  are handled by the same rules, as are the ``E``, ``[``, ``]`` and ``.`` tags.
  conlleval has no rule for ``S`` (IOBES): like any other unknown prefix, it
  starts a chunk only where the type changes.
* A predicted chunk is correct when it starts and ends at the same tokens as a
  true chunk and has the same type (conlleval's ``inCorrect`` state machine).
* Token accuracy counts tokens whose prefix and type are both right.
* Precision is ``correct / predicted``, recall ``correct / true``, F1
  ``2PR / (P + R)``; each is 0 when its denominator is 0.

Strict schemes
--------------
With ``scheme`` in {"IOB1", "IOB2", "IOBES", "BILOU"} the chunk functions
follow seqeval's ``mode="strict"`` instead: a label's first character is its
prefix (it must be one the scheme allows, ``O`` included) and the rest, less
hyphens, its type; a chunk exists only where the scheme's rules build one
(see :data:`SCHEMES`, from :mod:`sklstruct._schemes`), so a chunk that the
scheme cannot have produced (an IOB2 ``I-`` without a ``B-``, an IOBES ``B-``
never closed by ``E-``) counts neither as true nor as predicted, and
``S-PER S-PER`` is two chunks, not conlleval's one.  A predicted chunk is
correct when a true chunk has the same type and span.  Token accuracy
compares whole labels.
"""

from collections import Counter
from dataclasses import dataclass
from itertools import chain
from typing import Dict, NamedTuple

import numpy as np
from sklearn.metrics import make_scorer

from ._schemes import SCHEMES
from ._validation import check_sentence, check_sentence_list

__all__ = [
    "TypeScores",
    "ChunkReport",
    "chunk_report",
    "format_conlleval",
    "chunk_precision_recall_fscore",
    "chunk_precision_score",
    "chunk_recall_score",
    "chunk_f1_score",
    "token_accuracy_score",
    "chunk_f1_scorer",
    "chunk_precision_scorer",
    "chunk_recall_scorer",
    "token_accuracy_scorer",
    "get_scorer",
    "SCHEMES",
    "chunk_counts_per_sentence",
    "expected_calibration_error",
]


class TypeScores(NamedTuple):
    """Scores of one chunk type, as in one per-type line of conlleval.

    Attributes
    ----------
    precision, recall, f1 : float
        Fractions in [0, 1] (conlleval prints them as percentages).
    n_pred_chunks : int
        Number of predicted chunks of this type (the count conlleval prints
        at the end of the line).
    n_true_chunks : int
        Number of true chunks of this type.
    n_correct_chunks : int
        Number of correctly predicted chunks of this type.
    """

    precision: float
    recall: float
    f1: float
    n_pred_chunks: int
    n_true_chunks: int
    n_correct_chunks: int


@dataclass(frozen=True)
class ChunkReport:
    """Result of :func:`chunk_report`, the numbers conlleval prints.

    ``str(report)`` gives conlleval's output text (see
    :func:`format_conlleval`).

    Attributes
    ----------
    precision, recall, f1 : float
        Overall chunk precision, recall and F1, fractions in [0, 1].
    accuracy : float
        Token accuracy, a fraction in [0, 1].
    n_tokens : int
        Number of tokens (sentence boundaries not counted).
    n_correct_tokens : int
        Number of tokens whose tag (prefix and type) is right.
    n_true_chunks, n_pred_chunks, n_correct_chunks : int
        conlleval's ``foundCorrect``, ``foundGuessed`` and ``correctChunk``.
    per_type : dict of str to TypeScores
        Scores per chunk type, sorted by type name.
    """

    precision: float
    recall: float
    f1: float
    accuracy: float
    n_tokens: int
    n_correct_tokens: int
    n_true_chunks: int
    n_pred_chunks: int
    n_correct_chunks: int
    per_type: Dict[str, TypeScores]

    def __str__(self):
        return format_conlleval(self)


# --------------------------------------------------------------------------
# Input validation
# --------------------------------------------------------------------------

def _as_sentences(y, name):
    """Return ``y`` as a list of label sequences (lists or 1-D arrays)."""
    sentences = check_sentence_list(y, name, "label sequences", item_ndim=1, allow_empty=True,
                                    sized=False)
    return [s if isinstance(s, np.ndarray) and s.ndim == 1
            else check_sentence(s, f"{name}[{i}]", "labels", allow_empty=True)
            for i, s in enumerate(sentences)]


def _check_sentences(y_true, y_pred):
    """Validate a pair of inputs; return them as lists of sentences."""
    y_true = _as_sentences(y_true, "y_true")
    y_pred = _as_sentences(y_pred, "y_pred")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_pred: has {len(y_pred)} sentences but y_true has {len(y_true)}"
        )
    if not y_true:
        raise ValueError("y_true and y_pred are empty: there is nothing to evaluate")
    n_tokens = 0
    for i, (true_sent, pred_sent) in enumerate(zip(y_true, y_pred)):
        if len(true_sent) != len(pred_sent):
            raise ValueError(
                f"y_pred[{i}]: has {len(pred_sent)} labels but y_true[{i}] has "
                f"{len(true_sent)}"
            )
        n_tokens += len(true_sent)
    if n_tokens == 0:
        raise ValueError("y_true and y_pred contain no tokens: all sentences are empty")
    return y_true, y_pred


# --------------------------------------------------------------------------
# conlleval core
# --------------------------------------------------------------------------

def _split_tag(label):
    """Split a label into (prefix, type) like conlleval."""
    # conlleval: /^([^-]*)-(.*)$/, i.e. split on the first hyphen; without a
    # hyphen the whole label is the prefix and the type is "".
    prefix, hyphen, chunk_type = str(label).partition("-")
    # conlleval then does `$type = $type ? $type : ""`; "0" is false in Perl.
    if not hyphen or chunk_type == "0":
        chunk_type = ""
    return prefix, chunk_type


def _end_of_chunk(prev_tag, tag, prev_type, chunk_type):
    """conlleval's ``endOfChunk``: did a chunk end before the current token?"""
    return (
        (prev_tag in ("B", "I") and tag in ("B", "O"))
        or (prev_tag == "E" and tag in ("E", "I", "O"))
        or (prev_tag not in ("O", ".") and prev_type != chunk_type)
        # "[" and "]" chunks are assumed to have length 1
        or prev_tag in ("[", "]")
    )


def _start_of_chunk(prev_tag, tag, prev_type, chunk_type):
    """conlleval's ``startOfChunk``: does a chunk start at the current token?"""
    return (
        (prev_tag in ("B", "I", "O") and tag == "B")
        or (prev_tag == "O" and tag in ("I", "E"))
        or (prev_tag == "E" and tag in ("E", "I"))
        or (tag not in ("O", ".") and prev_type != chunk_type)
        or tag in ("[", "]")
    )


# The two functions above compare prefixes only with these literals, and types
# only with each other. So they are tabulated once, indexed by
# [previous prefix class, prefix class, type changed], any other prefix
# behaving like "?", and chunk_report evaluates them for all tokens with numpy.
_PREFIXES = ("O", "B", "I", "E", ".", "[", "]", "?")
_PREFIX_CLASS = {prefix: i for i, prefix in enumerate(_PREFIXES)}
_END_TABLE, _START_TABLE = (
    np.array(
        [
            [[rule(prev, cur, "T", "T"), rule(prev, cur, "T", "U")] for cur in _PREFIXES]
            for prev in _PREFIXES
        ]
    )
    for rule in (_end_of_chunk, _start_of_chunk)
)

_BOUNDARY = object()  # marks a sentence boundary among the flattened labels


def _flatten(sentences, boundary=None):
    """Concatenate sentences into one list, optionally separated by ``boundary``."""
    flat = []
    for i, sentence in enumerate(sentences):
        if boundary is not None and i > 0:
            flat.append(boundary)
        flat.extend(sentence.tolist() if isinstance(sentence, np.ndarray) else sentence)
    return flat


def _encode_lines(y_true, y_pred):
    """Encode the lines conlleval would read for these sentences.

    Returns a dict of integer arrays, one entry per line, where line 0 is a
    virtual line before the data with tag ``O`` and type ``''`` (conlleval's
    initial "previous" tags) and a sentence boundary is a line tagged ``O``
    in both columns. For the correct (``_c``) and guessed (``_g``) column:
    ``tag`` identifies the (prefix, type) pair, ``type`` the type and
    ``prefix`` the prefix class; ``is_token`` is False for the virtual line
    and the boundaries. Also returns the list of type names by type id.
    """
    flat = {"c": _flatten(y_true, _BOUNDARY), "g": _flatten(y_pred, _BOUNDARY)}
    # label -> index, with the boundary as index 0
    index = dict.fromkeys(chain([_BOUNDARY], flat["c"], flat["g"]))
    tag_ids, type_ids = {}, {}
    tag_of, type_of, prefix_of = [], [], []
    for i, label in enumerate(index):
        prefix, chunk_type = ("O", "") if label is _BOUNDARY else _split_tag(label)
        tag_of.append(tag_ids.setdefault((prefix, chunk_type), len(tag_ids)))
        type_of.append(type_ids.setdefault(chunk_type, len(type_ids)))
        prefix_of.append(_PREFIX_CLASS.get(prefix, len(_PREFIXES) - 1))
        index[label] = i
    tag_of, type_of, prefix_of = np.array(tag_of), np.array(type_of), np.array(prefix_of)

    lines = {}
    for col in ("c", "g"):
        ids = np.fromiter(
            chain([0], map(index.__getitem__, flat[col])), np.intp, len(flat[col]) + 1
        )
        lines["tag_" + col] = tag_of[ids]
        lines["type_" + col] = type_of[ids]
        lines["prefix_" + col] = prefix_of[ids]
        if col == "c":
            lines["is_token"] = ids != 0  # boundaries are at the same lines in both
    return lines, list(type_ids)


def _prf(n_correct, n_pred, n_true):
    precision = n_correct / n_pred if n_pred > 0 else 0.0
    recall = n_correct / n_true if n_true > 0 else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def _conlleval_chunks(y_true, y_pred):
    """conlleval's chunks of validated sentences: the encoded lines, the type
    names, ``starts[col][i]`` (a chunk starts at line i + 1) and the lines at
    which correct chunks end (``closing``)."""
    lines, type_names = _encode_lines(y_true, y_pred)
    type_c, type_g = lines["type_c"], lines["type_g"]

    # endOfChunk / startOfChunk between each line and the previous one
    # (element i is about line i + 1), for both columns
    ends, starts = {}, {}
    for col in ("c", "g"):
        prefix, types = lines["prefix_" + col], lines["type_" + col]
        key = (prefix[:-1], prefix[1:], (types[:-1] != types[1:]).astype(int))
        ends[col], starts[col] = _END_TABLE[key], _START_TABLE[key]
    same_type = type_c[1:] == type_g[1:]
    same_last_type = type_c[:-1] == type_g[:-1]

    # conlleval's inCorrect state machine; `closing` collects the lines at
    # which a correct chunk ends (its type is the previous line's type)
    in_correct = False
    closing = []
    for i, end_c, end_g, start_c, start_g, same, same_last in zip(
        range(1, len(type_c)),
        ends["c"].tolist(), ends["g"].tolist(),
        starts["c"].tolist(), starts["g"].tolist(),
        same_type.tolist(), same_last_type.tolist(),
    ):
        if in_correct:
            if end_c and end_g and same_last:
                in_correct = False
                closing.append(i - 1)
            elif end_c != end_g or not same:
                in_correct = False
        if start_c and start_g and same:
            in_correct = True
    if in_correct:  # conlleval's final `if ($inCorrect)`: closed by the end of data
        closing.append(len(type_c) - 1)
    return lines, type_names, starts, np.array(closing, dtype=np.intp)


def chunk_report(y_true, y_pred, *, scheme=None):
    """Evaluate chunks and tags exactly like the CoNLL ``conlleval`` script.

    Reproduces conlleval (default mode): labels are split on the first hyphen
    into prefix and type, chunk boundaries follow conlleval's ``startOfChunk``
    and ``endOfChunk`` rules (IOB1, IOB2, ``E``, ``[``, ``]``, ``.`` tags),
    sentence boundaries behave like an ``O`` token that is not counted, and a
    predicted chunk is correct only if its start, end and type all match.

    Parameters
    ----------
    y_true : sequence of sequences of str
        True labels, one sequence per sentence.
    y_pred : sequence of sequences of str
        Predicted labels, same shape as ``y_true``.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None
        None: conlleval's rules.  A scheme: seqeval's strict mode for it
        (see the module notes), which every IOBES or BILOU tagging needs.

    Returns
    -------
    report : ChunkReport
        Overall precision, recall, F1 and token accuracy (fractions), the
        chunk and token counts, and ``per_type`` scores. ``str(report)`` is
        conlleval's output text.

    Raises
    ------
    ValueError
        If the inputs are empty, are not lists of sentences, or differ in
        their number of sentences or in the length of a sentence.

    Examples
    --------
    >>> r = chunk_report([["B-NP", "I-NP", "O"]], [["B-NP", "O", "O"]])
    >>> r.n_true_chunks, r.n_pred_chunks, r.n_correct_chunks
    (1, 1, 0)
    """
    scheme = _check_scheme(scheme)
    y_true, y_pred = _check_sentences(y_true, y_pred)
    if scheme is not None:
        return _strict_report(y_true, y_pred, scheme)
    lines, type_names, starts, closing = _conlleval_chunks(y_true, y_pred)
    type_c, type_g = lines["type_c"], lines["type_g"]
    n_types = len(type_names)
    correct_chunks = np.bincount(type_c[closing], minlength=n_types)
    true_chunks = np.bincount(type_c[1:][starts["c"]], minlength=n_types)
    pred_chunks = np.bincount(type_g[1:][starts["g"]], minlength=n_types)

    per_type = {}
    for t in sorted(range(n_types), key=type_names.__getitem__):
        if true_chunks[t] or pred_chunks[t]:
            n_correct, n_pred, n_true = (
                int(correct_chunks[t]), int(pred_chunks[t]), int(true_chunks[t])
            )
            per_type[type_names[t]] = TypeScores(
                *_prf(n_correct, n_pred, n_true), n_pred, n_true, n_correct
            )

    is_token = lines["is_token"]
    n_tokens = int(is_token.sum())
    n_correct_tokens = int((lines["tag_c"] == lines["tag_g"])[is_token].sum())
    n_correct, n_pred, n_true = (
        int(correct_chunks.sum()), int(pred_chunks.sum()), int(true_chunks.sum())
    )
    precision, recall, f1 = _prf(n_correct, n_pred, n_true)
    return ChunkReport(
        precision=precision,
        recall=recall,
        f1=f1,
        accuracy=n_correct_tokens / n_tokens,
        n_tokens=n_tokens,
        n_correct_tokens=n_correct_tokens,
        n_true_chunks=n_true,
        n_pred_chunks=n_pred,
        n_correct_chunks=n_correct,
        per_type=per_type,
    )


# --------------------------------------------------------------------------
# Strict schemes (seqeval's mode="strict")
# --------------------------------------------------------------------------

# (the schemes' rules are sklstruct._schemes.SCHEMES, which chain.py's
# allowed transitions read too)

def _matches(rules, prev, cur):
    """Whether (prev, cur), two (prefix, type) pairs, fits one of ``rules``."""
    same = "=" if prev[1] == cur[1] else "!"
    return any((p == "*" or p == prev[0]) and (c == "*" or c == cur[0]) and t in ("*", same)
               for p, c, t in rules)


def _check_scheme(scheme):
    if scheme is None:
        return None
    if not isinstance(scheme, str) or scheme.upper() not in SCHEMES:
        raise ValueError(f"scheme must be None (conlleval) or one of {', '.join(SCHEMES)}; "
                         f"got {scheme!r}")
    return scheme.upper()


def _strict_chunks(sentences, scheme, name):
    """The chunks (type, sentence, start, end) of ``sentences`` under a
    strict scheme, as a set."""
    rules = SCHEMES[scheme]
    allowed = set(rules.prefixes) | {"O"}
    outside = ("O", "_")
    chunks = set()
    for s, sentence in enumerate(sentences):
        tokens = []
        for t, label in enumerate(sentence.tolist() if isinstance(sentence, np.ndarray)
                                  else sentence):
            label = str(label)
            if label[:1] not in allowed:
                raise ValueError(f"{name}[{s}][{t}]: label {label!r} has no {scheme} prefix "
                                 f"(one of {', '.join(sorted(allowed))} first)")
            tokens.append((label[0], label[1:].strip("-") or "_"))
        tokens.append(outside)
        i, prev = 0, outside
        while i < len(tokens):
            if _matches(rules.start, prev, tokens[i]):
                j = i + 1
                while _matches(rules.inside, tokens[j - 1], tokens[j]):
                    j += 1          # (the final O is never inside, so j stays in range)
                if _matches(rules.end, tokens[j - 1], tokens[j]):
                    chunks.add((tokens[i][1], s, i, j))
                i = j
            else:
                i += 1
            prev = tokens[i - 1]
    return chunks


def _strict_report(y_true, y_pred, scheme):
    true = _strict_chunks(y_true, scheme, "y_true")
    pred = _strict_chunks(y_pred, scheme, "y_pred")
    correct = true & pred
    n_correct, n_pred, n_true = (Counter(c[0] for c in group) for group in (correct, pred, true))
    per_type = {name: TypeScores(*_prf(n_correct[name], n_pred[name], n_true[name]),
                                 n_pred[name], n_true[name], n_correct[name])
                for name in sorted(n_pred | n_true)}
    flat_true, flat_pred = _flatten(y_true), _flatten(y_pred)
    n_correct_tokens = sum(str(a) == str(b) for a, b in zip(flat_true, flat_pred))
    return ChunkReport(*_prf(len(correct), len(pred), len(true)),
                       accuracy=n_correct_tokens / len(flat_true), n_tokens=len(flat_true),
                       n_correct_tokens=n_correct_tokens, n_true_chunks=len(true),
                       n_pred_chunks=len(pred), n_correct_chunks=len(correct),
                       per_type=per_type)


def chunk_counts_per_sentence(y_true, y_pred, *, scheme=None):
    """Correct, predicted and true chunks of each sentence.

    The counts :func:`chunk_report` sums (conlleval's rules, or the strict
    ``scheme``), kept per sentence: what the significance tests of
    :mod:`sklstruct.stats` resample.

    Parameters
    ----------
    y_true, y_pred : sequence of sequences of str
        True and predicted labels, one sequence per sentence.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None

    Returns
    -------
    counts : ndarray of shape (n_sentences, 3)
        Columns: correct, predicted and true chunks.
    """
    scheme = _check_scheme(scheme)
    y_true, y_pred = _check_sentences(y_true, y_pred)
    n = len(y_true)
    if scheme is not None:
        true = _strict_chunks(y_true, scheme, "y_true")
        pred = _strict_chunks(y_pred, scheme, "y_pred")
        return np.stack([np.bincount([c[1] for c in group], minlength=n)
                         for group in (true & pred, pred, true)], axis=1)
    lines, _, starts, closing = _conlleval_chunks(y_true, y_pred)
    sentence = np.cumsum(~lines["is_token"]) - 1       # of each line (boundaries: the next)
    return np.stack([np.bincount(sentence[closing], minlength=n),
                     np.bincount(sentence[1:][starts["g"]], minlength=n),
                     np.bincount(sentence[1:][starts["c"]], minlength=n)], axis=1)


def _percent(numerator, denominator):
    # conlleval computes 100*a/b in this order; keep it to print the same digits
    return 100 * numerator / denominator if denominator > 0 else 0.0


def _fb1(precision, recall):
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def format_conlleval(report):
    """Format a :class:`ChunkReport` exactly as conlleval prints it.

    Reproduces conlleval's default output: a summary line with the counts, an
    overall line (``%6.2f%%`` percentages, ``FB1: %6.2f``) and one line per
    chunk type in sorted order (type right-aligned with ``%17s``, followed by
    the number of predicted chunks of that type). The numbers are recomputed
    from the counts in conlleval's order of operations, so the rounding of
    the printed digits is the same.

    Parameters
    ----------
    report : ChunkReport
        The result of :func:`chunk_report`.

    Returns
    -------
    text : str
        conlleval's output, each line ending with a newline.

    Examples
    --------
    >>> print(format_conlleval(chunk_report([["B-NP", "O"]], [["B-NP", "O"]])), end="")
    processed 2 tokens with 1 phrases; found: 1 phrases; correct: 1.
    accuracy: 100.00%; precision: 100.00%; recall: 100.00%; FB1: 100.00
                   NP: precision: 100.00%; recall: 100.00%; FB1: 100.00  1
    """
    r = report
    precision = _percent(r.n_correct_chunks, r.n_pred_chunks)
    recall = _percent(r.n_correct_chunks, r.n_true_chunks)
    lines = [
        f"processed {r.n_tokens} tokens with {r.n_true_chunks} phrases; "
        f"found: {r.n_pred_chunks} phrases; correct: {r.n_correct_chunks}.\n"
    ]
    if r.n_tokens > 0:
        lines.append(
            "accuracy: %6.2f%%; precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f\n"
            % (
                _percent(r.n_correct_tokens, r.n_tokens),
                precision,
                recall,
                _fb1(precision, recall),
            )
        )
    # conlleval sorts the keys of its true and predicted counts together and
    # drops a repeated name unless the previous one is false in Perl, so an
    # empty type present on both sides is listed twice; keep that.
    names = sorted(
        [t for t, s in r.per_type.items() if s.n_true_chunks]
        + [t for t, s in r.per_type.items() if s.n_pred_chunks]
    )
    last = None
    for name in names:
        if not last or last != name:
            s = r.per_type[name]
            precision = _percent(s.n_correct_chunks, s.n_pred_chunks)
            recall = _percent(s.n_correct_chunks, s.n_true_chunks)
            # Perl's %17s pads to 17 bytes (it reads its input as bytes)
            padding = " " * max(0, 17 - len(name.encode("utf-8")))
            lines.append(
                "%s%s: precision: %6.2f%%; recall: %6.2f%%; FB1: %6.2f  %d\n"
                % (padding, name, precision, recall, _fb1(precision, recall),
                   s.n_pred_chunks)
            )
        last = name
    return "".join(lines)


def chunk_precision_recall_fscore(y_true, y_pred, *, scheme=None):
    """Overall chunk precision, recall and F1, as computed by conlleval.

    Reproduces conlleval's overall ``precision``, ``recall`` and ``FB1``
    (as fractions instead of percentages); see :func:`chunk_report`.

    Parameters
    ----------
    y_true : sequence of sequences of str
        True labels, one sequence per sentence.
    y_pred : sequence of sequences of str
        Predicted labels, same shape as ``y_true``.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None
        conlleval's rules, or seqeval's strict mode for the scheme.

    Returns
    -------
    precision, recall, f1 : float
        Fractions in [0, 1]; each is 0 when its denominator is 0.
    """
    report = chunk_report(y_true, y_pred, scheme=scheme)
    return report.precision, report.recall, report.f1


def chunk_precision_score(y_true, y_pred, *, scheme=None):
    """Overall chunk precision, as computed by conlleval.

    Reproduces conlleval's ``precision`` (correct chunks / predicted chunks,
    0 if nothing is predicted) as a fraction; see :func:`chunk_report`.

    Parameters
    ----------
    y_true : sequence of sequences of str
        True labels, one sequence per sentence.
    y_pred : sequence of sequences of str
        Predicted labels, same shape as ``y_true``.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None
        conlleval's rules, or seqeval's strict mode for the scheme.

    Returns
    -------
    precision : float
    """
    return chunk_report(y_true, y_pred, scheme=scheme).precision


def chunk_recall_score(y_true, y_pred, *, scheme=None):
    """Overall chunk recall, as computed by conlleval.

    Reproduces conlleval's ``recall`` (correct chunks / true chunks, 0 if
    there are no true chunks) as a fraction; see :func:`chunk_report`.

    Parameters
    ----------
    y_true : sequence of sequences of str
        True labels, one sequence per sentence.
    y_pred : sequence of sequences of str
        Predicted labels, same shape as ``y_true``.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None
        conlleval's rules, or seqeval's strict mode for the scheme.

    Returns
    -------
    recall : float
    """
    return chunk_report(y_true, y_pred, scheme=scheme).recall


def chunk_f1_score(y_true, y_pred, *, scheme=None):
    """Overall chunk F1, as computed by conlleval.

    Reproduces conlleval's ``FB1`` (``2PR / (P + R)``, 0 if ``P + R`` is 0)
    as a fraction; see :func:`chunk_report`.

    Parameters
    ----------
    y_true : sequence of sequences of str
        True labels, one sequence per sentence.
    y_pred : sequence of sequences of str
        Predicted labels, same shape as ``y_true``.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None
        conlleval's rules, or seqeval's strict mode for the scheme.

    Returns
    -------
    f1 : float

    Examples
    --------
    >>> chunk_f1_score([["B-NP", "I-NP", "O", "B-VP"]], [["B-NP", "I-NP", "O", "O"]])
    0.6666666666666666
    """
    return chunk_report(y_true, y_pred, scheme=scheme).f1


def token_accuracy_score(y_true, y_pred):
    """Fraction of tokens whose predicted label equals the true label.

    For string labels this reproduces conlleval's ``accuracy`` (sentence
    boundaries are not tokens). It works for any hashable labels (ints, ...),
    comparing them with ``==``. (conlleval compares the split prefix and
    type, so labels such as ``'B'`` and ``'B-'`` that it cannot tell apart
    are equal in :func:`chunk_report`'s accuracy but not here.)

    Parameters
    ----------
    y_true : sequence of sequences
        True labels, one sequence per sentence.
    y_pred : sequence of sequences
        Predicted labels, same shape as ``y_true``.

    Returns
    -------
    accuracy : float
    """
    y_true, y_pred = _check_sentences(y_true, y_pred)
    flat_true, flat_pred = _flatten(y_true), _flatten(y_pred)
    # object arrays: any label type, compared with ==, and tuple labels stay scalars
    true = np.fromiter(flat_true, dtype=object, count=len(flat_true))
    pred = np.fromiter(flat_pred, dtype=object, count=len(flat_pred))
    return float(np.mean(true == pred))


def expected_calibration_error(correct, confidence, *, n_bins=15):
    """Expected calibration error of confidence scores.

    The mean gap between confidence and accuracy over equal-width bins of
    confidence, weighted by the bins' sizes (Guo et al. 2017, eq. 3; Naeini
    et al. 2015)::

        ECE = sum_b |B_b| / n * |accuracy(B_b) - mean confidence(B_b)|

    Parameters
    ----------
    correct : array-like of shape (n,)
        Whether each prediction was right (bool or 0/1): a token's label, a
        sentence's whole sequence.
    confidence : array-like of shape (n,)
        The probability the model gave each prediction, in [0, 1] (for
        example the marginal of the predicted label from a tagger's
        ``predict_marginals``, or ``predict_confidence``).
    n_bins : int, default=15
        Bins of width 1 / n_bins, closed on the right (a confidence of
        exactly 0.5 falls in the bin that ends at 0.5), the first one closed
        on both sides.

    Returns
    -------
    ece : float
        In [0, 1]; 0 for a perfectly calibrated model.

    See Also
    --------
    sklearn.calibration.calibration_curve : the points of the reliability
        diagram (accuracy and mean confidence of the non-empty bins).
    """
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, (int, np.integer)) \
            or not 1 <= n_bins <= 10**6:
        raise ValueError(f"n_bins: must be an integer in [1, 10**6]; got {n_bins!r}")
    arrays = []
    for name, values in (("correct", correct), ("confidence", confidence)):
        try:
            values = np.asarray(values, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: must be an array of numbers (or booleans)") from None
        if values.ndim != 1:
            raise ValueError(f"{name}: must be 1-D; got shape {values.shape}")
        arrays.append(values)
    correct, confidence = arrays
    if correct.shape != confidence.shape:
        raise ValueError(f"correct and confidence differ in length: {correct.shape[0]} != "
                         f"{confidence.shape[0]}")
    if correct.size == 0:
        raise ValueError("correct: no predictions to evaluate")
    if not np.isin(correct, (0.0, 1.0)).all():
        raise ValueError("correct: must hold booleans (or 0 and 1)")
    # sums of probabilities may pass 1 by a rounding error
    if not (np.isfinite(confidence).all() and confidence.min() >= -1e-9
            and confidence.max() <= 1 + 1e-9):
        raise ValueError("confidence: must lie in [0, 1]")
    confidence = np.clip(confidence, 0.0, 1.0)
    # bins (m - 1) / M < p <= m / M (the first one closed), as sklearn's
    # calibration_curve and Guo et al. define them
    b = np.searchsorted(np.linspace(0.0, 1.0, n_bins + 1)[1:-1], confidence)
    gap = np.bincount(b, weights=correct - confidence, minlength=n_bins)
    return float(np.abs(gap).sum() / correct.size)


# --------------------------------------------------------------------------
# scikit-learn scorers
# --------------------------------------------------------------------------

#: Scorer for ``GridSearchCV(scoring=...)``: conlleval chunk F1.
chunk_f1_scorer = make_scorer(chunk_f1_score)
#: Scorer for ``GridSearchCV(scoring=...)``: conlleval chunk precision.
chunk_precision_scorer = make_scorer(chunk_precision_score)
#: Scorer for ``GridSearchCV(scoring=...)``: conlleval chunk recall.
chunk_recall_scorer = make_scorer(chunk_recall_score)
#: Scorer for ``GridSearchCV(scoring=...)``: token accuracy.
token_accuracy_scorer = make_scorer(token_accuracy_score)

_SCORE_FUNCS = {"chunk_f1": chunk_f1_score, "chunk_precision": chunk_precision_score,
                "chunk_recall": chunk_recall_score}
_SCORERS = {
    "chunk_f1": chunk_f1_scorer,
    "chunk_precision": chunk_precision_scorer,
    "chunk_recall": chunk_recall_scorer,
    "token_accuracy": token_accuracy_scorer,
}


def get_scorer(name, scheme=None):
    """Return a scikit-learn scorer by name.

    The chunk scorers reproduce conlleval's overall scores (see
    :func:`chunk_report`), or with ``scheme`` seqeval's strict mode; they
    expect ``estimator.predict(X)`` to return one label sequence per
    sentence (e.g. a list of 1-D arrays).

    Parameters
    ----------
    name : {'chunk_f1', 'chunk_precision', 'chunk_recall', 'token_accuracy'}
        Name of the scorer.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU"}, default=None
        For the chunk scorers: conlleval's rules, or the strict scheme.

    Returns
    -------
    scorer : callable
        A scorer made with :func:`sklearn.metrics.make_scorer`, usable as
        ``scoring=`` in ``GridSearchCV`` or ``cross_val_score``.

    Raises
    ------
    ValueError
        If ``name`` is not one of the names above.
    """
    try:
        scorer = _SCORERS[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown scorer {name!r}; valid names are: {', '.join(_SCORERS)}"
        ) from None
    if scheme is None or name == "token_accuracy":
        return scorer
    return make_scorer(_SCORE_FUNCS[name], scheme=_check_scheme(scheme))
