"""LabelDictionaryFeatures and GazetteerFeatures (issue 29, item 4): exact
against plain-Python references token by token (hypothesis), cross-fitting
(a training word never sees its own label), the rich presets with them,
clone / Pipeline / GridSearchCV / pickle, and hostile input."""
import pickle
import warnings
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline

from sklstruct import StructuredPerceptronTagger
from sklstruct.features import (GazetteerFeatures, LabelDictionaryFeatures,
                                SentenceFeatureUnion, SequenceVectorizer, feature_set)
from sklstruct.metrics import _end_of_chunk, _split_tag, _start_of_chunk

WORDS = ["Madrid", "madrid", "de", "Real", "el", "Juan", "ve", "A|b", ""]
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER", "B-ORG", "I-ORG"]


#: Labels conlleval reads oddly: POS tags (no hyphen: a type-less prefix),
#: "-LRB-" (an empty prefix), "B-" and "I-0" (no type), "E-X" (IOBES).
ODD_LABELS = ["NN", "-LRB-", "B-", "I-0", "E-X", "B-X", "O"]


@st.composite
def corpora(draw, max_sentences=8, max_len=6, labels=LABELS):
    n = draw(st.integers(2, max_sentences))
    lengths = [draw(st.integers(1, max_len)) for _ in range(n)]
    X = [[draw(st.sampled_from(WORDS[:-1])) for _ in range(t)] for t in lengths]
    y = [[draw(st.sampled_from(labels)) for _ in range(t)] for t in lengths]
    return X, y


# -- plain-Python references ----------------------------------------------------------------

def ld_reference(X_fit, y_fit, X, classes, window=1, labels="label", min_count=1):
    """Label-dictionary features of X (key: the lower-cased word), from the
    definition: per key, the fraction of its training tokens with each class
    (with "both", a type that is also a label's name is left to the label)."""
    counts, tokens = defaultdict(Counter), Counter()
    seen = {lab for ys in y_fit for lab in ys}
    for s, ys in zip(X_fit, y_fit):
        for w, lab in zip(s, ys):
            t = _split_tag(lab)[1] or lab
            tokens[w.lower()] += 1
            if labels in ("label", "both"):
                counts[w.lower()][lab] += 1
            if labels == "type" or (labels == "both" and t not in seen):
                counts[w.lower()][t] += 1
    rows = []
    for s in X:
        for p in range(len(s)):
            row = []
            for o in range(-window, window + 1):
                block = np.zeros(len(classes))
                if 0 <= p + o < len(s):
                    c = counts.get(s[p + o].lower(), Counter())
                    total = tokens[s[p + o].lower()]
                    if total >= min_count:
                        for j, k in enumerate(classes):
                            block[j] = c[k] / total
                row.append(block)
            rows.append(np.concatenate(row))
    return np.array(rows).reshape(-1, (2 * window + 1) * len(classes))


def conlleval_chunks(y):
    """(sentence, start, stop, type) of every chunk, token by token with
    conlleval's own rules; a chunk those never end ("NN" after "-LRB-")
    ends where the next chunk starts, or with its sentence."""
    out = []
    for i, ys in enumerate(y):
        prev_tag, prev_type, start, start_type = "O", "", None, ""
        for j, lab in enumerate(list(ys) + ["O"]):
            tag, typ = _split_tag(lab)
            starts = _start_of_chunk(prev_tag, tag, prev_type, typ)
            if start is not None and (_end_of_chunk(prev_tag, tag, prev_type, typ)
                                      or starts or j == len(ys)):
                out.append((i, start, j, start_type))
                start = None
            if starts:
                start, start_type = j, typ
            prev_tag, prev_type = tag, typ
    return out


def gaz_reference(X_fit, y_fit, X, types, max_length=8, min_count=1, lowercase=True):
    """Gazetteer features of X: entries from the chunks of y_fit, matched
    longest first, left to right, a token in at most one match."""
    norm = (lambda w: w.lower()) if lowercase else (lambda w: w)
    entries = defaultdict(Counter)
    for i, a, b, t in conlleval_chunks(y_fit):
        if b - a <= max_length:
            entries[tuple(norm(w) for w in X_fit[i][a:b])][t] += 1
    entries = {k: v for k, v in entries.items() if sum(v.values()) >= min_count}
    lengths = sorted({len(k) for k in entries}, reverse=True)
    rows = []
    for s in X:
        words = [norm(w) for w in s]
        feats = np.zeros((len(s), len(types) * 4))
        covered = [False] * len(s)
        for n in lengths:
            for a in range(len(s) - n + 1):
                key = tuple(words[a:a + n])
                if key in entries and not any(covered[a:a + n]):
                    c = entries[key]
                    total = sum(c.values())
                    for k in range(n):
                        covered[a + k] = True
                        pos = 3 if n == 1 else 0 if k == 0 else 2 if k == n - 1 else 1
                        for t, v in c.items():
                            feats[a + k, types.index(t) * 4 + pos] = v / total
        rows.append(feats)
    return np.vstack(rows)


def out_of_fold(reference, X, y, cv, random_state, **kw):
    """The cross-fitted features: each KFold test fold from the other folds."""
    parts = {}
    for train, test in KFold(cv, shuffle=True, random_state=random_state).split(X):
        feats = reference([X[i] for i in train], [y[i] for i in train],
                          [X[i] for i in test], **kw)
        bounds = np.cumsum([0] + [len(X[i]) for i in test])
        for j, i in enumerate(test):
            parts[i] = feats[bounds[j]:bounds[j + 1]]
    return np.vstack([parts[i] for i in range(len(X))])


# -- exactness --------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.one_of(corpora(), corpora(labels=ODD_LABELS)),
       st.sampled_from(["label", "type", "both"]), st.integers(0, 2), st.integers(1, 2))
def test_label_dictionary_is_its_definition(data, labels, window, min_count):
    X, y = data
    ld = LabelDictionaryFeatures(labels=labels, window=window, min_count=min_count,
                                 cv=2, random_state=0)
    ld.fit(X, y)
    classes = list(ld.classes_)
    k = len(classes)
    assert ld.get_feature_names_out().tolist()[window * k:(window + 1) * k] == \
        [f"lower:{c}" for c in classes]
    X_new = X[:2] + [["MADRID", "unseen", "de"]]
    want = ld_reference(X, y, X_new, classes, window, labels, min_count)
    np.testing.assert_allclose(ld.transform(X_new).matrix.toarray(), want)
    # cross-fitted: every fold from the other folds (KFold's folds)
    got = ld.fit_transform(X, y).matrix.toarray()
    want = out_of_fold(ld_reference, X, y, 2, 0, classes=classes, window=window,
                       labels=labels, min_count=min_count)
    np.testing.assert_allclose(got, want)


@settings(max_examples=60, deadline=None)
@given(st.one_of(corpora(), corpora(labels=ODD_LABELS)), st.integers(1, 3), st.integers(1, 2),
       st.booleans())
# a chunk conlleval never ends ("NN" after "-LRB-") and the next chunk's start
@example(([["Madrid"] * 4, ["Madrid"]], [["-LRB-", "NN", "O", "-LRB-"], ["NN"]]), 3, 1, False)
def test_gazetteer_is_its_definition(data, max_length, min_count, lowercase):
    X, y = data
    gaz = GazetteerFeatures(max_length=max_length, min_count=min_count, lowercase=lowercase,
                            cv=3 if len(X) >= 3 else 2, random_state=1)
    gaz.fit(X, y)
    types = list(gaz.types_)
    X_new = X + [["MADRID", "de", "Real", "Madrid", "de"]]
    want = gaz_reference(X, y, X_new, types, max_length, min_count, lowercase)
    np.testing.assert_allclose(gaz.transform(X_new).matrix.toarray(), want)
    got = gaz.fit_transform(X, y).matrix.toarray()
    want = out_of_fold(gaz_reference, X, y, gaz.cv, 1, types=types, max_length=max_length,
                       min_count=min_count, lowercase=lowercase)
    np.testing.assert_allclose(got, want)


def test_gazetteer_longest_match_first_then_left_to_right():
    X = [["new", "york", "city"], ["york", "city"], ["a", "a"]]
    y = [["B-LOC", "I-LOC", "O"], ["B-ORG", "I-ORG"], ["B-X", "I-X"]]
    gaz = GazetteerFeatures().fit(X, y)
    assert gaz.entries_ == {("new", "york"): {"LOC": 1}, ("york", "city"): {"ORG": 1},
                            ("a", "a"): {"X": 1}}
    names = gaz.get_feature_names_out().tolist()
    Xt = gaz.transform([["New", "York", "City"], ["a", "a", "a"]]).matrix.toarray()
    fired = [[names[j] for j in np.flatnonzero(row)] for row in Xt]
    # two entries of length 2 overlap: the left one wins, "city" is in none
    assert fired[:3] == [["gaz:LOC:B"], ["gaz:LOC:E"], []]
    assert fired[3:] == [["gaz:X:B"], ["gaz:X:E"], []]


def test_iobes_and_iob1_chunks_are_read_as_conlleval_reads_them():
    X = [["Juan", "Perez", "vive", "en", "La", "Paz"]]
    iobes = [["B-PER", "E-PER", "O", "O", "B-LOC", "E-LOC"]]
    iob1 = [["I-PER", "I-PER", "O", "O", "I-LOC", "I-LOC"]]
    for y in (iobes, iob1):
        gaz = GazetteerFeatures().fit(X, y)
        assert gaz.entries_ == {("juan", "perez"): {"PER": 1}, ("la", "paz"): {"LOC": 1}}


# -- cross-fitting ------------------------------------------------------------------------------

def test_a_training_word_never_sees_its_own_label():
    # every word occurs in one sentence only: out of fold, no word has a label
    X = [[f"w{i}", f"v{i}"] for i in range(10)]
    y = [["B-PER", "O"]] * 10
    for est in (LabelDictionaryFeatures(random_state=0), GazetteerFeatures(random_state=0)):
        crossed = est.fit_transform(X, y).matrix
        assert crossed.nnz == 0
        assert clone(est).fit(X, y).transform(X).matrix.nnz > 0   # the full dictionary
    # a word seen in other folds gets their counts, not its own
    X2 = [["Paris"], ["Paris"], ["Paris"], ["Paris"]]
    y2 = [["B-LOC"], ["B-LOC"], ["B-LOC"], ["B-PER"]]
    ld = LabelDictionaryFeatures(window=0, cv=4, random_state=0)
    rows = ld.fit_transform(X2, y2).matrix.toarray()
    assert ld.classes_.tolist() == ["B-LOC", "B-PER"]
    np.testing.assert_allclose(rows, [[2 / 3, 1 / 3]] * 3 + [[1, 0]])
    np.testing.assert_allclose(ld.transform(X2).matrix.toarray(), [[0.75, 0.25]] * 4)


def test_folds_follow_random_state():
    X = [[f"w{i % 3}"] for i in range(12)]
    y = [["B-A" if i % 2 else "O"] for i in range(12)]
    a = LabelDictionaryFeatures(random_state=0).fit_transform(X, y).matrix.toarray()
    b = LabelDictionaryFeatures(random_state=0).fit_transform(X, y).matrix.toarray()
    c = LabelDictionaryFeatures(random_state=3).fit_transform(X, y).matrix.toarray()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


# -- keys, tokens, the presets ------------------------------------------------------------------

def test_keys_read_any_column_and_are_dropped_when_missing():
    tagged = [[("Madrid", "NP"), ("es", "VS")], [("madrid", "NC")]]
    y = [["B-LOC", "O"], ["O"]]
    ld = LabelDictionaryFeatures(keys=("lower", "lower|pos", "shape"), window=0).fit(tagged, y)
    assert ld.keys_ == ["lower", "lower|pos", "shape"]
    row = dict(zip(ld.get_feature_names_out(), ld.transform([[("MADRID", "NP")]])[0]
                   .toarray()[0]))
    assert row["lower:B-LOC"] == 0.5 and row["lower|pos:B-LOC"] == 1.0
    assert row["shape:B-LOC"] == 0.0            # the shape X is unseen
    words = [[w for w, _ in s] for s in tagged]
    plain = LabelDictionaryFeatures(keys=("lower", "lower|pos")).fit(words, y)
    assert plain.keys_ == ["lower"]


@pytest.mark.parametrize("name", ["ner-rich", "chunking-rich"])
def test_rich_presets_learn_from_the_labels_on_words_and_tagged_tokens(name):
    words = [["Juan", "vive", "en", "Madrid", "."], ["Hola", "Madrid"], ["Juan", "ve"]] * 2
    y = [["B-PER", "O", "O", "B-LOC", "O"], ["O", "B-LOC"], ["B-PER", "O"]] * 2
    tagged = [[(w, "NC") for w in s] for s in words]
    for X in (words, tagged):
        union = feature_set(name, random_state=0)
        assert isinstance(union, SentenceFeatureUnion)
        Xt = union.fit_transform(X, y)
        assert [n for n, _ in union.transformers_] == [n for n, _ in union.transformer_list]
        assert Xt.matrix.shape[0] == 18
        assert Xt.matrix.shape[1] == len(union.get_feature_names_out())
        assert union.transform(X).matrix.shape == Xt.matrix.shape
    # fitted without labels: the template features, and a warning
    with pytest.warns(UserWarning, match="learn from the labels"):
        unlabeled = feature_set(name).fit(words)
    assert [n for n, _ in unlabeled.transformers_] == ["templates"]
    assert unlabeled.skipped_ == [n for n, _ in union.transformer_list[1:]]
    # off on request; the plain presets have none unless asked
    assert isinstance(feature_set(name, label_dictionary=False, gazetteer=False),
                      SequenceVectorizer)
    assert isinstance(feature_set("ner"), SequenceVectorizer)
    given = GazetteerFeatures(window=2)
    assert feature_set("ner", gazetteer=given).transformer_list[-1][1] is given
    with pytest.raises(TypeError, match="gazetteer: expected 'auto', a bool"):
        feature_set(name, gazetteer="yes")


def test_union_unlabeled_options():
    X = [["a", "b"], ["b"]]
    parts = [("t", SequenceVectorizer()), ("ld", LabelDictionaryFeatures())]
    SentenceFeatureUnion(parts, unlabeled="skip").fit(X)         # no warning
    with pytest.raises(ValueError, match="learn from the labels: fit with y"):
        SentenceFeatureUnion(parts, unlabeled="raise").fit(X)
    with pytest.raises(ValueError, match="every transformer"):
        SentenceFeatureUnion(parts[1:], unlabeled="skip").fit(X)


def test_pipeline_grid_search_clone_and_pickle():
    rng = np.random.RandomState(0)
    X, y = [], []
    for _ in range(24):
        n = rng.randint(2, 6)
        words = rng.choice(["Juan", "Ana", "vive", "en", "Madrid", "Lima", "y", "."], n)
        X.append(words.tolist())
        y.append(["B-PER" if w in ("Juan", "Ana") else "B-LOC" if w in ("Madrid", "Lima")
                  else "O" for w in words])
    pipe = make_pipeline(feature_set("ner-rich", random_state=0),
                         StructuredPerceptronTagger(max_iter=3, random_state=0))
    pipe.fit(X, y)
    assert [len(p) for p in pipe.predict(X[:3])] == [len(s) for s in X[:3]]
    twin = clone(pipe)
    assert twin.get_params()["sentencefeatureunion__label_dictionary__window"] == 1
    search = GridSearchCV(pipe, {"sentencefeatureunion__label_dictionary__window": [0, 1],
                                 "sentencefeatureunion__gazetteer__min_count": [1, 2]}, cv=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)     # y reaches every fit
        search.fit(X, y)
    assert search.best_score_ > 0.5
    back = pickle.loads(pickle.dumps(pipe))
    assert [p.tolist() for p in back.predict(X[:5])] == \
        [p.tolist() for p in pipe.predict(X[:5])]


# -- hostile input ------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [LabelDictionaryFeatures, GazetteerFeatures])
def test_bad_input_is_named(cls):
    X = [["a", "b"], ["c"]]
    y = [["O", "B-X"], ["O"]]
    with pytest.raises(TypeError, match="y is required"):
        cls().fit(X)
    with pytest.raises(ValueError, match=r"y\[1\]: has 2 labels but X\[1\] has 1 tokens"):
        cls().fit(X, [["O", "O"], ["O", "O"]])
    with pytest.raises(ValueError, match="has 1 label sequences but X has 2"):
        cls().fit(X, [["O", "O"]])
    with pytest.raises(TypeError, match=r"y\[0\]\[1\]: label None"):
        cls().fit(X, [["O", None], ["O"]])
    with pytest.raises(TypeError, match=r"X\[1\], token 0"):
        cls().fit([["a"], [3]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="empty"):
        cls().fit([["a"], []], [["O"], []])
    with pytest.raises(ValueError, match="cv=5 folds need at least 5 sentences"):
        cls().fit_transform(X, y)
    with pytest.raises(ValueError, match="window"):
        cls(window=-1).fit(X, y)
    with pytest.raises(ValueError, match="cv"):
        cls(cv=1).fit(X, y)
    with pytest.raises(ValueError, match="min_count"):
        cls(min_count=0).fit(X, y)
    fitted = cls().fit(X, y)
    with pytest.raises(TypeError, match=r"X\[0\], token 1"):
        fitted.transform([["a", b"b"]])
    # unseen, empty and huge words are just words; numbers are labels too
    out = fitted.transform([["", "\udcff" + "z" * 100000, "a"]])
    assert out.matrix.shape[0] == 3
    cls().fit(X, [[0, 1], [0]])


def test_label_dictionary_keys_are_checked():
    X, y = [["a"], ["b"]], [["O"], ["B-X"]]
    with pytest.raises(ValueError, match="at least one key"):
        LabelDictionaryFeatures(keys=()).fit(X, y)
    with pytest.raises(TypeError, match=r"keys\[0\]: expected a template string"):
        LabelDictionaryFeatures(keys=(3,)).fit(X, y)
    with pytest.raises(ValueError, match="without an offset"):
        LabelDictionaryFeatures(keys=("lower[-1]",)).fit(X, y)
    with pytest.raises(ValueError, match="gives a key twice"):
        LabelDictionaryFeatures(keys=("lower", "lower")).fit(X, y)
    with pytest.raises(ValueError, match="keys"):
        LabelDictionaryFeatures(keys=("pos",)).fit(X, y)
