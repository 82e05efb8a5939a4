"""Pickle-free model files (issue 33, item 1): save_model / load_model.

Round trips predict bit for bit (every registered estimator, the feature
sets with their Brown clusters, label dictionary and gazetteer, the
vectorizers, pipelines, both parsers, sklearn-crfsuite's CRF); the file is a zip that
``numpy.load(allow_pickle=False)`` opens; every malformed or hostile file is
refused with a ValueError that says why, and nothing in a file is executed;
a fuzzed file gives a model or a ValueError, never another error or a crash.
"""
import json
import warnings

import numpy as np
import pytest
from _data import data_dir, require_data
from _model_files import find, npy, read_zip, write_zip
from _oracles import make
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.pipeline import make_pipeline

import sklstruct
from sklstruct import (CRFTagger, DictSequenceVectorizer, F1MaxMarginParser,
                       SequenceVectorizer, StructuredPerceptronTagger, SWVMTagger,
                       TokenTransformer, feature_set, load_model, save_model)
from sklstruct._registry import ESTIMATORS, META_TAGGERS, PARSERS, TAGGERS
from sklstruct.datasets import load_treebank, make_chunking_corpus
from sklstruct.parsing import Tree
from sklstruct.serialization import FORMAT_VERSION, model_info

ALL_TAGGERS = {**TAGGERS, **META_TAGGERS}


def test_the_round_trips_cover_the_registry():
    """Every registered estimator is in one of the parametrized round trips."""
    assert {**ALL_TAGGERS, **PARSERS} == ESTIMATORS


@pytest.fixture(scope="module")
def corpus():
    X, y = make_chunking_corpus(160, random_state=7)
    return X[:110], y[:110], X[110:]


@pytest.fixture(scope="module")
def vectorized(corpus):
    Xtr, ytr, Xte = corpus
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    return vec.fit_transform(Xtr), ytr, vec.transform(Xte)


def round_trip(model, tmp_path, name="model.skls"):
    path = tmp_path / name
    save_model(model, path)
    return load_model(path)


def assert_same_labels(a, b):
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert p.dtype == q.dtype
        np.testing.assert_array_equal(p, q)


def quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y)


# -- round trips ----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ALL_TAGGERS))
def test_every_registered_tagger_round_trips_bit_for_bit(vectorized, tmp_path, name):
    Xtr, ytr, Xte = vectorized
    model = quiet_fit(make(ALL_TAGGERS[name], max_iter=2, random_state=0), Xtr, ytr)
    again = round_trip(model, tmp_path)
    assert type(again) is type(model)
    assert repr(again.get_params()) == repr(model.get_params())
    assert_same_labels(model.predict(Xte), again.predict(Xte))
    for (pa, sa), (pb, sb) in zip(model.predict_kbest(Xte[:10], k=3),
                                  again.predict_kbest(Xte[:10], k=3)):
        assert_same_labels(pa, pb)
        assert sa.tobytes() == sb.tobytes()
    assert again.coef_.tobytes() == model.coef_.tobytes()
    assert again.coef_.flags.f_contiguous == model.coef_.flags.f_contiguous
    # calibrated: the same temperature, marginals and confidences
    model.calibrate(Xtr[:30], ytr[:30])
    again = round_trip(model, tmp_path)
    assert again.calibration_ == model.calibration_
    for a, b in zip(model.predict_marginals(Xte[:10]), again.predict_marginals(Xte[:10])):
        assert a.tobytes() == b.tobytes()
    assert np.array_equal(model.predict_confidence(Xte[:10]),
                          again.predict_confidence(Xte[:10]))
    # a loaded model predicts; it keeps no training state to continue from
    if hasattr(model, "partial_fit") and hasattr(model, "_TRAINING_STATE"):
        with pytest.raises(ValueError, match="training state"):
            again.partial_fit(Xtr, ytr)


def test_crf_feature_set_pipeline_with_clusters_and_label_features(corpus, tmp_path):
    """The target: a feature_set + CRFTagger pipeline (here the rich NER set
    with Brown clusters learned at fit, the label dictionary and the
    gazetteer) predicts bit for bit, marginals included."""
    Xtr, ytr, Xte = corpus
    model = quiet_fit(make_pipeline(feature_set("ner-rich", clusters=8, random_state=0),
                                    CRFTagger(max_iter=5)), Xtr, ytr)
    again = round_trip(model, tmp_path)
    assert [type(s) for _, s in again.steps] == [type(s) for _, s in model.steps]
    assert_same_labels(model.predict(Xte), again.predict(Xte))
    for a, b in zip(model[-1].predict_marginals(model[0].transform(Xte)),
                    again[-1].predict_marginals(again[0].transform(Xte))):
        assert a.tobytes() == b.tobytes()
    union = again[0]
    assert [n for n, _ in union.transformer_list] == ["templates", "label_dictionary",
                                                      "gazetteer"]
    brown = union.transformers_[0][1].clusters_
    assert brown == model[0].transformers_[0][1].clusters_


def test_swvm_feature_set_pipeline(corpus, tmp_path):
    Xtr, ytr, Xte = corpus
    model = quiet_fit(make_pipeline(feature_set("swvm"), SWVMTagger(max_iter=2,
                                                                      random_state=0)),
                      Xtr, ytr)
    again = round_trip(model, tmp_path)
    assert_same_labels(model.predict(Xte), again.predict(Xte))
    assert again.score(Xte, model.predict(Xte)) == 1.0


def test_sklstruct_pipeline_keeps_its_class_and_methods(corpus, tmp_path):
    Xtr, ytr, Xte = corpus
    model = quiet_fit(sklstruct.make_pipeline(feature_set("S1"), sklstruct.CRFTagger(
        max_iter=5)), Xtr, ytr)
    again = round_trip(model, tmp_path)
    assert type(again) is sklstruct.Pipeline
    for a, b in zip(model.predict_marginals(Xte), again.predict_marginals(Xte)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", ["hashing", "dict", "embeddings", "kernel", "constrained",
                                  "order2", "random_state", "float32"])
def test_other_configurations_round_trip(corpus, tmp_path, kind):
    Xtr, ytr, Xte = corpus
    words = sorted({t[0] for s in Xtr for t in s})
    rng = np.random.default_rng(0)
    def convert(X):
        if kind != "dict":
            return X
        return [[{"word": w, "pos": p} for w, p in s] for s in X]

    if kind == "hashing":
        model = make_pipeline(SequenceVectorizer(["word", "pos"], hashing=True,
                                                 n_features=2 ** 12), CRFTagger(max_iter=3))
    elif kind == "dict":
        model = make_pipeline(DictSequenceVectorizer(), StructuredPerceptronTagger(max_iter=2))
    elif kind == "embeddings":
        vectors = {w: rng.normal(size=3) for w in words[:40]}
        model = make_pipeline(feature_set("S1", embeddings=vectors),
                              StructuredPerceptronTagger(max_iter=2, random_state=0))
    elif kind == "kernel":
        model = make_pipeline(feature_set("S1"), sklstruct.M3NTagger(
            kernel="poly", max_iter=1, random_state=0))
    elif kind == "constrained":
        model = make_pipeline(feature_set("S2"), sklstruct.ConstrainedTagger(
            StructuredPerceptronTagger(max_iter=2, random_state=0), constraints="bio",
            label_dictionary=2))
    elif kind == "order2":
        model = make_pipeline(feature_set("S1"), CRFTagger(max_iter=3, order=2))
    elif kind == "random_state":
        model = make_pipeline(feature_set("S2"), StructuredPerceptronTagger(
            max_iter=2, random_state=np.random.RandomState(3)))
    else:
        model = make_pipeline(feature_set("S2"), StructuredPerceptronTagger(max_iter=2,
                                                                           random_state=0))
    quiet_fit(model, convert(Xtr), ytr)
    if kind == "float32":
        model.steps[-1] = (model.steps[-1][0], model[-1].astype(np.float32))
    again = round_trip(model, tmp_path)
    assert_same_labels(model.predict(convert(Xte)), again.predict(convert(Xte)))
    if kind == "float32":
        assert again[-1].coef_.dtype == np.float32
    if kind == "dict":      # its DictVectorizer is rebuilt (no sklearn object but Pipeline)
        assert list(again[0].vectorizer_.get_feature_names_out()) == \
            list(model[0].vectorizer_.get_feature_names_out())
        assert "DictVectorizer" not in json.dumps(model_info(tmp_path / "model.skls"))
    if kind == "random_state":
        saved, loaded = (m[-1].random_state.get_state() for m in (model, again))
        assert repr(saved) == repr(loaded)


def test_vectorizers_alone_transform_the_same(corpus, tmp_path):
    Xtr, _, Xte = corpus
    for vec in (SequenceVectorizer(["word", "suffix2", "pos[-1]|pos"], window=1,
                                   min_freq=2),
                feature_set("chunking"), feature_set("S3", clusters=6)):
        vec.fit(Xtr)
        again = round_trip(vec, tmp_path)
        assert again.vocabulary_ == vec.vocabulary_
        for a, b in zip(vec.transform(Xte), again.transform(Xte)):
            assert (a != b).nnz == 0
    unfitted = round_trip(feature_set("ner-rich"), tmp_path)
    assert repr(unfitted) == repr(feature_set("ner-rich"))


@pytest.mark.parametrize("algorithm", ["lbfgs", "l2sgd", "ap", "pa", "arow"])
def test_the_sklearn_crfsuite_drop_in_round_trips(corpus, tmp_path, algorithm):
    """sklstruct.compat.CRF (sklearn-crfsuite's CRF): predictions, marginals,
    its training log and classes."""
    from sklstruct.compat import CRF
    Xtr, ytr, Xte = corpus

    def dicts(X):
        return [[{"w": w, "p": p, "len": float(len(w))} for w, p in s] for s in X]
    crf = CRF(algorithm=algorithm, max_iterations=3).fit(dicts(Xtr[:60]), ytr[:60])
    again = round_trip(crf, tmp_path)
    assert again.get_params() == crf.get_params()
    assert again.predict(dicts(Xte)).tolist() == crf.predict(dicts(Xte)).tolist()
    assert again.predict_marginals(dicts(Xte[:5])).tolist() == \
        crf.predict_marginals(dicts(Xte[:5])).tolist()
    assert again.classes_ == crf.classes_
    assert again.training_log_.iterations == crf.training_log_.iterations
    assert again.state_features_ == crf.state_features_


def test_a_compat_model_loads_in_a_process_that_never_imported_compat(tmp_path):
    """sklstruct.compat registers its classes with the format (which cannot
    import compat: compat reads and writes model files); a file naming one
    imports it first."""
    import subprocess
    import sys

    from sklstruct.compat import CRF

    x = [{"w": "a"}, {"w": "b"}]
    path = str(tmp_path / "crf.skls")
    sklstruct.save_model(CRF(max_iterations=3).fit([x, x], [["A", "B"], ["A", "B"]]), path)
    code = ("import sys; from sklstruct.serialization import load_model; "
            f"model = load_model({path!r}); "
            "assert 'sklstruct.compat' in sys.modules; "
            "print(model.predict_single([{'w': 'a'}, {'w': 'b'}]))")
    # (run outside the checkout: from its root, its unbuilt sklstruct/ would be imported)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "['A', 'B']"


def test_a_crfsuite_model_read_by_from_crfsuite_round_trips(corpus, tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    from sklstruct.compat import CRF, from_crfsuite
    Xtr, ytr, Xte = corpus
    trainer = pycrfsuite.Trainer(verbose=False)
    for s, labels in zip(Xtr[:60], ytr[:60]):
        trainer.append([{"w": w, "p": p} for w, p in s], labels)
    trainer.set_params({"max_iterations": 5})
    trainer.train(str(tmp_path / "m.crfsuite"))
    crf = from_crfsuite(tmp_path / "m.crfsuite")
    again = round_trip(crf, tmp_path)
    X = [[{"w": w, "p": p} for w, p in s] for s in Xte]
    assert again.predict(X).tolist() == crf.predict(X).tolist()
    # an unfitted CRF naming a model file would read it on predicting: refused
    unfitted = CRF(model_filename=str(tmp_path / "m.crfsuite"))
    with pytest.raises(TypeError, match="reads that file"):
        save_model(unfitted, tmp_path / "unfitted.skls")
    path = tmp_path / "unfitted.skls"
    save_model(CRF(), path)
    entries = read_zip(path)
    meta = json.loads(entries["model.json"])
    meta["model"]["state"]["model_filename"] = str(tmp_path / "m.crfsuite")
    with pytest.raises(ValueError, match="would read that file"):
        load_model(write_zip(path, entries, meta))


TOY = [
    "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
    "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))",
    "(S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog))))",
    "(S (NP (NNP Mary)) (VP (VBZ sleeps)) (. .))",
    "(FRAG (NP (NN dog)))",
]


@pytest.mark.parametrize("name", sorted(PARSERS))
@pytest.mark.parametrize("tagger", [False, True])
def test_every_registered_parser_round_trips(tmp_path, name, tagger):
    """Both parsers, on (word, tag) pairs, and on words with a tagger
    pipeline of their own (trained at fit, saved with the parser)."""
    cls = PARSERS[name]
    trees = [Tree.fromstring(s) for s in TOY]
    X = [t.leaves() if tagger else t.pos() for t in trees]
    params = {"tagger": make_pipeline(SequenceVectorizer(["word"]), StructuredPerceptronTagger(
        max_iter=2, random_state=0))} if tagger else {}
    parser = quiet_fit(make(cls, max_iter=3, **params), X, trees)
    again = round_trip(parser, tmp_path)
    assert again.predict(X) == parser.predict(X)
    if tagger:
        assert_same_labels(again.tagger_.predict(X), parser.tagger_.predict(X))


def test_f1_parser_round_trips_on_the_treebank_sample(tmp_path):
    """The target: an F1MaxMarginParser (rules, PCFG and span features) on
    Penn Treebank trees parses the same trees after a round trip."""
    require_data("treebank", "combined")
    trees = load_treebank(data_dir(), files=[1, 2, 3])
    X = [t.leaves() for t in trees]
    parser = quiet_fit(F1MaxMarginParser(max_iter=2), X[:25], trees[:25])
    again = round_trip(parser, tmp_path)
    assert again.predict(X) == parser.predict(X)
    assert again.coef_.tobytes() == parser.coef_.tobytes()
    assert np.shares_memory(again.w_lex_, again.coef_)       # the blocks are views, as fit's


# -- the file ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_file(corpus, tmp_path_factory):
    """A small pipeline's model file: (path, model, test sentences)."""
    Xtr, ytr, Xte = corpus
    model = make_pipeline(SequenceVectorizer(["word", "pos"]),
                          StructuredPerceptronTagger(max_iter=2, random_state=0))
    model.fit(Xtr[:40], ytr[:40])
    path = tmp_path_factory.mktemp("model") / "small.skls"
    save_model(model, path, metadata={"note": "tiny", "n_columns": 2})
    return path, model, Xte[:8]


def test_the_file_is_an_npz_that_numpy_opens_without_pickle(small_file):
    path, model, _ = small_file
    with np.load(path, allow_pickle=False) as npz:
        names = npz.files
        arrays = [npz[n] for n in names if n != "model.json"]
        meta = json.loads(npz["model.json"])       # (a member that is not .npy: its bytes)
    assert "model.json" in names and arrays and all(a.dtype != object for a in arrays)
    assert meta["format"] == "sklstruct-model" and meta["format_version"] == FORMAT_VERSION
    assert meta["sklstruct_version"] == sklstruct.__version__
    assert meta["class"] == "sklearn.pipeline.Pipeline"
    assert {"SequenceVectorizer", "StructuredPerceptronTagger"} <= set(meta["classes"])
    text = json.dumps(meta)
    # templates, vocabulary, label classes and parameters are readable JSON
    for word in ("templates_", "vocabulary_", "word=", "classes_", "B-NP", "max_iter"):
        assert word in text
    info = model_info(path)
    assert info["metadata"] == {"note": "tiny", "n_columns": 2}
    assert info["class"] == "sklearn.pipeline.Pipeline"
    # written whole then renamed, with the permissions of a file open() creates
    import os
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_loaded_model_is_an_ordinary_estimator(small_file, corpus):
    """clone, set_params and a refit work on it; a CRF with warm_start
    starts from the loaded weights."""
    from sklearn.base import clone
    path, model, X = small_file
    Xtr, ytr, _ = corpus
    again = load_model(path)
    assert repr(clone(again)) == repr(clone(model))
    again.set_params(structuredperceptrontagger__max_iter=1).fit(Xtr[:20], ytr[:20])
    crf = make_pipeline(feature_set("S1"), CRFTagger(max_iter=2, warm_start=True))
    quiet_fit(crf, Xtr, ytr)
    save_model(crf, path.parent / "crf.skls")
    loaded = load_model(path.parent / "crf.skls")
    quiet_fit(crf, Xtr, ytr)
    quiet_fit(loaded, Xtr, ytr)
    assert loaded[-1].coef_.tobytes() == crf[-1].coef_.tobytes()
    (path.parent / "crf.skls").unlink()


def test_save_refuses_what_it_cannot_store_without_pickle(tmp_path, vectorized):
    from sklearn.linear_model import Perceptron
    from sklearn.preprocessing import FunctionTransformer
    with pytest.raises(TypeError, match="Perceptron cannot be stored"):
        save_model(make_pipeline(SequenceVectorizer(), Perceptron()), tmp_path / "a")
    with pytest.raises(TypeError, match="holds a FunctionTransformer, which cannot be stored"):
        save_model(TokenTransformer(FunctionTransformer(np.sqrt)), tmp_path / "b")

    class Mine(StructuredPerceptronTagger):
        pass
    with pytest.raises(TypeError, match="Mine cannot be stored"):
        save_model(Mine(), tmp_path / "c")
    with pytest.raises(TypeError, match="not plain JSON"):
        save_model(StructuredPerceptronTagger(), tmp_path / "d", metadata={"x": object()})
    with pytest.raises(TypeError, match="expected an estimator"):
        save_model([1, 2], tmp_path / "e")
    Xtr, ytr, _ = vectorized
    model = StructuredPerceptronTagger(max_iter=1).fit(Xtr[:10], ytr[:10])
    model.extra_thing = 1
    with pytest.raises(TypeError, match="attribute 'extra_thing' is not one"):
        save_model(model, tmp_path / "f")
    del model.extra_thing
    model.thing_ = lambda: None
    with pytest.raises(TypeError, match="model.thing_: a builtins.function cannot be stored"):
        save_model(model, tmp_path / "f")
    assert not [p for p in tmp_path.iterdir()]           # nothing half-written is left


# -- refusals ---------------------------------------------------------------------------

def tagger_state(meta):
    return find(meta["model"], lambda n: isinstance(n, dict) and
                n.get("class") == "StructuredPerceptronTagger")["state"]


class _Boom:
    """Unpickling this would run ``exec``: it must never be unpickled."""

    def __reduce__(self):
        return exec, ("import sklstruct; sklstruct._BOOM = True",)


def hostile_files(small_file, tmp_path):
    """(name, path, message) of hostile or broken variants of a good file."""
    good, _, _ = small_file
    entries = read_zip(good)
    meta = json.loads(entries["model.json"])
    array = find(meta["model"], lambda n: isinstance(n, dict) and n.get("t") == "array")
    out = []

    def variant(name, message, entries=entries, meta=None):
        out.append((name, write_zip(tmp_path / f"{name}.skls", dict(entries), meta), message))

    def edited(edit):
        m = json.loads(entries["model.json"])
        edit(m)
        return m

    variant("foreign_entry", "holds the entry 'evil.pkl'",
            {**entries, "evil.pkl": b"\x80\x04K\x01."})
    variant("unused_entry", "holds the entry 'a999.npy', which the model does not use",
            {**entries, "a999.npy": npy(np.zeros(3))})
    variant("no_metadata", "no model.json",
            {k: v for k, v in entries.items() if k != "model.json"})
    variant("pickled_array", "holds Python objects",
            {**entries, array["entry"]: npy(np.array([_Boom()], dtype=object), True)})
    variant("wrong_dtype", "holds a int32 array",
            {**entries, array["entry"]: npy(np.zeros(array["shape"], dtype=np.int32))})
    variant("wrong_shape", "the model expects",
            {**entries, array["entry"]: npy(np.zeros(3))})
    arrays = sorted((n for n in entries if n.endswith(".npy")),
                    key=lambda n: len(entries[n]))
    variant("swapped_entries", "holds a .* array of shape .*; the model expects",
            {**entries, arrays[0]: entries[arrays[-1]], arrays[-1]: entries[arrays[0]]})
    variant("newer_version", "format 99.*upgrade",
            meta=edited(lambda m: m.update(format_version=99)))
    variant("other_class", "names class 'posix.system'", meta=edited(
        lambda m: tagger_state(m).update(k={"t": "object", "class": "posix.system",
                                            "id": 99, "state": {}})))
    variant("sklearn_class", "names class 'sklearn.linear_model.Perceptron'",
            meta=edited(lambda m: m["model"].update(**{"class":
                                                       "sklearn.linear_model.Perceptron"})))
    variant("dunder_attribute", "no attribute '__class__'", meta=edited(
        lambda m: tagger_state(m).update(__class__="x")))
    variant("method_attribute", "no attribute 'predict'", meta=edited(
        lambda m: tagger_state(m).update(predict=1)))
    variant("missing_param", "lacks its parameter 'max_iter'", meta=edited(
        lambda m: tagger_state(m).pop("max_iter")))
    variant("unknown_tag", "not a value a model file holds", meta=edited(
        lambda m: tagger_state(m).update(k={"t": "pickle", "v": "gASVAAAAAAAAAAB9lC4="})))
    variant("object_dtype", "dtype '\\|O' is not one", meta=edited(
        lambda m: find(m["model"], lambda n: isinstance(n, dict) and n.get("t") == "array")
        .update(dtype="|O")))
    variant("bad_ref", "refers to object 7", meta=edited(
        lambda m: tagger_state(m).update(k={"t": "ref", "v": 7})))
    variant("nan_constant", "not valid JSON", {**entries, "model.json":
                                               entries["model.json"].replace(b'"k":1',
                                                                             b'"k":NaN')})
    variant("coef_shape", "coef_ must have shape", meta=edited(
        lambda m: tagger_state(m).update(n_features_in_=5)))
    variant("classes_unsorted", "classes_ must be sorted", meta=edited(
        lambda m: tagger_state(m)["classes_"]["v"].reverse()))
    variant("vocabulary_range", "vocabulary_ must number", meta=edited(
        lambda m: find(m["model"], lambda n: isinstance(n, dict) and "word=the" in n)
        .update(**{"word=the": 10 ** 6})))
    variant("forged_template", "templates_ are not the canonical", meta=edited(
        lambda m: find(m["model"], lambda n: isinstance(n, dict) and "templates_" in n)
        ["templates_"].__setitem__(0, "word[0]")))
    data = open(good, "rb").read()
    encrypted = bytearray(data)
    for magic, flag in ((b"PK\x01\x02", 8), (b"PK\x03\x04", 6)):
        i = encrypted.find(magic)
        while i >= 0:
            encrypted[i + flag] |= 1
            i = encrypted.find(magic, i + 4)
    (tmp_path / "encrypted.skls").write_bytes(bytes(encrypted))
    out.append(("encrypted", tmp_path / "encrypted.skls", "is encrypted"))
    (tmp_path / "truncated.skls").write_bytes(data[:len(data) // 2])
    out.append(("truncated", tmp_path / "truncated.skls", "not a zip archive|truncated|"
                "not a valid"))
    (tmp_path / "pickle.skls").write_bytes(b"\x80\x04\x95" + b"\0" * 20)
    out.append(("pickle", tmp_path / "pickle.skls", "a pickle or joblib file"))
    (tmp_path / "empty.skls").write_bytes(b"")
    out.append(("empty", tmp_path / "empty.skls", "not a zip archive"))
    return out


def test_hostile_files_are_refused_with_a_reason(small_file, tmp_path):
    path, model, X = small_file
    assert_same_labels(load_model(path).predict(X), model.predict(X))
    for name, bad, message in hostile_files(small_file, tmp_path):
        with pytest.raises(ValueError, match=message) as info:
            load_model(bad)
        assert str(bad) in str(info.value) or "model" in str(info.value), name
    assert not hasattr(sklstruct, "_BOOM")       # nothing in a file ran


def test_a_file_of_wrong_array_bytes_is_refused(small_file, tmp_path):
    """An entry whose header announces more data than it holds, or less."""
    good, _, _ = small_file
    entries = read_zip(good)
    name = next(n for n in entries if n.endswith(".npy"))
    for data, message in ((entries[name][:-8], "bytes of data"),
                          (entries[name] + b"\0" * 8, "bytes of data"),
                          (b"\x93NUMPY\x09\x00" + entries[name][8:], "not a valid .npy")):
        bad = write_zip(tmp_path / "bytes.skls", {**entries, name: data})
        with pytest.raises(ValueError, match=message):
            load_model(bad)


# -- fuzzing ----------------------------------------------------------------------------

_ODD_VALUES = [0, -1, 1, 2, 2 ** 31, 2 ** 63, -2 ** 63, 1e308, -0.0, 0.5, "", "x", None, True,
               [], {}, [1, 2], {"t": "ref", "v": 0}, {"t": "tuple", "v": []},
               {"t": "float", "v": "nan"}, {"t": "strings", "dtype": "<U1", "shape": [2],
                                            "v": ["a", "b"]}]


def leaves(node, path=()):
    """Every (path, value) of a JSON tree, containers included."""
    out = [(path, node)]
    if isinstance(node, dict):
        for k, v in node.items():
            out += leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += leaves(v, path + (i,))
    return out


def loads_or_refuses(path, X):
    """load_model gives a model or a ValueError, nothing else; a model that
    loads then predicts or raises an ordinary exception (never crashes)."""
    try:
        model = load_model(path)
    except ValueError as exc:
        assert str(exc)
        return
    try:
        model.predict(X)
    except Exception:       # a forged but consistent model may refuse to predict
        pass


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_bytes(small_file, tmp_path, data):
    good, _, X = small_file
    raw = bytearray(open(good, "rb").read())
    how = data.draw(st.sampled_from(["flip", "truncate", "splice", "header"]))
    if how == "header":
        # the zip's own records: local headers, central directory, its end
        starts = [i for magic in (b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06")
                  for i in range(len(raw)) if raw.startswith(magic, i)]
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.sampled_from(starts)) + data.draw(st.integers(4, 45))
            if i < len(raw):
                raw[i] = data.draw(st.integers(0, 255))
    elif how == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] ^= data.draw(st.integers(1, 255))
    elif how == "truncate":
        raw = raw[:data.draw(st.integers(0, len(raw) - 1))]
    else:
        i, j = sorted(data.draw(st.lists(st.integers(0, len(raw)), min_size=2, max_size=2)))
        raw = raw[:i] + raw[j:] + raw[i:j]
    path = tmp_path / "fuzz.skls"
    path.write_bytes(bytes(raw))
    loads_or_refuses(path, X)


@pytest.fixture(scope="module")
def fuzzed_files(small_file, corpus, tmp_path_factory):
    """Model files to fuzz, with sentences to predict: the small pipeline, a
    rich one (Brown clusters, label dictionary, gazetteer; a tag dictionary
    and transition constraints), sklearn-crfsuite's CRF, a kernel M3N and a
    parser."""
    Xtr, ytr, Xte = corpus
    folder = tmp_path_factory.mktemp("fuzz")
    rich = make_pipeline(
        feature_set("ner-rich", clusters=4, random_state=0),
        sklstruct.ConstrainedTagger(CRFTagger(max_iter=2), constraints="bio",
                                    label_dictionary=1))
    kernel = make_pipeline(feature_set("S1"), sklstruct.M3NTagger(kernel="poly", max_iter=1,
                                                                  random_state=0))
    trees = [Tree.fromstring(t) for t in TOY]
    parser = F1MaxMarginParser(max_iter=2)
    from sklstruct.compat import CRF
    dicts = [[{"w": w, "p": p} for w, p in s] for s in Xtr[:30] + Xte[:5]]
    out = [(small_file[0], small_file[2])]
    for name, model, X, y, test in (("rich", rich, Xtr[:50], ytr[:50], Xte[:5]),
                                    ("compat", CRF(max_iterations=2), dicts[:30], ytr[:30],
                                     dicts[30:]),
                                    ("kernel", kernel, Xtr[:20], ytr[:20], Xte[:5]),
                                    ("parser", parser, [t.pos() for t in trees], trees,
                                     [t.pos() for t in trees])):
        quiet_fit(model, X, y)
        save_model(model, folder / f"{name}.skls")
        out.append((folder / f"{name}.skls", test))
    return out


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_structure(fuzzed_files, tmp_path, data):
    """Valid zips with changed JSON values or swapped entries: the checks
    past the zip layer."""
    good, X = data.draw(st.sampled_from(fuzzed_files))
    entries = read_zip(good)
    meta = json.loads(entries["model.json"])
    how = data.draw(st.sampled_from(["value", "value", "value", "swap"]))
    if how == "swap":
        names = sorted(n for n in entries if n.endswith(".npy"))
        a, b = data.draw(st.lists(st.sampled_from(names), min_size=2, max_size=2,
                                  unique=True))
        entries[a], entries[b] = entries[b], entries[a]
    else:
        for _ in range(data.draw(st.integers(1, 3))):
            where, old = data.draw(st.sampled_from(leaves(meta)[1:]))
            if type(old) is int and data.draw(st.booleans()):
                value = old + data.draw(st.sampled_from([-1, 1, 7, -old]))
            else:
                value = data.draw(st.sampled_from(_ODD_VALUES))
            node = meta
            for key in where[:-1]:
                node = node[key]
            node[where[-1]] = value
    path = write_zip(tmp_path / "fuzz.skls", entries, meta if how == "value" else None)
    loads_or_refuses(path, X)
