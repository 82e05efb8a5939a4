"""Model files that cannot run code: :func:`save_model` and :func:`load_model`.

A model file is a zip archive that ``numpy.load(path, allow_pickle=False)``
opens, as it opens an ``.npz`` file: every array of the model is a ``.npy``
entry (``a0.npy``, ``a1.npy``, ...) and everything else is one JSON entry,
``model.json``: the format's name and version, the sklstruct version that
wrote it, the classes it names, and the model as a tree of plain values (the
parameters, the vectorizer's templates and vocabulary, the label classes,
the numbers of the fitted model) in which each array is a reference to its
entry with its dtype and shape.

Loading reads that tree and builds objects only of the classes sklstruct
knows (its registered estimators, its vectorizers and their parts,
``sklstruct.compat.CRF``, scikit-learn's ``Pipeline``, and the few
scikit-learn parts of ``sklstruct._serialization.sklearn_parts``: the
k-means of ``EmbeddingFeatures``, the transformers of ``TokenTransformer``),
by setting the attributes the format allows for each, then checks what prediction will read (shapes, dtypes, index
ranges) and rebuilds the caches.  Nothing stored in the file is executed:
there is no pickle in it, and no name in it is imported.  A file that names
another class, holds an entry the model does not use, holds an object
array, is truncated or corrupt, has arrays of another dtype or shape than
announced, or was written in a newer format version is refused with a
``ValueError`` that says why.

Compared with a pickle, a model file keeps what prediction needs, not the
training state: a loaded online or dual learner predicts as the saved one
did (bit for bit), but cannot continue training (``partial_fit`` and
``warm_start`` refuse, naming the missing training state); a CRF with
``warm_start=True`` starts from its weights as usual.
"""
import json
import math
import os
import re
import struct
import sys
import uuid
import zipfile
import zlib

import numpy as np

from ._serialization.classes import build, class_named, describe
from ._serialization.codec import Reader, Writer

__all__ = ["save_model", "load_model", "model_info", "FORMAT_VERSION"]

#: The version of the format that :func:`save_model` writes; :func:`load_model`
#: reads this one and older ones.
FORMAT_VERSION = 1
FORMAT_NAME = "sklstruct-model"
METADATA = "model.json"
_ENTRY = re.compile(r"^a(0|[1-9][0-9]{0,8})\.npy$")


def _version():
    # the running package's version (``sklstruct`` is imported whenever this
    # module is; importing it here would make an import cycle)
    return getattr(sys.modules.get(__package__), "__version__", "unknown")


def save_model(estimator, path, *, metadata=None):
    """Save a fitted (or unfitted) estimator to a pickle-free model file.

    Parameters
    ----------
    estimator : estimator
        A sklstruct tagger, meta-tagger or parser, a sklstruct vectorizer
        (:class:`SequenceVectorizer`, :class:`DictSequenceVectorizer`,
        :class:`SentenceFeatureUnion`, a :func:`feature_set`, with their
        Brown clusters, label dictionary, gazetteer and embedding parts,
        k-means clusterings included), a :class:`TokenTransformer` of
        scikit-learn's ``Nystroem``, ``RBFSampler``,
        ``PolynomialCountSketch``, ``MaxAbsScaler``, ``StandardScaler``,
        ``Normalizer`` or ``TruncatedSVD`` (or a Pipeline of them), a
        :class:`sklearn.pipeline.Pipeline` of them, or a
        ``sklstruct.compat.CRF``.
    path : str or path-like
        The file to write (replaced atomically when it exists).  Any suffix
        works; ``.skls`` is the command line's.
    metadata : dict, default=None
        Information of your own to keep with the model (read back by
        :func:`model_info`): string keys, and values made of strings,
        finite numbers, bools, None, lists and dicts of them.

    Raises
    ------
    TypeError
        When the estimator holds an object that a model file cannot store
        (another scikit-learn estimator, a Python function such as a
        ``FunctionTransformer``'s or a callable kernel, a gensim model, a
        user-defined subclass...), naming where it is and why; or when
        ``metadata`` is not plain JSON data.

    See Also
    --------
    load_model : read the file back.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklstruct import CRFTagger, feature_set, load_model, save_model
    >>> X = [[("He", "PRP"), ("runs", "VBZ")], [("She", "PRP"), ("sleeps", "VBZ")]]
    >>> y = [["B-NP", "B-VP"], ["B-NP", "B-VP"]]
    >>> model = make_pipeline(feature_set("S1"), CRFTagger()).fit(X, y)
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "model.skls")
    >>> save_model(model, path)
    >>> [s.tolist() for s in load_model(path).predict(X)]
    [['B-NP', 'B-VP'], ['B-NP', 'B-VP']]
    """
    writer = Writer(describe)
    tree = writer.encode(estimator)
    if not (isinstance(tree, dict) and tree.get("t") == "object"):
        raise TypeError(f"save_model: expected an estimator; got {type(estimator).__name__}")
    metadata = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "sklstruct_version": _version(),
        "numpy_version": np.__version__,
        "class": tree["class"],
        "classes": sorted(_class_names(tree)),
        "metadata": _plain_json(metadata if metadata is not None else {}, "metadata"),
        "model": tree,
    }
    text = json.dumps(metadata, ensure_ascii=False, allow_nan=False,
                      separators=(",", ":")).encode("utf-8")
    path = os.fspath(path)
    # written beside the target, then renamed over it: a reader never sees half a
    # file (created with open(), so that its permissions follow the umask)
    tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp"
    try:
        with open(tmp, "xb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(METADATA, text)
            for entry, array in writer.arrays.items():
                with zf.open(entry, "w", force_zip64=array.nbytes > 2 ** 30) as out:
                    np.lib.format.write_array(out, array, allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _plain_json(value, path, depth=0):
    """``value`` if it is plain JSON data (a dict at the top), else TypeError."""
    if depth == 0 and not isinstance(value, dict):
        raise TypeError(f"metadata: expected a dict; got {type(value).__name__}")
    if depth > 20:
        raise TypeError(f"{path}: nested too deep")
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float and math.isfinite(value):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain_json(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict) and all(type(k) is str for k in value):
        return {k: _plain_json(v, f"{path}[{k!r}]", depth + 1) for k, v in value.items()}
    raise TypeError(f"{path}: {type(value).__name__} {value!r:.60} is not plain JSON data "
                    "(strings, finite numbers, bools, None, lists, dicts with string keys)")


def model_info(path):
    """What a model file says about itself, without building the model.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    info : dict
        ``format_version``, ``sklstruct_version`` (that wrote it), ``class``
        (of the saved estimator), ``classes`` (every class the file names)
        and ``metadata`` (as given to :func:`save_model`).

    Raises
    ------
    ValueError
        As :func:`load_model`, for a file that is not a model file.
    """
    metadata = _open(path, lambda zf, infos, p: _read_metadata(zf, infos[METADATA], p))
    return {k: metadata[k] for k in ("format_version", "sklstruct_version", "class",
                                     "classes", "metadata")}


def _class_names(node):
    """The class names an encoded tree uses (iteratively: trees may be deep)."""
    names, stack = set(), [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if n.get("t") == "object":
                name = n.get("class")
                names.add(name if isinstance(name, str) else repr(name))
            stack.extend(x for x in n.values() if isinstance(x, (dict, list)))
        elif isinstance(n, list):
            stack.extend(x for x in n if isinstance(x, (dict, list)))
    return names


def load_model(path):
    """Load an estimator saved by :func:`save_model`, running no code from the file.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    estimator
        The saved estimator (or pipeline), which predicts exactly as the saved
        one did.

    Raises
    ------
    ValueError
        The file is not a valid model file, saying why: not a zip archive (a
        joblib or pickle file is named as such) or a truncated or corrupt one,
        a newer format version, a class other than sklstruct's estimators,
        vectorizers and scikit-learn's Pipeline, an entry the model does not
        use, an object (pickled) array, an array whose dtype or shape differs
        from what the model says, or fitted attributes that do not fit
        together.

    Examples
    --------
    See :func:`save_model`.
    """
    return _open(path, _load)


def _open(path, read):
    """``read(zipfile, infos, path)`` on the model file at ``path``, every
    failure a ValueError that names the file and says why."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        head = f.read(4)
        f.seek(0)
        if head[:1] == b"\x80" or head[:2] in (b"x\x9c", b"x\xda", b"x\x01", b"x^"):
            raise ValueError(f"{path}: a pickle or joblib file, not a sklstruct model file; "
                             "load_model never unpickles (a pickle runs code stored in it). "
                             "Load it with joblib.load only if you trust it, then write it "
                             "with save_model")
        try:
            try:
                zf = zipfile.ZipFile(f)
            except zipfile.BadZipFile:
                raise ValueError(f"{path}: not a sklstruct model file (not a zip archive, or "
                                 "a truncated one)") from None
            with zf:
                return read(zf, _entries(zf, path), path)
        except ValueError:
            raise
        except MemoryError:
            raise ValueError(f"{path}: its arrays do not fit in memory") from None
        except (KeyError, IndexError, TypeError, AttributeError, OverflowError,
                RecursionError, EOFError, UnicodeDecodeError, struct.error, zlib.error,
                zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError,
                OSError) as exc:       # (the file is open: a seek or read the zip misstates)
            raise ValueError(f"{path}: not a valid sklstruct model file "
                             f"({type(exc).__name__}: {exc})") from None


def _entries(zf, path):
    """The zip's entries by name: ``model.json`` and ``a<n>.npy`` only, once each."""
    infos = {}
    for info in zf.infolist():
        if info.filename in infos:
            raise ValueError(f"{path}: the entry {info.filename!r} appears twice")
        if info.filename != METADATA and not _ENTRY.match(info.filename):
            raise ValueError(f"{path}: holds the entry {info.filename!r}, which a model "
                             "file does not have; refused")
        if info.flag_bits & 0x1:
            raise ValueError(f"{path}: the entry {info.filename!r} is encrypted; a model "
                             "file's are not")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ValueError(f"{path}: the entry {info.filename!r} uses compression method "
                             f"{info.compress_type}; a model file's are deflated or stored")
        infos[info.filename] = info
    if METADATA not in infos:
        raise ValueError(f"{path}: not a sklstruct model file (no {METADATA} entry)")
    return infos


def _load(zf, infos, path):
    metadata = _read_metadata(zf, infos[METADATA], path)
    if not isinstance(metadata["model"], dict):
        raise ValueError(f"{path}: {METADATA} holds no model")
    names = _class_names(metadata["model"])
    unknown = sorted(n for n in names if class_named(n) is None)
    if unknown:
        raise ValueError(f"{path}: the file names class {unknown[0]!r}, which is not one of "
                         "sklstruct's estimators, vectorizers or their parts; refused")
    if metadata["classes"] != sorted(names) or metadata["class"] != \
            metadata["model"].get("class"):
        raise ValueError(f"{path}: {METADATA}'s class names do not match its model's")
    opened = set()

    def open_array(entry, dtype, shape, fortran, where):
        if entry not in infos or entry == METADATA:
            raise ValueError(f"{where}: refers to the entry {entry!r}, which the file "
                             "does not hold")
        if entry in opened:
            raise ValueError(f"{where}: the entry {entry!r} is used twice")
        opened.add(entry)
        return _read_array(zf, infos[entry], dtype, shape, fortran, where)

    model = Reader(open_array, build).decode(metadata["model"], "model")
    unused = sorted(set(infos) - opened - {METADATA})
    if unused:
        raise ValueError(f"{path}: holds the entry {unused[0]!r}, which the model does "
                         "not use; refused")
    return model


def _reject_constant(name):
    raise ValueError(f"the JSON holds {name}")


def _read_metadata(zf, info, path):
    with zf.open(info) as f:
        raw = f.read()
    try:
        metadata = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:     # (JSON, UTF-8, a NaN constant)
        raise ValueError(f"{path}: {METADATA} is not valid JSON ({exc})") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT_NAME:
        raise ValueError(f"{path}: {METADATA} does not describe a sklstruct model")
    version = metadata.get("format_version")
    if type(version) is not int or version < 1:
        raise ValueError(f"{path}: format_version {version!r} is not a version number")
    if version > FORMAT_VERSION:
        raise ValueError(f"{path}: written in model file format {version} (by sklstruct "
                         f"{metadata.get('sklstruct_version')!r}); this sklstruct "
                         f"{_version()} reads formats up to {FORMAT_VERSION}: upgrade it")
    expected = {"format", "format_version", "sklstruct_version", "numpy_version", "class",
                "classes", "metadata", "model"}
    if set(metadata) != expected:
        raise ValueError(f"{path}: {METADATA} has the fields {sorted(metadata)}; expected "
                         f"{sorted(expected)}")
    if type(metadata["metadata"]) is not dict or type(metadata["class"]) is not str:
        raise ValueError(f"{path}: {METADATA}'s class or metadata is malformed")
    return metadata


def _read_array(zf, info, dtype, shape, fortran, where):
    """The array of one ``.npy`` entry, refused unless its header announces
    exactly ``dtype``, ``shape`` and order, and its size is that of the data."""
    with zf.open(info) as f:
        try:
            # save_model writes version 1.0 (a header of at most 64 KiB; NumPy
            # >= 1.24 refuses one over 10,000 bytes), the only one read here
            version = np.lib.format.read_magic(f)
            if version != (1, 0):
                raise ValueError(f"npy format version {version[0]}.{version[1]}, not 1.0")
            header = np.lib.format.read_array_header_1_0(f)
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"{where}: the entry {info.filename!r} is not a valid .npy "
                             f"array ({exc})") from None
        got_shape, got_fortran, got_dtype = header
        if got_dtype.hasobject:
            raise ValueError(f"{where}: the entry {info.filename!r} holds Python objects "
                             "(a pickle); refused")
        if got_dtype != dtype or tuple(got_shape) != shape or bool(got_fortran) != fortran:
            raise ValueError(
                f"{where}: the entry {info.filename!r} holds a {got_dtype} array of shape "
                f"{tuple(got_shape)}; the model expects {dtype} of shape {shape}"
                + (f" in {'Fortran' if fortran else 'C'} order" if got_dtype == dtype and
                   tuple(got_shape) == shape else ""))
        nbytes = math.prod(shape) * dtype.itemsize
        if info.file_size - f.tell() != nbytes:
            raise ValueError(f"{where}: the entry {info.filename!r} holds "
                             f"{info.file_size - f.tell()} bytes of data; its header needs "
                             f"{nbytes}")
        data = bytearray(nbytes)
        if f.readinto(memoryview(data)) != nbytes:
            raise ValueError(f"{where}: the entry {info.filename!r} is truncated")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order="F" if fortran else "C")
