"""``n_jobs`` on prediction: threads over blocks of sentences give exactly the
serial predictions, k-best lists and scores, for every tagger."""
import numpy as np
import pytest
from joblib import parallel_config
from _oracles import make

from sklstruct import M3NTagger, SequenceVectorizer
from sklstruct._registry import TAGGERS
from sklstruct.datasets import make_chunking_corpus


@pytest.fixture(scope="module")
def corpus():
    X, y = make_chunking_corpus(700, random_state=3)   # several ranges of 2,048 tokens
    vec = SequenceVectorizer(templates=("word", "pos"), window=1)
    return vec.fit_transform(X[:200]), y[:200], vec.transform(X[200:]), y[200:]


def same_outputs(model, X, y):
    model.set_params(n_jobs=1)
    serial = (model.predict(X), model.predict_kbest(X[:300], k=3), model.score(X, y))
    for n_jobs in (2, -1):
        model.set_params(n_jobs=n_jobs)
        pred, kbest, score = model.predict(X), model.predict_kbest(X[:300], k=3), model.score(X, y)
        assert score == serial[2]
        for a, b in zip(pred, serial[0]):
            np.testing.assert_array_equal(a, b)
        for (pa, sa), (pb, sb) in zip(kbest, serial[1]):
            np.testing.assert_array_equal(sa, sb)
            for a, b in zip(pa, pb):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(TAGGERS))
def test_threads_predict_exactly_as_serial(corpus, name):
    X_train, y_train, X, y = corpus
    model = make(TAGGERS[name], max_iter=2, random_state=0).fit(X_train, y_train)
    same_outputs(model, X, y)


def test_kernel_model_threads_predict_exactly_as_serial(corpus):
    X_train, y_train, X, y = corpus
    model = M3NTagger(kernel="poly", max_iter=2, eta0=0.01, random_state=0)
    same_outputs(model.fit(X_train[:80], y_train[:80]), X, y)


def test_a_process_backend_configured_by_the_user_still_gets_threads(corpus):
    """require="sharedmem": a global loky configuration does not make
    prediction copy the model to processes."""
    X_train, y_train, X, y = corpus
    model = TAGGERS["perceptron"](max_iter=1, random_state=0, n_jobs=2).fit(X_train, y_train)
    expected = model.predict(X)
    with parallel_config(backend="loky"):
        for a, b in zip(model.predict(X), expected):
            np.testing.assert_array_equal(a, b)


def test_threads_shared_by_concurrent_callers_and_a_forked_child(corpus):
    """The pool of prediction threads is kept for the process: callers in
    several threads at once share it, and a forked child starts its own."""
    import multiprocessing as mp
    from concurrent.futures import ThreadPoolExecutor

    X_train, y_train, X, y = corpus
    model = TAGGERS["pa"](max_iter=1, random_state=0, n_jobs=2).fit(X_train, y_train)
    expected = np.concatenate(model.predict(X))
    with ThreadPoolExecutor(3) as callers:
        for got in callers.map(lambda _: np.concatenate(model.predict(X)), range(6)):
            np.testing.assert_array_equal(got, expected)
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as child:
        got = child.apply(_predict_flat, (model, X))
    np.testing.assert_array_equal(got, expected)


def _predict_flat(model, X):
    return np.concatenate(model.predict(X))


def test_callers_asking_for_more_threads_replace_the_pool_safely(corpus):
    """A caller wanting more threads than the pool has replaces it while
    others are using it: every caller still gets its predictions."""
    from concurrent.futures import ThreadPoolExecutor

    X_train, y_train, X, y = corpus
    X = X[list(range(len(X))) * 3]                       # six blocks: up to six threads
    model = TAGGERS["pa"](max_iter=1, random_state=0).fit(X_train, y_train)
    expected = np.concatenate(model.predict(X))

    def predict(n_jobs):
        from sklearn.base import clone
        m = clone(model).set_params(n_jobs=n_jobs)
        m.__dict__.update({k: v for k, v in model.__dict__.items() if k.endswith("_")})
        return np.concatenate(m.predict(X))

    with ThreadPoolExecutor(4) as callers:
        for got in callers.map(predict, [2, 4, 3, 6, 2, 5, 3, 6]):
            np.testing.assert_array_equal(got, expected)


def test_blocks_run_inline_inside_a_pool_thread_and_errors_wait(corpus):
    """_run from inside one of the pool's threads runs its blocks there (a
    wait on the pool from its own thread could deadlock); after an error no
    block starts, and the error propagates once the blocks running have
    finished."""
    import threading
    import time
    model = TAGGERS["pa"](n_jobs=2)
    nested = model._run(lambda a, b: model._run(lambda c, d: (c, d), [(0, 1), (1, 2)]),
                        [(0, 1), (1, 2)])
    assert nested == [[(0, 1), (1, 2)]] * 2
    started, done = [], []

    def block(a, b):
        if a == 0:
            raise RuntimeError("first block")
        started.append(a)
        time.sleep(0.02)
        done.append(a)
    ranges = [(i, i + 1) for i in range(50)]
    with pytest.raises(RuntimeError, match="first block"):
        model._run(block, ranges)
    assert sorted(done) == sorted(started) and len(done) <= 2
    # a thread held up by one block leaves the others to the other thread:
    # the first block waits for the last, which only the other thread can run
    last_done, threads = threading.Event(), {}

    def held(a, b):
        threads[a] = threading.current_thread().name
        if a == 0:
            assert last_done.wait(timeout=30)
        if a == 9:
            last_done.set()
        return a
    assert model._run(held, ranges[:10]) == list(range(10))
    assert all(threads[i] != threads[0] for i in range(1, 10))


@pytest.mark.parametrize("n_jobs, n_sentences", [(2, 0), (2, 1), (2, 60), (2, 300), (2, 2000),
                                                 (-1, 2000), (1, 2000), (4, 9000)])
def test_prediction_ranges_cover_the_sentences_in_shrinking_ranges(n_jobs, n_sentences):
    """The threads' ranges partition the sentences: one range for one thread
    (at most one thread per 2,048 tokens); for k threads, ranges that shrink,
    the first 1 / (2k) of the tokens, each within a sentence of its share
    (1 / (2k) of the tokens left, at least 2,048, but the last)."""
    from sklstruct import PassiveAggressiveTagger
    from sklstruct._parallel import n_threads
    rng = np.random.default_rng(n_sentences)
    lengths = rng.integers(1, 60, n_sentences)
    lengths[: n_sentences // 10] = 200                  # long ones first
    offsets = np.r_[0, np.cumsum(lengths)]
    ranges = PassiveAggressiveTagger(n_jobs=n_jobs)._prediction_blocks(offsets)
    if n_sentences == 0:
        assert ranges == []
        return
    assert [a for a, _ in ranges] == [0] + [b for _, b in ranges[:-1]]
    assert ranges[-1][1] == n_sentences and all(a < b for a, b in ranges)
    assert all(type(a) is int and type(b) is int for a, b in ranges)
    total, longest = int(offsets[-1]), int(lengths.max())
    k = n_threads(n_jobs, -(-total // 2048))
    if k == 1:
        assert ranges == [(0, n_sentences)]
        return
    sizes = [int(offsets[b] - offsets[a]) for a, b in ranges]
    assert abs(sizes[0] - max(total // (2 * k), 2048)) < longest
    for a, size in zip(ranges[:-1], sizes[:-1]):
        share = max((total - int(offsets[a[0]])) // (2 * k), 2048)
        assert share - 2 * longest < size < share + 2 * longest
    assert all(b <= a + 2 * longest for a, b in zip(sizes, sizes[1:]))
    assert len(ranges) <= 2 * k * np.log(total) + total / 2048


def test_predict_refuses_weights_narrower_than_the_validated_data():
    """A fresh fit publishes classes_ and n_features_in_ at its start and coef_
    at its end: a predict in another thread validated X against the new width
    and decoded with the old, narrow weights (out-of-bounds reads: a segfault).
    The kernel's gate now checks the weights against the validated columns."""
    import scipy.sparse as sp

    from sklstruct import StructuredPerceptronTagger

    rng = np.random.default_rng(0)
    X = [sp.csr_matrix(rng.random((4, 3))) for _ in range(5)]
    y = [np.array(["a", "b", "a", "b"])] * 5
    model = StructuredPerceptronTagger(max_iter=1, random_state=0).fit(X, y)
    model.n_features_in_ = 50_000               # what a concurrent fit's start publishes
    wide = [sp.csr_matrix(([1.0], ([0], [49_999])), shape=(1, 50_000))]
    with pytest.raises(RuntimeError, match="refitted while it predicted"):
        model.predict(wide)


def test_predict_during_refits_in_another_thread_never_crashes():
    import threading

    import scipy.sparse as sp

    from sklstruct import StructuredPerceptronTagger

    rng = np.random.default_rng(1)
    narrow = [sp.csr_matrix(rng.random((5, 3))) for _ in range(20)]
    wide = [sp.csr_matrix(rng.random((5, 3000))) for _ in range(20)]
    y = [np.array(["a", "b", "c", "a", "b"])] * 20
    model = StructuredPerceptronTagger(max_iter=1, random_state=0).fit(narrow, y)
    stop, failures = threading.Event(), []

    def refit():
        for i in range(30):
            model.fit(wide if i % 2 == 0 else narrow, y)
        stop.set()

    thread = threading.Thread(target=refit)
    thread.start()
    while not stop.is_set():
        for X in (narrow, wide):
            try:
                for labels in model.predict(X):
                    assert set(labels) <= {"a", "b", "c"}
            except (ValueError, RuntimeError) as exc:   # caught mid-fit: a clear error
                failures.append(str(exc))
    thread.join()
    assert all(failures), failures


@pytest.mark.parametrize("n_jobs, n_sentences, per_thread", [
    (1, 3000, 4), (2, 0, 4), (2, 100, 4), (2, 1000, 4), (2, 9000, 4), (2, 9000, 1)])
def test_block_ranges_are_whole_blocks_several_per_thread(n_jobs, n_sentences, per_thread):
    """block_ranges: consecutive ranges of whole blocks covering the
    sentences, one for one thread, else up to per_thread per thread."""
    from sklstruct._parallel import block_ranges, n_threads
    ranges = block_ranges(n_jobs, 256, n_sentences, per_thread=per_thread)
    if n_sentences == 0:
        assert ranges == []
        return
    assert ranges[0][0] == 0 and ranges[-1][1] == n_sentences
    assert all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
    assert all(a % 256 == 0 and a < b for a, b in ranges)
    n_blocks = -(-n_sentences // 256)
    k = n_threads(n_jobs, n_blocks)
    assert len(ranges) == (1 if k == 1 else min(k * per_thread, n_blocks))
