"""The spaCy components (sklstruct.integrations.spacy_component) on
spacy.blank("es") and CoNLL-2002 Spanish: doc.ents are the tagger's chunks,
token attributes its labels; batching, threads, saving and the errors."""
import math
from importlib import import_module
from pathlib import Path

import numpy as np
import pytest

spacy = pytest.importorskip("spacy", reason="the spaCy components need spaCy (pip install "
                                            "'sklstruct[spacy]')")
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from spacy.language import Language  # noqa: E402
from spacy.tokens import Doc, Token  # noqa: E402
from spacy.training import biluo_tags_to_spans, iob_to_biluo  # noqa: E402

from _data import require_data  # noqa: E402
from sklstruct import StructuredPerceptronTagger, feature_set  # noqa: E402
from sklstruct.datasets import read_conll  # noqa: E402
from sklstruct.integrations import spacy_component  # noqa: E402
from sklstruct.integrations.spacy_component import (MODEL_FILE, _read_model,  # noqa: E402
                                                    _write_model)
from sklstruct.metrics import _strict_chunks  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
N_TRAIN, N_TEST = 3000, 200

pytestmark = pytest.mark.filterwarnings(f"ignore::{ConvergenceWarning.__module__}."
                                        f"{ConvergenceWarning.__name__}")


def _fit(X, y):
    """A small model: the NER features and two epochs of the perceptron."""
    return make_pipeline(feature_set("ner"),
                         StructuredPerceptronTagger(max_iter=2, random_state=0)).fit(X, y)


@pytest.fixture(scope="module")
def spanish():
    """(train, testb) of CoNLL-2002 Spanish: (word, POS) tokens and entity labels."""
    X, y = read_conll(require_data("conll2002", "esp.train"))
    Xt, yt = read_conll(require_data("conll2002", "esp.testb"))
    return (X[:N_TRAIN], y[:N_TRAIN]), (Xt[:N_TEST], yt[:N_TEST])


@pytest.fixture(scope="module")
def models(spanish, tmp_path_factory):
    """Model files: NER on words, NER on (word, POS), POS tags from words."""
    (X, y), _ = spanish
    words = [[(w,) for w, _ in sentence] for sentence in X]
    tags = [[pos for _, pos in sentence] for sentence in X]
    folder = tmp_path_factory.mktemp("models")
    fitted = {"ner_words": _fit(words, y), "ner_pos": _fit(X, y), "pos_tags": _fit(words, tags)}
    paths = {}
    for name, model in fitted.items():
        paths[name] = folder / f"{name}.skl"
        _write_model(model, paths[name])
    return fitted, paths


def _docs(nlp, sentences, with_tags=False):
    """Docs of the sentences' words (and their POS tags as tag_)."""
    docs = []
    for sentence in sentences:
        doc = Doc(nlp.vocab, words=[token[0] for token in sentence])
        if with_tags:
            for token, (_, pos) in zip(doc, sentence):
                token.tag_ = pos
        docs.append(doc)
    return docs


def _ents(docs):
    return [[(e.start, e.end, e.label_) for e in doc.ents] for doc in docs]


def _chunks(labels, scheme, n_docs):
    """The tagger's chunks per sentence, by sklstruct's strict chunk rules."""
    out = [[] for _ in range(n_docs)]
    for kind, s, start, end in sorted(_strict_chunks(labels, scheme, "labels"),
                                      key=lambda c: (c[1], c[2])):
        out[s].append((start, end, kind))
    return out


# -- the target: doc.ents are the tagger's chunks ---------------------------------

def test_ents_equal_the_taggers_chunks_on_200_spanish_sentences(spanish, models):
    _, (Xt, _) = spanish
    fitted, paths = models
    nlp = spacy.blank("es")
    ner = nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["ner_words"])})
    assert ner.scheme_ == "IOB2" and ner.labels == ("LOC", "MISC", "ORG", "PER")
    docs = list(nlp.pipe(_docs(nlp, Xt)))
    words = [[(w,) for w, _ in sentence] for sentence in Xt]
    predicted = fitted["ner_words"].predict(words)
    expected = _chunks(predicted, "IOB2", len(docs))
    assert _ents(docs) == expected
    assert sum(map(len, expected)) > 300          # the test sees entities, many
    # and, read independently by spaCy's own IOB conversion, wherever the
    # predicted labels are valid IOB2 (no I-X without B-X or I-X before it)
    n_checked = 0
    for doc, labels in zip(docs, predicted):
        labels = list(labels)
        valid = all(not b.startswith("I-") or a[2:] == b[2:] and a != "O"
                    for a, b in zip(["O"] + labels, labels))
        if valid:
            spans = biluo_tags_to_spans(doc, iob_to_biluo(labels))
            assert [(s.start, s.end, s.label_) for s in spans] == _ents([doc])[0]
            n_checked += 1
    assert n_checked > 150


def test_extra_columns_give_the_taggers_chunks(spanish, models):
    _, (Xt, _) = spanish
    fitted, paths = models
    nlp = spacy.blank("es")
    nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["ner_pos"]),
                                          "columns": ["text", "tag_"]})
    docs = list(nlp.pipe(_docs(nlp, Xt, with_tags=True)))
    expected = _chunks(fitted["ner_pos"].predict(Xt), "IOB2", len(docs))
    assert _ents(docs) == expected


def test_pipe_batches_into_one_predict_call_and_matches_one_by_one(spanish, models):
    _, (Xt, _) = spanish
    _, paths = models
    nlp = spacy.blank("es")
    ner = nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["ner_words"])})
    one_by_one = _ents([nlp(doc) for doc in _docs(nlp, Xt)])
    calls = []
    predict = ner.estimator.predict

    def counting_predict(X):
        calls.append(len(X))
        return predict(X)

    ner.estimator.predict = counting_predict
    batched = _ents(nlp.pipe(_docs(nlp, Xt), batch_size=64))
    assert batched == one_by_one
    assert calls == [64, 64, 64, N_TEST - 3 * 64]
    assert len(calls) == math.ceil(N_TEST / 64)


def test_n_jobs_sets_the_models_threads_and_changes_nothing(spanish, models):
    _, (Xt, _) = spanish
    _, paths = models
    nlp = spacy.blank("es")
    serial = nlp.add_pipe("sklstruct_ner", name="serial",
                          config={"model_path": str(paths["ner_words"])})
    threaded = nlp.add_pipe("sklstruct_ner", name="threaded",
                            config={"model_path": str(paths["ner_words"]), "n_jobs": 2})
    params = threaded.estimator.get_params()
    assert params["structuredperceptrontagger__n_jobs"] == 2
    docs = _docs(nlp, Xt)
    assert _ents(serial.pipe(docs)) == _ents(threaded.pipe(_docs(nlp, Xt)))
    with pytest.raises(ValueError, match="n_jobs"):
        nlp.add_pipe("sklstruct_ner", name="bad", config={"model_path": str(paths["ner_words"]),
                                                          "n_jobs": 0})


def test_empty_documents_pass_through(models):
    _, paths = models
    nlp = spacy.blank("es")
    nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["ner_words"])})
    docs = list(nlp.pipe([Doc(nlp.vocab, words=[]), nlp("Juan vive en Madrid ."),
                          Doc(nlp.vocab, words=[])]))
    assert [len(doc) for doc in docs] == [0, 5, 0]
    assert docs[0].ents == () and docs[2].ents == ()


# -- other chunk schemes -----------------------------------------------------------

def _to_iobes(labels, s="S", e="E"):
    """IOB2 labels in IOBES (BILOU with s="U", e="L")."""
    out = []
    for i, label in enumerate(labels):
        following = labels[i + 1] if i + 1 < len(labels) else "O"
        ends = following != "I-" + label[2:]
        if label.startswith("B-"):
            out.append((s if ends else "B") + label[1:])
        elif label.startswith("I-"):
            out.append((e if ends else "I") + label[1:])
        else:
            out.append(label)
    return out


@pytest.mark.parametrize("scheme, letters", [("IOBES", ("S", "E")), ("BILOU", ("U", "L"))])
def test_iobes_and_bilou_models_by_their_schemes_rules(spanish, tmp_path, scheme, letters):
    (X, y), (Xt, _) = spanish
    model = _fit(X[:800], [_to_iobes(labels, *letters) for labels in y[:800]])
    path = tmp_path / "model.skl"
    _write_model(model, path)
    nlp = spacy.blank("es")
    ner = nlp.add_pipe("sklstruct_ner", config={"model_path": str(path),
                                                "columns": ["text", "tag_"]})
    assert ner.scheme_ == scheme                  # inferred from the labels
    docs = list(nlp.pipe(_docs(nlp, Xt, with_tags=True)))
    assert _ents(docs) == _chunks(model.predict(Xt), scheme, len(docs))
    # naming the scheme gives the same; naming one without S/E refuses the model
    nlp.add_pipe("sklstruct_ner", name="named", config={"model_path": str(path),
                                                        "columns": ["text", "tag_"],
                                                        "scheme": scheme.lower()})
    with pytest.raises(ValueError, match="prefixes"):
        nlp.add_pipe("sklstruct_ner", name="wrong", config={"model_path": str(path),
                                                            "columns": ["text", "tag_"],
                                                            "scheme": "BIO"})


def test_a_model_with_i_types_but_no_b_is_read_as_iob1():
    assert spacy_component._resolve_scheme(None, ["O", "I-PER", "I-LOC", "B-LOC"]) == "IOB1"
    assert spacy_component._resolve_scheme(None, ["O", "B-PER", "I-PER"]) == "IOB2"
    assert spacy_component._resolve_scheme("iob", ["O", "B-PER", "I-PER"]) == "IOB2"
    assert spacy_component._resolve_scheme(None, ["O"]) == "IOB2"


# -- the tagger component ------------------------------------------------------------

def test_tagger_sets_tag_and_an_extension(spanish, models):
    _, (Xt, _) = spanish
    fitted, paths = models
    words = [[(w,) for w, _ in sentence] for sentence in Xt]
    expected = [list(labels) for labels in fitted["pos_tags"].predict(words)]
    nlp = spacy.blank("es")
    nlp.add_pipe("sklstruct_tagger", config={"model_path": str(paths["pos_tags"])})
    nlp.add_pipe("sklstruct_tagger", name="to_extension",
                 config={"model_path": str(paths["pos_tags"]), "attr": "_.sk_tag"})
    assert Token.has_extension("sk_tag")
    assert "NC" in nlp.get_pipe("sklstruct_tagger").labels
    docs = list(nlp.pipe(_docs(nlp, Xt), batch_size=50))
    assert [[t.tag_ for t in doc] for doc in docs] == expected
    assert [[t._.sk_tag for t in doc] for doc in docs] == expected
    assert [[t.tag_ for t in nlp(doc)] for doc in _docs(nlp, Xt[:20])] == expected[:20]


def test_tagger_to_pos_takes_universal_tags_only(models, tmp_path):
    _, paths = models
    nlp = spacy.blank("es")
    with pytest.raises(ValueError, match="Universal Dependencies"):
        nlp.add_pipe("sklstruct_tagger", config={"model_path": str(paths["pos_tags"]),
                                                 "attr": "pos_"})
    X = [[("el",), ("perro",), ("corre",)], [("la",), ("casa",)]] * 20
    y = [["DET", "NOUN", "VERB"], ["DET", "NOUN"]] * 20
    path = tmp_path / "upos.skl"
    _write_model(_fit(X, y), path)
    nlp.add_pipe("sklstruct_tagger", config={"model_path": str(path), "attr": "pos_"})
    doc = nlp(Doc(nlp.vocab, words=["el", "perro", "corre"]))
    assert [t.pos_ for t in doc] == ["DET", "NOUN", "VERB"]


def test_tagger_score_reads_its_attribute(spanish, models):
    from spacy.training import Example

    _, (Xt, _) = spanish
    _, paths = models
    nlp = spacy.blank("es")
    nlp.add_pipe("sklstruct_tagger", config={"model_path": str(paths["pos_tags"])})
    gold = _docs(nlp, Xt[:50], with_tags=True)
    examples = [Example(nlp(_docs(nlp, [s])[0]), g) for s, g in zip(Xt[:50], gold)]
    scores = nlp.get_pipe("sklstruct_tagger").score(examples)
    assert 0.5 < scores["tag_acc"] <= 1.0


# -- saving ----------------------------------------------------------------------------

def test_to_disk_stores_the_model_beside_the_config(spanish, models, tmp_path):
    _, (Xt, _) = spanish
    fitted, paths = models
    copy = tmp_path / "original.skl"
    _write_model(fitted["ner_pos"], copy)
    nlp = spacy.blank("es")
    nlp.add_pipe("sklstruct_ner", config={"model_path": str(copy),
                                          "columns": ["text", "tag_"], "n_jobs": 2})
    nlp.add_pipe("sklstruct_tagger", name="tagger2", config={
        "model_path": str(paths["pos_tags"]), "attr": "_.sk_tag2"})
    before = _ents(nlp.pipe(_docs(nlp, Xt, with_tags=True)))
    nlp.to_disk(tmp_path / "pipeline")
    assert (tmp_path / "pipeline" / "config.cfg").is_file()
    assert (tmp_path / "pipeline" / "sklstruct_ner" / MODEL_FILE).is_file()
    copy.unlink()                   # the pipeline holds its own copy of the model
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.pipe_names == ["sklstruct_ner", "tagger2"]
    ner = loaded.get_pipe("sklstruct_ner")
    assert ner.columns == ["text", "tag_"] and ner.n_jobs == 2
    docs = list(loaded.pipe(_docs(loaded, Xt, with_tags=True)))
    assert _ents(docs) == before
    assert docs[0][0]._.sk_tag2 is not None

    # and through bytes
    blank = spacy.blank("es")
    other = blank.add_pipe("sklstruct_ner", config={"columns": ["text", "tag_"]})
    other.from_bytes(ner.to_bytes())
    assert _ents(blank.pipe(_docs(blank, Xt, with_tags=True))) == before


def test_from_disk_without_a_model_file_says_so(tmp_path):
    nlp = spacy.blank("es")
    ner = nlp.add_pipe("sklstruct_ner")
    with pytest.raises(FileNotFoundError, match="nlp.to_disk"):
        ner.from_disk(tmp_path)


def test_read_and_write_model_round_trip(models, tmp_path):
    fitted, _ = models
    X = [[("Juan",), ("vive",), ("en",), ("Madrid",)]]
    _write_model(fitted["ner_words"], tmp_path / "m.skl")
    again = _read_model(tmp_path / "m.skl")
    assert [list(p) for p in again.predict(X)] == [list(p) for p in
                                                   fitted["ner_words"].predict(X)]


# -- errors -------------------------------------------------------------------------------

def test_a_missing_model_file_is_reported_at_first_use(tmp_path):
    nlp = spacy.blank("es")
    missing = tmp_path / "nowhere.skl"
    nlp.add_pipe("sklstruct_ner", config={"model_path": str(missing)})
    with pytest.raises(FileNotFoundError, match="nowhere.skl"):
        nlp("Juan vive en Madrid")
    with pytest.raises(FileNotFoundError, match="nowhere.skl"):
        nlp.initialize()
    nlp = spacy.blank("es")
    nlp.add_pipe("sklstruct_tagger")
    with pytest.raises(ValueError, match="no model"):
        nlp("Juan vive en Madrid")


def test_ner_refuses_a_model_whose_labels_are_not_chunks(models):
    _, paths = models
    nlp = spacy.blank("es")
    with pytest.raises(ValueError, match="not chunk labels.*sklstruct_tagger"):
        nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["pos_tags"])})


def test_column_count_mismatch_is_refused(models):
    _, paths = models
    nlp = spacy.blank("es")
    with pytest.raises(ValueError, match=r"reads 2 token column.*columns=\['text'\]"):
        nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["ner_pos"])})
    with pytest.raises(ValueError, match=r"reads 1 token column.*gives 2"):
        nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["ner_words"]),
                                              "columns": ["text", "tag_"]})


def test_an_unset_extra_column_is_refused(models):
    _, paths = models
    nlp = spacy.blank("es")
    nlp.add_pipe("sklstruct_ner", config={"model_path": str(paths["ner_pos"]),
                                          "columns": ["text", "tag_"]})
    with pytest.raises(ValueError, match="'tag_'.*is empty.*before sklstruct_ner"):
        nlp("Juan vive en Madrid")


@pytest.mark.parametrize("config, error, match", [
    ({"columns": "text"}, TypeError, "list of token attribute"),
    ({"columns": ["text", "no_such_attr"]}, ValueError, "no attribute 'no_such_attr'"),
    ({"columns": ["text", "_.not_registered"]}, ValueError, "no token extension"),
    ({"scheme": "IOE"}, ValueError, "unknown chunk scheme"),
])
def test_bad_ner_configs(config, error, match):
    nlp = spacy.blank("es")
    with pytest.raises(error, match=match):
        nlp.add_pipe("sklstruct_ner", config=config)


def test_bad_tagger_attr():
    nlp = spacy.blank("es")
    with pytest.raises(ValueError, match="attr: expected one of tag_"):
        nlp.add_pipe("sklstruct_tagger", config={"attr": "dep_"})


def test_a_bare_tagger_is_not_a_model(spanish, tmp_path):
    (X, y), _ = spanish
    vec = feature_set("S1").fit(X[:50])
    tagger = StructuredPerceptronTagger(max_iter=1).fit(vec.transform(X[:50]), y[:50])
    path = tmp_path / "bare.skl"
    _write_model(tagger, path)
    nlp = spacy.blank("es")
    with pytest.raises(TypeError, match="no fitted sklstruct vectorizer"):
        nlp.add_pipe("sklstruct_ner", config={"model_path": str(path)})


# -- registration -------------------------------------------------------------------------

def test_factories_are_registered_by_the_module_and_the_entry_points():
    from importlib.metadata import entry_points

    assert Language.has_factory("sklstruct_ner") and Language.has_factory("sklstruct_tagger")
    expected = {"sklstruct_ner": spacy_component.make_ner,
                "sklstruct_tagger": spacy_component.make_tagger}
    for name, factory in expected.items():
        assert spacy.util.registry.factories.get(Language.get_factory_name(name)) is factory
    # the entry points of an installed sklstruct (an older editable install may
    # predate them) load the factories
    installed = {ep.name: ep for ep in entry_points(group="spacy_factories")
                 if ep.name in expected}
    for name, ep in installed.items():
        assert ep.load() is expected[name]
    # and the checkout's pyproject.toml declares them (tests run from a copy have none)
    if not (REPO / "pyproject.toml").is_file():
        return
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    points = project["entry-points"]["spacy_factories"]
    assert set(points) == set(expected)
    for name, target in points.items():
        module, _, attr = target.partition(":")
        assert getattr(import_module(module), attr) is expected[name]
    assert any(r.startswith("spacy") for r in project["optional-dependencies"]["spacy"])
    assert any(r.startswith("spacy") for r in project["optional-dependencies"]["test"])


def test_spacy_finds_the_factories_through_the_entry_points_alone(tmp_path):
    """A distribution declaring pyproject.toml's entry points (as an install
    of sklstruct does) lets spaCy make the components without an import of
    sklstruct.integrations.spacy_component."""
    import os
    import subprocess
    import sys

    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("no pyproject.toml: tests run from a copy (the installed entry points "
                    "are checked above)")
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dist = tmp_path / "sklstruct_entry_points-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sklstruct-entry-points\n"
                                   "Version: 0\n", encoding="utf-8")
    lines = ["[spacy_factories]"] + [f"{name} = {target}" for name, target in
                                     project["entry-points"]["spacy_factories"].items()]
    (dist / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import spacy\n"
            "assert 'sklstruct.integrations.spacy_component' not in sys.modules\n"
            "nlp = spacy.blank('es')\n"
            "nlp.add_pipe('sklstruct_ner'); nlp.add_pipe('sklstruct_tagger')\n"
            "print(nlp.pipe_names)\n")
    import sklstruct

    imported = Path(sklstruct.__file__).resolve().parents[1]    # the sklstruct these tests run
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(imported)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    # (run outside the checkout: from its root, its unbuilt sklstruct/ would be imported)
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env,
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "['sklstruct_ner', 'sklstruct_tagger']" in result.stdout
