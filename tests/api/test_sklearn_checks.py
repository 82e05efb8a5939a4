"""scikit-learn's own estimator checks: the ones that apply to estimators of
sentences run on every tagger, parser and vectorizer; the tags say what the
input and output are, so that ``check_estimator`` skips the rest instead of
failing them for the wrong reason."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import SkipTestWarning
from sklearn.pipeline import make_pipeline
from sklearn.utils import get_tags
from sklearn.utils import estimator_checks as ec
from _oracles import make

from sklstruct import DictSequenceVectorizer, SequenceVectorizer, StructuredPerceptronTagger
from sklstruct._registry import ESTIMATORS, TAGGERS
from sklstruct.datasets import make_chunking_corpus
from sklstruct.model_selection import cross_val_predict

#: The checks of scikit-learn's API that need no data: they apply as they are.
APPLICABLE = [ec.check_estimator_cloneable, ec.check_estimator_tags_renamed,
              ec.check_valid_tag_types, ec.check_estimator_repr,
              ec.check_no_attributes_set_in_init, ec.check_do_not_raise_errors_in_init_or_set_params,
              ec.check_mixin_order, ec.check_parameters_default_constructible,
              ec.check_get_params_invariance, ec.check_set_params]

#: Why the others do not apply: each makes its own data as a 2-D numeric
#: array X with a 1-D target (or none).  A tagger takes a list of sentences
#: (one feature matrix each) and a list of label sequences, a parser lists of
#: words and trees, a vectorizer lists of token lists; the tags say so.  What
#: those checks test is tested here on sentence data instead:
NOT_APPLICABLE = {
    "fit returns self, n_features_in_, unfitted errors, fit idempotent, "
    "no parameter overwritten, pickling, clone of a fitted model": "test_sklearn_api.py",
    "readonly / memmapped input, malformed sparse rows, NaN and huge values, "
    "one-sample and one-feature fits, wrong feature counts": "test_hostile.py, "
                                                             "test_validation.py",
    "subset and sample-order invariance of predictions": "test_parallel_predict.py "
                                                          "(blocks of sentences)",
}

SENTENCE_ESTIMATORS = {**ESTIMATORS, "SequenceVectorizer": SequenceVectorizer,
                       "DictSequenceVectorizer": DictSequenceVectorizer}


@pytest.mark.parametrize("name", sorted(SENTENCE_ESTIMATORS))
@pytest.mark.parametrize("check", APPLICABLE, ids=lambda c: c.__name__)
def test_applicable_sklearn_checks_pass(name, check):
    est = make(SENTENCE_ESTIMATORS[name])
    check(type(est).__name__, est)


@pytest.mark.parametrize("name", sorted(SENTENCE_ESTIMATORS))
def test_tags_say_no_2d_array_so_check_estimator_skips_the_data_checks(name):
    est = make(SENTENCE_ESTIMATORS[name])
    tags = get_tags(est)
    assert not tags.input_tags.two_d_array
    if name in ESTIMATORS:
        assert tags.target_tags.required and tags.estimator_type is None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ec.check_estimator(est)
    assert any(issubclass(w.category, SkipTestWarning) and "requires input" in str(w.message)
               for w in caught)
    assert NOT_APPLICABLE


def test_set_output_refuses_tables_clearly():
    X, y = make_chunking_corpus(20, random_state=0)
    vec = SequenceVectorizer(templates=("word",))
    assert vec.set_output(transform="default") is vec
    for container in ("pandas", "polars"):
        with pytest.raises(ValueError, match="list of sentences"):
            make_pipeline(vec, StructuredPerceptronTagger()).set_output(transform=container)
    assert len(vec.fit_transform(X)) == 20


@pytest.mark.parametrize("method", ["predict", "predict_kbest"])
def test_cross_val_predict_gives_each_sentence_its_out_of_fold_prediction(method):
    from sklearn.model_selection import KFold

    X, y = make_chunking_corpus(90, random_state=1)
    model = make_pipeline(SequenceVectorizer(templates=("word", "pos")),
                          StructuredPerceptronTagger(max_iter=2, random_state=0))
    pred = cross_val_predict(model, X, y, cv=KFold(3), method=method)
    assert len(pred) == len(X)
    for train, test in KFold(3).split(X):
        fold = model.fit([X[i] for i in train], [y[i] for i in train])
        held_out = [X[i] for i in test]
        expected = (fold.predict(held_out) if method == "predict"
                    else fold[-1].predict_kbest(fold[:-1].transform(held_out)))
        for i, e in zip(test, expected):
            if method == "predict":
                np.testing.assert_array_equal(pred[i], e)
            else:
                np.testing.assert_array_equal(pred[i][1], e[1])
    with pytest.raises(ValueError, match="partition"):
        cross_val_predict(model, X, y, cv=[(np.arange(30, 90), np.arange(0, 60))])


@pytest.mark.parametrize("name", sorted(TAGGERS))
def test_cross_validation_of_taggers_is_not_stratified(name):
    from sklearn.model_selection import check_cv
    assert type(check_cv(3, [["a"]] * 6, classifier=False)).__name__ == "KFold"
    assert get_tags(TAGGERS[name]()).estimator_type != "classifier"
