"""The preset feature sets (sklstruct.features.presets): each a plain list of
templates with its window and a one-line description, and feature_set."""
import pytest

from sklstruct.features import (PRESETS, Preset, SentenceFeatureUnion, SequenceVectorizer,
                                feature_set)

S2_PLAIN = ["word", "suffix1", "suffix2", "suffix3", "first_lower", "first_upper",
            "first_alnum", "title_dot", "is_upper", "has_hyphen"]


def test_feature_sets_are_plain_templates():
    X = [[("The", "DT"), ("U.S.", "NNP"), ("well-known", "JJ"), ("1,000", "CD")],
         [("Mr.", "NNP"), ("x-ray", "NN")]]
    s1, s2, s3 = (feature_set(n) for n in ("S1", "S2", "S3"))
    assert s1.get_params()["window"] == s2.get_params()["window"] == 0
    assert s1.token_features(X) == SequenceVectorizer(["word"]).token_features(X)
    assert s2.token_features(X) == SequenceVectorizer(S2_PLAIN).token_features(X)
    explicit = [f"{t}[{k}]" for t in S2_PLAIN for k in (-1, 0, 1)]
    assert s3.token_features(X) == SequenceVectorizer(explicit).token_features(X)
    assert feature_set("S2").token_features(X)[1][0] == [
        "word=Mr.", "suffix1=.", "suffix2=r.", "suffix3=Mr.", "first_upper",
        "first_alnum", "title_dot"]
    s3w2 = feature_set("S3", window=2, min_freq=2).fit(X)
    assert s3w2.min_freq == 2 and len(s3w2.templates_) == 5 * len(S2_PLAIN)
    assert feature_set("S1", window=3).window == 0
    ner = feature_set("ner", window=3)
    assert ner.window == 1 and "pos[-1]|pos" in ner.templates and "shape" in ner.templates
    with pytest.raises(ValueError, match="Unknown feature set 'S4'"):
        feature_set("S4")




def test_swvm_feature_set_is_appendix_b():
    """Ringel, Dror & Reichart, Appendix B: 6 unigram, 9 bigram and 4 trigram
    templates over words and POS tags at offsets -1..+1."""
    vec = feature_set("swvm")
    assert vec.window == 0 and len(vec.templates) == 19
    arity = [t.count("|") + 1 for t in vec.templates]
    assert (arity.count(1), arity.count(2), arity.count(3)) == (6, 9, 4)
    X = [[("The", "DT"), ("dog", "NN"), ("barks", "VBZ")]]
    Xt = vec.fit_transform(X)
    # every template fires on the middle token; at the edges those that
    # need a missing neighbour do not (or fire on the boundary marker)
    assert Xt[0][1].nnz == 19




@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_has_a_description_and_builds_its_vectorizer(name):
    preset = PRESETS[name]
    assert isinstance(preset, Preset)
    text = preset.description
    assert isinstance(text, str) and text.strip() == text and text
    assert "\n" not in text and len(f"  {name}: {text}") <= 100
    assert preset.templates and all(isinstance(t, str) for t in preset.templates)
    vec = feature_set(name, window=3, min_freq=2)
    if preset.from_labels:
        # the rich presets add the features learned from the labels
        assert isinstance(vec, SentenceFeatureUnion)
        assert [n for n, _ in vec.transformer_list] == ["templates", "label_dictionary",
                                                        "gazetteer"]
        vec = vec.transformer_list[0][1]
    assert isinstance(vec, SequenceVectorizer) and vec.min_freq == 2
    assert vec.templates == list(preset.templates)
    assert vec.window == (3 if preset.window is None else preset.window)
    SequenceVectorizer(vec.templates, window=vec.window)._prepare()  # the templates parse


@pytest.mark.parametrize("name", ["ner-rich", "chunking-rich", "chunking", "ner"])
def test_presets_serve_plain_words_and_tagged_tokens(name):
    # issue 29, item 4: a preset's POS templates are dropped for word-only tokens
    words = [["Juan", "vive", "en", "Madrid", "."], ["Hola"]]
    tagged = [[(w, "NC") for w in s] for s in words]
    # (the templates alone: the features learned from labels need y)
    plain = feature_set(name, label_dictionary=False, gazetteer=False).fit(words)
    assert plain.templates_ and not any("pos" in t for t in plain.templates_)
    full = feature_set(name, label_dictionary=False, gazetteer=False).fit(tagged)
    assert any("pos" in t for t in full.templates_)
    assert set(plain.templates_) < set(full.templates_)
    assert plain.transform(words).matrix.shape[0] == 6
    # a vectorizer asked to raise still does
    with pytest.raises(ValueError, match="no column 'pos'"):
        SequenceVectorizer(list(PRESETS[name].templates)).fit(words)


def test_feature_set_with_embeddings_is_a_union_of_templates_and_vectors():
    import numpy as np
    from sklstruct.features import EmbeddingFeatures, SentenceFeatureUnion
    words = [["a", "b", "a"], ["c", "b"]]
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [1.0, 1.0]}
    union = feature_set("S1", embeddings=vectors)
    assert isinstance(union, SentenceFeatureUnion)
    Xt = union.fit_transform(words)
    alone = feature_set("S1").fit_transform(words).matrix
    emb = EmbeddingFeatures(vectors=vectors).fit_transform(words).matrix
    np.testing.assert_array_equal(Xt.matrix.toarray(),
                                  np.hstack([alone.toarray(), emb.toarray()]))
    given = EmbeddingFeatures(vectors=vectors, kmeans=(2,), random_state=0)
    assert feature_set("S1", embeddings=given).transformer_list[1][1] is given
