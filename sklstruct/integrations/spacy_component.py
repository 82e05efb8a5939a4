"""spaCy pipeline components that run a fitted sklstruct model.

Two factories, registered with spaCy when this module is imported (and,
for an installed sklstruct, through the ``spacy_factories`` entry points, so
that ``nlp.add_pipe("sklstruct_ner")`` and ``spacy.load`` find them without
an import):

* ``"sklstruct_ner"`` (:func:`make_ner`): chunk labels (IOB1, IOB2, IOBES or
  BILOU) to ``doc.ents``, read by the scheme's rules (those of
  :mod:`sklstruct.metrics`' strict mode);
* ``"sklstruct_tagger"`` (:func:`make_tagger`): one label per token to a
  token attribute: ``tag_``, ``pos_``, ``lemma_``, ``norm_`` or a custom
  extension ``_.name``.

The model is a fitted scikit-learn pipeline of a sklstruct vectorizer and a
tagger (``make_pipeline(feature_set("ner"), CRFTagger())``), saved to a file.
Each token becomes the tuple of the component's ``columns`` (token attributes,
``["text"]`` by default: the ``(word,)`` tokens of a two-column CoNLL file;
``["text", "tag_"]`` the ``(word, POS)`` tokens of a three-column one), which
must be the columns the model was trained on.  ``nlp.pipe`` sends each batch
of documents to one ``predict`` call, and ``nlp.to_disk`` writes the model
file into the component's directory, beside spaCy's ``config.cfg``.

See :ref:`spacy` in the user guide.
"""
import tempfile
from operator import attrgetter
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator

try:
    from spacy.attrs import LEMMA, NORM, POS, TAG
    from spacy.language import Language
    from spacy.parts_of_speech import IDS as _UPOS_IDS
    from spacy.pipeline import Pipe
    from spacy.scorer import Scorer, get_ner_prf
    from spacy.tokens import Span, Token
    from spacy.util import ensure_path, minibatch
except ImportError as exc:        # pragma: no cover - spaCy is an optional extra
    raise ImportError("sklstruct's spaCy components need spaCy 3.5 or later: "
                      "pip install 'sklstruct[spacy]' (or pip install spacy)") from exc

from .._schemes import SCHEMES
from .._validation import describe
from ..features._templates import _parse_templates
from ..metrics import _strict_chunks
from ..serialization import load_model, save_model

__all__ = ["SklstructNER", "SklstructTagger", "make_ner", "make_tagger", "MODEL_FILE"]

#: The name of the model file that ``to_disk`` writes into the component's
#: directory (and ``from_disk`` reads).
MODEL_FILE = "model.sklstruct"

#: Token attributes the tagger sets in one ``Doc.from_array`` call.
_ARRAY_ATTRS = {"tag_": TAG, "pos_": POS, "lemma_": LEMMA, "norm_": NORM}
#: Other names of the chunk schemes.
_SCHEME_ALIASES = {"BIO": "IOB2", "IOB": "IOB2", "BIOES": "IOBES", "BILUO": "BILOU"}


# -- model files -----------------------------------------------------------------

def _read_model(path):
    """The estimator stored in the model file ``path`` (pickle-free)."""
    return load_model(path)


def _write_model(model, path):
    """Store ``model`` in the model file ``path``."""
    save_model(model, path)


# -- what the model reads --------------------------------------------------------

def _estimators_in(obj, seen=None):
    """``obj`` and the estimators nested in it (pipeline steps, a union's
    transformers, fitted sub-estimators), each once."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    for value in getattr(obj, "__dict__", {}).values():
        items = value if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            parts = item if isinstance(item, tuple) else (item,)
            for part in parts:
                if isinstance(part, BaseEstimator):
                    yield from _estimators_in(part, seen)


def _column_index(column):
    """Position in a token tuple of a template's column ('word', 'pos', 'colN')."""
    if column == "word":
        return 0
    if column == "pos":
        return 1
    if column.startswith("col") and column[3:].isdigit():
        return int(column[3:])
    raise ValueError(f"the model reads the token key {column[4:]!r} of dict tokens; the "
                     "spaCy components give each token as a tuple of its columns: train "
                     "the model on tuples (word, POS, ...) read with read_conll")


def _columns_read(model):
    """How many token columns the model's vectorizers read, and the columns'
    names (a mapping index -> template column).  TypeError when there is no
    sklstruct vectorizer in the model."""
    read, found = {}, False
    for estimator in _estimators_in(model):
        templates = getattr(estimator, "templates_", None)
        if templates is None or not isinstance(templates, (list, tuple)):
            continue
        found = True
        for _, atoms in _parse_templates(list(templates), 0):
            for kind, arg, _, column, _ in atoms:
                if column is not None and kind != "bias":
                    read.setdefault(_column_index(column), column)
        exact = getattr(estimator, "n_columns_", None)
        if exact is not None:
            read.setdefault(int(exact) - 1, f"col{int(exact) - 1}")
    if not found:
        raise TypeError(
            f"model: {type(model).__name__} has no fitted sklstruct vectorizer; the spaCy "
            "components need a pipeline that turns token sequences into features, such as "
            "make_pipeline(feature_set('ner'), CRFTagger()), fitted and saved")
    return (max(read) + 1 if read else 1), read


# -- the components --------------------------------------------------------------

def _check_columns(columns):
    if isinstance(columns, str) or not isinstance(columns, (list, tuple)) or not columns:
        raise TypeError(f"columns: expected a non-empty list of token attribute names such "
                        f"as ['text', 'tag_']; got {describe(columns)}")
    for column in columns:
        if not isinstance(column, str) or not column:
            raise TypeError(f"columns: every entry must be a token attribute name (str); "
                            f"got {describe(column)}")
        if column.startswith("_."):
            if not Token.has_extension(column[2:]):
                raise ValueError(f"columns: no token extension {column!r} is registered "
                                 f"(Token.set_extension({column[2:]!r}, ...))")
        elif not hasattr(Token, column):
            raise ValueError(f"columns: Token has no attribute {column!r}; use a token "
                             "attribute such as 'text', 'tag_', 'lemma_', 'pos_' or an "
                             "extension '_.name'")
    return list(columns)


class _SklstructPipe(Pipe):
    """What both components share: the model, its columns, batching and
    serialization."""

    def __init__(self, vocab, name, *, model_path=None, columns=("text",), n_jobs=None):
        self.vocab = vocab
        self.name = name
        self.model_path = None if model_path is None else str(model_path)
        self.columns = _check_columns(columns)
        if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int)
                                   or n_jobs == 0):
            raise ValueError(f"n_jobs: expected None, a positive number of threads or -1 "
                             f"(all CPUs); got {describe(n_jobs)}")
        self.n_jobs = n_jobs
        self.estimator = None
        # read now when the file is there (so that a wrong model is refused by
        # add_pipe); otherwise at first use, after from_disk had its chance
        # (spacy.load builds the component from config.cfg, whose path may be
        # gone, before it reads the copy that to_disk stored)
        if self.model_path is not None and Path(self.model_path).is_file():
            self.set_model(_read_model(self.model_path))

    # -- the model --

    def set_model(self, estimator):
        """Use ``estimator``, a fitted pipeline of a sklstruct vectorizer and a
        tagger, after checking its columns and labels.

        Parameters
        ----------
        estimator : estimator
            Fitted; its ``predict`` takes sentences of token tuples.

        Returns
        -------
        self
        """
        if not hasattr(estimator, "predict"):
            raise TypeError(f"model: expected a fitted sklstruct pipeline with a predict "
                            f"method; got {describe(estimator)}")
        n_read, read = _columns_read(estimator)
        if n_read != len(self.columns):
            names = ", ".join(f"{i}: {read.get(i, '(not read)')}" for i in range(n_read))
            raise ValueError(
                f"{self.name}: the model reads {n_read} token column(s) ({names}) but "
                f"columns={self.columns} gives {len(self.columns)}: name one token "
                "attribute per column the model was trained on, in its order (for "
                "(word, POS) tokens: columns=['text', 'tag_'])")
        classes = getattr(estimator, "classes_", None)
        if classes is None:
            raise TypeError(f"model: {type(estimator).__name__} has no classes_: is it "
                            "fitted?")
        self._check_labels([str(c) for c in np.asarray(classes).tolist()])
        if self.n_jobs is not None:
            params = [k for k in estimator.get_params(deep=True)
                      if k == "n_jobs" or k.endswith("__n_jobs")]
            estimator.set_params(**dict.fromkeys(params, self.n_jobs))
        self.estimator = estimator
        return self

    def _check_labels(self, labels):
        """Check the model's labels for this component (ValueError)."""

    def _model(self):
        """The estimator, read from ``model_path`` at first use."""
        if self.estimator is None:
            if self.model_path is None:
                raise ValueError(f"{self.name}: no model: set the component's model_path "
                                 "to a model file (nlp.add_pipe(..., config={'model_path': "
                                 "...})) or load a pipeline saved with nlp.to_disk")
            if not Path(self.model_path).is_file():
                raise FileNotFoundError(
                    f"{self.name}: model file {self.model_path!r} (model_path) not found; "
                    "save a fitted pipeline there (sklstruct.save_model) or load a spaCy "
                    "pipeline saved with nlp.to_disk, which holds a copy")
            self.set_model(_read_model(self.model_path))
        return self.estimator

    @property
    def labels(self):
        """The model's labels (``classes_``) as strings; empty before it is read."""
        if self.estimator is None:
            return ()
        return tuple(str(c) for c in np.asarray(self.estimator.classes_).tolist())

    # -- running it --

    def _tokens(self, doc):
        """The tokens of ``doc`` as tuples of the component's columns."""
        if len(self.columns) == 1:
            return [(value,) for value in map(attrgetter(self.columns[0]), doc)]
        tokens = list(map(attrgetter(*self.columns), doc))
        if tokens:
            for j in range(1, len(self.columns)):
                if not any(t[j] for t in tokens):
                    raise ValueError(
                        f"{self.name}: column {j} ({self.columns[j]!r}) is empty in every "
                        f"token of the document {doc.text[:40]!r}: put a component that sets "
                        f"it (a tagger, a lemmatizer) before {self.name} in the pipeline")
        return tokens

    def predict(self, docs):
        """The model's labels of each document's tokens, in one ``predict`` call.

        Parameters
        ----------
        docs : list of Doc

        Returns
        -------
        labels : list of ndarray
            One array of labels per document (empty for an empty document).
        """
        model = self._model()
        sentences = [self._tokens(doc) for doc in docs]
        labels = [np.array([], dtype=object) for _ in docs]
        full = [i for i, sentence in enumerate(sentences) if sentence]
        if full:
            for i, predicted in zip(full, model.predict([sentences[i] for i in full])):
                labels[i] = np.asarray(predicted)
        return labels

    def set_annotations(self, docs, labels):          # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, doc):
        """Annotate one document (in place) and return it."""
        error_handler = self.get_error_handler()
        try:
            self.set_annotations([doc], self.predict([doc]))
            return doc
        except Exception as e:
            error_handler(self.name, self, [doc], e)

    def pipe(self, stream, *, batch_size=128):
        """Annotate a stream of documents, ``batch_size`` at a time, each batch
        in one ``predict`` call (``nlp.pipe`` calls this).

        Parameters
        ----------
        stream : iterable of Doc
        batch_size : int, default=128

        Yields
        ------
        doc : Doc
            The documents, annotated, in order.
        """
        error_handler = self.get_error_handler()
        for docs in minibatch(stream, size=batch_size):
            try:
                self.set_annotations(docs, self.predict(docs))
                yield from docs
            except Exception as e:
                error_handler(self.name, self, docs, e)

    def initialize(self, get_examples=None, *, nlp=None, model_path=None):
        """Read the model now (from ``model_path`` if given), so that a wrong
        or missing model file is reported by ``nlp.initialize()``."""
        if model_path is not None:
            self.model_path = str(model_path)
            self.estimator = None
        self._model()

    # -- serialization --

    def to_disk(self, path, *, exclude=()):
        """Write the model file into the directory ``path`` (``nlp.to_disk``
        calls this with the component's directory)."""
        path = ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        _write_model(self._model(), path / MODEL_FILE)

    def from_disk(self, path, *, exclude=()):
        """Read the model file that :meth:`to_disk` wrote into ``path``."""
        file = ensure_path(path) / MODEL_FILE
        if not file.is_file():
            raise FileNotFoundError(f"{self.name}: no model file {MODEL_FILE!r} in {path}; "
                                    "was this directory written by nlp.to_disk?")
        self.set_model(_read_model(file))
        return self

    def to_bytes(self, *, exclude=()):
        """The model file's bytes."""
        with tempfile.TemporaryDirectory() as tmp:
            self.to_disk(tmp)
            return (Path(tmp) / MODEL_FILE).read_bytes()

    def from_bytes(self, data, *, exclude=()):
        """Read the model from :meth:`to_bytes`' output."""
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / MODEL_FILE).write_bytes(data)
            return self.from_disk(tmp)


def _resolve_scheme(scheme, labels):
    """The chunk scheme of ``labels`` (named, or inferred when None);
    ValueError when they are not chunk labels of it."""
    bad = [label for label in labels
           if label != "O" and not (len(label.partition("-")[0]) == 1
                                    and label.partition("-")[2])]
    if bad:
        raise ValueError(
            f"sklstruct_ner: the model's labels {bad[:5]} are not chunk labels ('O', or a "
            "one-letter prefix, '-' and a type, such as 'B-PER'), so they cannot be read "
            "as entities; use the sklstruct_tagger component for other labels")
    prefixes = {label[0] for label in labels if label != "O"}
    if scheme is None:
        types_b = {label[2:] for label in labels if label.startswith("B-")}
        types_i = {label[2:] for label in labels if label.startswith("I-")}
        for name, letters in (("IOB2", "BI"), ("IOBES", "BIES"), ("BILOU", "BILU")):
            if prefixes <= set(letters):
                # an I- type without its B-: only IOB1 starts chunks with I-
                return "IOB1" if name == "IOB2" and types_i - types_b else name
        raise ValueError(f"sklstruct_ner: the model's label prefixes {sorted(prefixes)} fit "
                         f"no chunk scheme ({', '.join(SCHEMES)})")
    if not isinstance(scheme, str):
        raise TypeError(f"scheme: expected None or a scheme name; got {describe(scheme)}")
    name = _SCHEME_ALIASES.get(scheme.upper(), scheme.upper())
    if name not in SCHEMES:
        raise ValueError(f"scheme: unknown chunk scheme {scheme!r}; expected None (inferred "
                         f"from the labels) or one of {', '.join(SCHEMES)}, 'BIO'")
    extra = prefixes - set(SCHEMES[name].prefixes)
    if extra:
        raise ValueError(f"sklstruct_ner: the model's labels have the prefixes "
                         f"{sorted(extra)}, which the scheme {name} does not have (its "
                         f"prefixes: O, {', '.join(SCHEMES[name].prefixes)})")
    return name


class SklstructNER(_SklstructPipe):
    """spaCy component: a sklstruct chunk tagger's entities as ``doc.ents``.

    Made by the ``"sklstruct_ner"`` factory (:func:`make_ner`).  The labels
    of each document are read as chunks by the rules of ``scheme`` (the
    strict mode of :mod:`sklstruct.metrics`: a chunk the scheme cannot have
    produced, such as an IOB2 ``I-PER`` after ``O``, is no entity), and the
    chunks replace ``doc.ents`` (every other token is set outside an entity).

    Parameters
    ----------
    vocab : Vocab
        The pipeline's vocabulary.
    name : str
        The component's name in the pipeline.
    model_path : str or None, default=None
        The model file (a fitted pipeline of a sklstruct vectorizer and a
        tagger, saved with ``sklstruct.save_model``); read when the component
        is made if it exists, else at first use (after ``from_disk``).
    columns : list of str, default=["text"]
        The token attributes that make up a token, in the order of the
        model's columns (``["text", "tag_"]`` for a model of (word, POS)
        tokens); an extension is written ``"_.name"``.
    scheme : {None, "IOB1", "IOB2", "IOBES", "BILOU", "BIO"}, default=None
        The chunk scheme of the labels; None infers it from the model's
        labels (IOB2 for ``B``/``I`` labels, IOB1 when a type has ``I-`` but
        no ``B-``; IOBES; BILOU).
    n_jobs : int or None, default=None
        Threads of the model's ``predict`` (set on every step that has
        ``n_jobs``); None keeps the model's own.

    Attributes
    ----------
    estimator : estimator or None
        The model, once read.
    scheme_ : str or None
        The scheme in use, once the model is read.
    """

    def __init__(self, vocab, name="sklstruct_ner", *, model_path=None, columns=("text",),
                 scheme=None, n_jobs=None):
        self.scheme = scheme
        self.scheme_ = None
        if scheme is not None:
            _resolve_scheme(scheme, [])           # a bad name fails now
        super().__init__(vocab, name, model_path=model_path, columns=columns, n_jobs=n_jobs)

    def _check_labels(self, labels):
        self.scheme_ = _resolve_scheme(self.scheme, labels)

    @property
    def labels(self):
        """The entity types of the model's labels (``PER`` of ``B-PER``), as
        spaCy's entity recognizer lists them; empty before the model is read."""
        if self.estimator is None:
            return ()
        return tuple(sorted({str(c)[2:] for c in np.asarray(self.estimator.classes_).tolist()
                             if str(c) != "O"}))

    def set_annotations(self, docs, labels):
        """Set each document's ``ents`` to the chunks of its labels.

        Parameters
        ----------
        docs : list of Doc
        labels : list of array-like of str
            One label per token of each document (:meth:`predict`).
        """
        spans = [[] for _ in docs]
        chunks = _strict_chunks(labels, self.scheme_, "labels")
        for kind, s, start, end in sorted(chunks, key=lambda c: (c[1], c[2])):
            spans[s].append(Span(docs[s], start, end, label=kind))
        for doc, ents in zip(docs, spans):
            doc.ents = ents

    def score(self, examples, **kwargs):
        """spaCy's entity scores (``ents_p``, ``ents_r``, ``ents_f``,
        ``ents_per_type``) of annotated examples."""
        return get_ner_prf(examples, **kwargs)


class SklstructTagger(_SklstructPipe):
    """spaCy component: a sklstruct tagger's labels as a token attribute.

    Made by the ``"sklstruct_tagger"`` factory (:func:`make_tagger`).

    Parameters
    ----------
    vocab : Vocab
        The pipeline's vocabulary.
    name : str
        The component's name in the pipeline.
    model_path : str or None, default=None
        The model file, as in :class:`SklstructNER`.
    columns : list of str, default=["text"]
        The token attributes that make up a token, as in
        :class:`SklstructNER`.
    attr : str
        Where the labels go (default ``"tag_"``): ``"tag_"``, ``"pos_"``
        (Universal Dependencies tags only), ``"lemma_"``, ``"norm_"`` (each
        set for a whole document in one ``Doc.from_array`` call), or a token
        extension ``"_.name"`` (registered with default None when it does not
        exist yet).
    n_jobs : int or None, default=None
        Threads of the model's ``predict``, as in :class:`SklstructNER`.

    Attributes
    ----------
    estimator : estimator or None
        The model, once read.
    """

    def __init__(self, vocab, name="sklstruct_tagger", *, model_path=None, columns=("text",),
                 attr="tag_", n_jobs=None):
        if not isinstance(attr, str):
            raise TypeError(f"attr: expected a token attribute name; got {describe(attr)}")
        if attr.startswith("_."):
            extension = attr[2:]
            if not extension.isidentifier():
                raise ValueError(f"attr: {attr!r} is not a valid extension name")
            if not Token.has_extension(extension):
                Token.set_extension(extension, default=None)
            _, _, getter, setter = Token.get_extension(extension)
            if getter is not None and setter is None:
                raise ValueError(f"attr: the token extension {attr!r} has a getter and no "
                                 "setter: the component cannot set it")
        elif attr not in _ARRAY_ATTRS:
            raise ValueError(f"attr: expected one of {', '.join(_ARRAY_ATTRS)} or a token "
                             f"extension '_.name'; got {attr!r}")
        self.attr = attr
        super().__init__(vocab, name, model_path=model_path, columns=columns, n_jobs=n_jobs)

    def _check_labels(self, labels):
        if self.attr == "pos_":
            bad = [label for label in labels if not label or label not in _UPOS_IDS]
            if bad:
                raise ValueError(f"{self.name}: attr='pos_' takes Universal Dependencies "
                                 f"tags, and the model's labels {bad[:5]} are not: use "
                                 "attr='tag_' for a corpus's own tags")

    def set_annotations(self, docs, labels):
        """Set each token's ``attr`` to its label.

        Parameters
        ----------
        docs : list of Doc
        labels : list of array-like
            One label per token of each document (:meth:`predict`).
        """
        if self.attr.startswith("_."):
            extension = self.attr[2:]
            for doc, doc_labels in zip(docs, labels):
                for token, label in zip(doc, np.asarray(doc_labels).tolist()):
                    token._.set(extension, str(label))
            return
        lengths = [len(doc_labels) for doc_labels in labels]
        if not sum(lengths):
            return
        flat = np.concatenate([np.asarray(doc_labels).astype(str) for doc_labels in labels])
        names, inverse = np.unique(flat, return_inverse=True)
        if self.attr == "pos_":
            codes = [_UPOS_IDS[name] for name in names.tolist()]
        else:
            codes = [self.vocab.strings.add(name) for name in names.tolist()]
        values = np.asarray(codes, dtype=np.uint64)[inverse.ravel()]
        attr_id = _ARRAY_ATTRS[self.attr]
        start = 0
        for doc, n in zip(docs, lengths):
            if n:
                doc.from_array([attr_id], values[start:start + n, None])
            start += n

    def score(self, examples, **kwargs):
        """spaCy's token accuracy of ``attr`` (``tag_acc``, ``pos_acc``, ...,
        or ``<name>_acc`` for an extension) on annotated examples."""
        if self.attr.startswith("_."):
            extension = self.attr[2:]
            return Scorer.score_token_attr(
                examples, extension,
                getter=lambda token, attr: token._.get(attr), **kwargs)
        return Scorer.score_token_attr(examples, self.attr.rstrip("_"), **kwargs)


# -- the factories ---------------------------------------------------------------

@Language.factory(
    "sklstruct_ner",
    default_config={"model_path": None, "columns": ["text"], "scheme": None, "n_jobs": None},
    assigns=["doc.ents", "token.ent_iob", "token.ent_type"],
    default_score_weights={"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0,
                           "ents_per_type": None},
)
def make_ner(nlp, name, model_path, columns, scheme, n_jobs):
    """Make the ``"sklstruct_ner"`` component (:class:`SklstructNER`).

    Parameters
    ----------
    nlp : Language
        The pipeline (spaCy passes it).
    name : str
        The component's name (spaCy passes it).
    model_path : str or None
        The model file.
    columns : list of str
        Token attributes, one per column of the model's tokens.
    scheme : str or None
        The chunk scheme; None infers it from the labels.
    n_jobs : int or None
        Threads of ``predict``.

    Returns
    -------
    component : SklstructNER

    Examples
    --------
    ::

        nlp = spacy.blank("es")
        nlp.add_pipe("sklstruct_ner", config={"model_path": "ner.skl"})
    """
    return SklstructNER(nlp.vocab, name, model_path=model_path, columns=columns,
                        scheme=scheme, n_jobs=n_jobs)


@Language.factory(
    "sklstruct_tagger",
    default_config={"model_path": None, "columns": ["text"], "attr": "tag_", "n_jobs": None},
    default_score_weights={"tag_acc": 1.0},
)
def make_tagger(nlp, name, model_path, columns, attr, n_jobs):
    """Make the ``"sklstruct_tagger"`` component (:class:`SklstructTagger`).

    Parameters
    ----------
    nlp : Language
        The pipeline (spaCy passes it).
    name : str
        The component's name (spaCy passes it).
    model_path : str or None
        The model file.
    columns : list of str
        Token attributes, one per column of the model's tokens.
    attr : str
        The token attribute the labels go to.
    n_jobs : int or None
        Threads of ``predict``.

    Returns
    -------
    component : SklstructTagger

    Examples
    --------
    ::

        nlp = spacy.blank("es")
        nlp.add_pipe("sklstruct_tagger", config={"model_path": "pos.skl", "attr": "tag_"})
    """
    return SklstructTagger(nlp.vocab, name, model_path=model_path, columns=columns,
                           attr=attr, n_jobs=n_jobs)
