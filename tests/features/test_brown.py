"""BrownClusters: exact against a brute-force agglomerative clustering, its
paths, its files and its input checks."""
import math
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

import sklstruct
from sklstruct import BrownClusters, SequenceVectorizer
from sklstruct.features import clusters as clusters_module
from sklstruct.features.clusters import _average_mutual_information, _count, _within


# -- the brute-force reference ---------------------------------------------------------------

def brute_force(X, n_clusters, min_count=1, follow=None, tol=1e-9):
    """Liang's windowed Brown clustering, every candidate merge scored by
    recomputing the AMI of the whole cluster bigram model from scratch.

    The same model as BrownClusters (documented there): p(c) = count / T over
    all T tokens, p(c, d) = bigrams within sentences / B over all B adjacent
    pairs within sentences, words below min_count left out of both, the
    vocabulary by decreasing count, ties by first occurrence.  With
    ``follow`` (the merges BrownClusters made), each of them must lose no
    more than the best merge (+ tol) and is the one taken, so that a tie
    broken another way does not fork the two runs.  Returns the vocabulary,
    the merges (node ids as in ``merges_``), the loss and AMI after each
    merge, and the AMI when the last word has been merged.
    """
    words = [[t if isinstance(t, str) else t[0] for t in s] for s in X]
    vocab, counts, ranks, lengths = _count(words, min_count)
    n, T = len(vocab), len(ranks)
    within = _within(lengths, T)
    B = max(int(within.sum()), 1)
    bigrams = {}
    for k in range(T - 1):
        if within[k] and ranks[k] >= 0 and ranks[k + 1] >= 0:
            key = (int(ranks[k]), int(ranks[k + 1]))
            bigrams[key] = bigrams.get(key, 0) + 1

    def ami(clusters):
        cluster_of = {w: c for c, ws in clusters.items() for w in ws}
        p1 = {c: sum(int(counts[w]) for w in ws) / T for c, ws in clusters.items()}
        p2 = {}
        for (a, b), k in bigrams.items():
            if a in cluster_of and b in cluster_of:
                key = (cluster_of[a], cluster_of[b])
                p2[key] = p2.get(key, 0) + k
        return sum(k / B * math.log2(k / B / (p1[c] * p1[d])) for (c, d), k in p2.items())

    C = min(n_clusters, n)
    clusters = {w: {w} for w in range(C)}
    merges, losses, amis = [], [], []

    def merge():
        base = ami(clusters)
        ids = sorted(clusters)
        candidates = {}
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                trial = {c: ws for c, ws in clusters.items() if c not in (a, b)}
                trial[-1] = clusters[a] | clusters[b]
                candidates[a, b] = base - ami(trial)
        best = min(candidates.values())
        if follow is not None:
            a, b = follow[len(merges)]
            assert candidates[a, b] <= best + tol, (len(merges), candidates[a, b], best)
        else:
            a, b = min(candidates, key=lambda ab: (candidates[ab], ab))
        clusters[n + len(merges)] = clusters.pop(a) | clusters.pop(b)
        merges.append((a, b))
        losses.append(candidates[a, b])
        amis.append(ami(clusters))

    for w in range(C, n):
        clusters[w] = {w}
        merge()
    ami_c = ami(clusters)
    while len(clusters) > 1:
        merge()
    return vocab, merges, losses, amis, ami_c


def assert_exact(X, n_clusters, min_count=1):
    model = BrownClusters(n_clusters=n_clusters, min_count=min_count).fit(X)
    follow = [tuple(m) for m in model.merges_.tolist()]
    vocab, merges, losses, amis, ami_c = brute_force(X, n_clusters, min_count, follow)
    assert model.vocabulary_ == vocab
    assert follow == merges
    np.testing.assert_allclose(model.merge_losses_, losses, rtol=0, atol=1e-9)
    np.testing.assert_allclose(model.merge_mutual_information_, amis, rtol=0, atol=1e-9)
    assert model.mutual_information_ == pytest.approx(ami_c, abs=1e-9)
    return model


# Zipf-like small corpora: a few frequent words, ties of counts, repeats
# (bigrams "a a"), sentences of one token and empty sentences.
corpora = st.lists(st.lists(st.integers(0, 11).map(lambda k: f"w{k * k // 12}"), max_size=9),
                   min_size=1, max_size=8).filter(lambda X: any(X))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(X=corpora, n_clusters=st.integers(1, 12), min_count=st.sampled_from([1, 1, 2]))
def test_exact_against_brute_force(X, n_clusters, min_count):
    words = {w for s in X for w in s}
    if all(sum(s.count(w) for s in X) < min_count for w in words):
        with pytest.raises(ValueError, match="min_count"):
            BrownClusters(n_clusters=n_clusters, min_count=min_count).fit(X)
        return
    assert_exact(X, n_clusters, min_count)


@pytest.mark.parametrize("n_clusters", [1, 2, 5, 12, 40, 1000])
def test_exact_on_a_larger_vocabulary(n_clusters):
    """n_clusters below, near and above the vocabulary (about 30 words).
    Each merge must be a best one within 1e-9 (so the brute force's own
    choice wherever the best is ahead by more); where words of count 1 tie,
    the two may break the tie differently."""
    rng = np.random.default_rng(n_clusters)
    X = [[f"w{min(int(rng.exponential(7)), 40)}" for _ in range(rng.integers(1, 15))]
         for _ in range(25)]
    assert_exact(X, n_clusters)


def test_a_tiny_example_by_hand():
    X = [["a", "b"], ["a", "b"], ["c"]]
    model = assert_exact(X, 3)
    assert model.vocabulary_ == ["a", "b", "c"]     # a, b: 2 each, a first; c: 1
    assert model.counts_ == {"a": 2, "b": 2, "c": 1}
    # p(a, b) = 2 / 2 (B = 2 pairs), p(a) = p(b) = 2 / 5 (T = 5 tokens)
    assert model.mutual_information_ == pytest.approx(math.log2(1 / (0.4 * 0.4)))


# -- the paths ------------------------------------------------------------------------------

def paths_from_tree(model):
    """Each word's path read bottom-up from merges_, independently of fit:
    the branches of the merges made after the last word was added."""
    n = len(model.vocabulary_)
    n_stage1 = n - model.n_clusters_
    parent = {}
    for k, (a, b) in enumerate(model.merges_.tolist()):
        parent[a] = (n + k, "0", k >= n_stage1)
        parent[b] = (n + k, "1", k >= n_stage1)
    out = {}
    for i, w in enumerate(model.vocabulary_):
        bits, node = [], i
        while node in parent:
            node, bit, counted = parent[node]
            if counted:
                bits.append(bit)
        out[w] = "".join(reversed(bits))
    return out


@settings(max_examples=30, deadline=None)
@given(X=corpora, n_clusters=st.integers(1, 12))
def test_paths_form_a_prefix_free_code_of_the_merge_tree(X, n_clusters):
    model = BrownClusters(n_clusters=n_clusters).fit(X)
    paths = model.clusters_
    assert paths == paths_from_tree(model)
    assert set(paths) == set(model.vocabulary_)
    distinct = sorted(set(paths.values()))
    assert len(distinct) == model.n_clusters_ == min(n_clusters, len(model.vocabulary_))
    assert all(set(p) <= {"0", "1"} for p in distinct)
    for a, b in zip(distinct[:-1], distinct[1:]):
        assert not b.startswith(a)
    if len(distinct) > 1:          # a full binary tree: the Kraft sum is 1
        assert sum(2.0 ** -len(p) for p in distinct) == 1.0
    # the final AMI is that of the partition the paths name
    words = [w for s in X for w in s]
    ids = {p: i for i, p in enumerate(distinct)}
    cluster_of = [ids[paths[w]] for w in words]
    assert _average_mutual_information(cluster_of, [len(s) for s in X]) == pytest.approx(
        model.mutual_information_, abs=1e-9)


def test_min_count_leaves_rare_words_out():
    X = [["the", "cat", "sat"], ["the", "dog", "sat"], ["the", "cat", "ran"]]
    model = assert_exact(X, 2, min_count=2)
    assert set(model.clusters_) == {"the", "cat", "sat"}
    out = model.transform([["the", "dog"]])
    assert out == [[("the", model.clusters_["the"]), ("dog", "")]]


# -- determinism and threads ----------------------------------------------------------------

def fitted_state(model):
    return (model.clusters_, model.merges_.tolist(), model.merge_losses_.tolist(),
            model.merge_mutual_information_.tolist(), model.mutual_information_)


def random_corpus(seed, n_sentences=120, vocabulary=300):
    rng = np.random.default_rng(seed)
    return [[f"w{min(int(rng.zipf(1.3)), vocabulary)}" for _ in range(rng.integers(1, 20))]
            for _ in range(n_sentences)]


def test_deterministic_and_the_same_with_threads(monkeypatch):
    X = random_corpus(0)
    one = BrownClusters(n_clusters=20).fit(X)
    assert fitted_state(one) == fitted_state(BrownClusters(n_clusters=20).fit(X))
    # threads on a small table, and the step-by-step driver of verbose
    monkeypatch.setattr(clusters_module, "MIN_ROWS_PER_THREAD", 1)
    for params in ({"n_jobs": 2}, {"n_jobs": -1}, {"verbose": 1}):
        assert fitted_state(BrownClusters(n_clusters=20, **params).fit(X)) == fitted_state(one)


def test_verbose_reports_progress(capsys):
    BrownClusters(n_clusters=5, verbose=1).fit(random_corpus(1, 300, 2000))
    out = capsys.readouterr()
    assert "words, AMI" in out.out and "done:" in out.out and out.err == ""


def test_verbose_2_shows_a_bar_of_the_merges_and_clusters_the_same(capsys):
    """verbose=2: tqdm's bar of the n - 1 merges on standard error, the
    lines of verbose=1 above it; verbose=0 shows nothing; the same clusters
    for every verbose."""
    pytest.importorskip("tqdm")
    X = random_corpus(1, 300, 2000)
    states = []
    for verbose in (0, 1, 2):
        brown = BrownClusters(n_clusters=5, verbose=verbose).fit(X)
        out = capsys.readouterr()
        states.append(fitted_state(brown))
        n = len(brown.vocabulary_)
        bar = "BrownClusters: 100%|"
        if verbose == 2:
            assert bar in out.err and f"{n - 1}/{n - 1}" in out.err, out.err
        else:
            assert bar not in out.err and "merges" not in out.err
        assert ("words, AMI" in out.out) == (verbose > 0)
    assert states[0] == states[1] == states[2]


def test_verbose_2_without_tqdm_prints_the_lines(monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)     # not installed
    X = random_corpus(2, 100, 500)
    with pytest.warns(UserWarning, match="pip install tqdm"):
        brown = BrownClusters(n_clusters=5, verbose=2).fit(X)
    out = capsys.readouterr()
    assert "done:" in out.out and out.err == ""
    assert fitted_state(brown) == fitted_state(BrownClusters(n_clusters=5).fit(X))


# -- transform and the feature templates ----------------------------------------------------

def test_transform_appends_the_path_as_a_column():
    X = [[("the", "DT"), ("cat", "NN")], [("a", "DT"), ("cat", "NN")]]
    model = BrownClusters(n_clusters=2).fit(X)
    Xt = model.transform(X + [[("emu", "NN")]])
    assert Xt[0][1] == ("cat", "NN", model.clusters_["cat"])
    assert Xt[2] == [("emu", "NN", "")]
    assert model.transform([["cat"]]) == [[("cat", model.clusters_["cat"])]]
    assert model.transform([[{"word": "cat"}]]) == [[{"word": "cat",
                                                      "brown": model.clusters_["cat"]}]]
    vec = SequenceVectorizer(["prefix1(col2)", "col2"]).fit(Xt)
    names = vec.token_features(Xt)[0][1]
    assert names == [f"prefix1(col2)={model.clusters_['cat'][:1]}",
                     f"col2={model.clusters_['cat']}"]
    assert model.fit_transform(X) == model.transform(X)


def test_clone_get_params_and_pickle():
    model = BrownClusters(n_clusters=7, min_count=2, n_jobs=2)
    assert clone(model).get_params() == model.get_params() == {
        "n_clusters": 7, "min_count": 2, "n_jobs": 2, "verbose": 0}
    model.fit(random_corpus(2))
    assert not hasattr(clone(model), "clusters_")
    assert fitted_state(pickle.loads(pickle.dumps(model))) == fitted_state(model)
    assert sklstruct.BrownClusters is BrownClusters and "BrownClusters" in sklstruct.__all__


# -- the paths files ------------------------------------------------------------------------

def test_save_load_round_trip(tmp_path):
    model = BrownClusters(n_clusters=10).fit(random_corpus(3) + [["naïve", "日本", "naïve"]])
    path = tmp_path / "paths"
    model.save(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(model.clusters_)
    bits, word, count = lines[0].split("\t")
    assert model.clusters_[word] == bits and model.counts_[word] == int(count)
    loaded = BrownClusters.load(path)
    assert loaded.clusters_ == model.clusters_ and loaded.counts_ == model.counts_
    assert loaded.n_clusters_ == 10 and set(loaded.vocabulary_) == set(model.vocabulary_)
    counts = [loaded.counts_[w] for w in loaded.vocabulary_]
    assert counts == sorted(counts, reverse=True)
    X = random_corpus(4)
    assert loaded.transform(X) == model.transform(X)
    loaded.save(tmp_path / "again")
    assert (tmp_path / "again").read_bytes() == path.read_bytes()


@pytest.mark.parametrize("text, line, match", [
    ("0\tthe\t5\n1 cat 3\n", 2, "3 tab-separated|1 tab-separated"),
    ("0\tthe\t5\n1\tcat\n", 2, "2 tab-separated"),
    ("0\tthe\t5\n12\tcat\t3\n", 2, "not a string of 0 and 1"),
    ("0\tthe\t5\n1\tthe\t3\n", 2, "already on line 1"),
    ("0\tthe\t5\n1\tcat\t-3\n", 2, "not a positive integer"),
    ("0\tthe\t5\n1\tcat\tmany\n", 2, "not a positive integer"),
    ("0\tthe\t5\n1\t\t3\n", 2, "word is empty"),
    ("0\tthe\t5\n01\tcat\t3\n", 2, "extends path '0'"),
    ("0\tthe\t5\n1\tca\xfft\t3\n", 2, "not UTF-8"),
])
def test_malformed_files_name_the_file_and_line(tmp_path, text, line, match):
    path = tmp_path / "paths"
    path.write_bytes(text.encode("utf-8") if "\xff" not in text else
                     text.encode("latin-1"))
    with pytest.raises(ValueError, match=match) as info:
        BrownClusters.load(path)
    assert f"{path}, line {line}:" in str(info.value)


def test_empty_file(tmp_path):
    path = tmp_path / "empty"
    path.write_text("\n")
    with pytest.raises(ValueError, match=f"{path}: contains no clusters"):
        BrownClusters.load(path)


# -- hostile input --------------------------------------------------------------------------

@pytest.mark.parametrize("X, error, match", [
    ([["the", 5]], TypeError, r"X\[0\]\[1\]: word 5 is not a string"),
    ([["the"], ["a", None]], TypeError, r"X\[1\]\[1\]: word None is not a string"),
    ([["the", (None, "DT")]], TypeError, r"X\[0\]\[1\]: word None is not a string"),
    ([["the", ()]], ValueError, r"X\[0\]\[1\]: token is an empty tuple"),
    ([["the", {"pos": "DT"}]], ValueError, r"X\[0\]\[1\]: token .* has no key 'word'"),
    ([["the", ""]], ValueError, r"X\[0\]\[1\]: word is empty"),
    ([["a"], ["b", "x" * 10**6]], ValueError, r"X\[1\]\[1\]: word of 1000000 characters"),
    ([["a\tb"]], ValueError, r"X\[0\]\[0\]: .* contains a tab"),
    ([["a\nb"]], ValueError, r"X\[0\]\[0\]: .* contains a newline"),
    ([["ok", "bad\udc80"]], ValueError, r"X\[0\]\[1\]: .*lone surrogate"),
    ([], ValueError, "X: contains no tokens"),
    ([[], []], ValueError, "X: contains no tokens"),
    (None, TypeError, "expected a list"),
    ("the cat", TypeError, "expected a list"),
    (["the cat"], TypeError, r"X\[0\]: expected a sequence of tokens"),
    ([[3.5]], TypeError, r"X\[0\]\[0\]: word 3.5 is not a string \(got float\)"),
])
def test_hostile_input_gives_clear_errors(X, error, match):
    with pytest.raises(error, match=match):
        BrownClusters(n_clusters=2).fit(X)


@pytest.mark.parametrize("params", [
    {"n_clusters": 0}, {"n_clusters": -1}, {"n_clusters": 2**31}, {"n_clusters": 10**20},
    {"n_clusters": 2.5}, {"n_clusters": "10"}, {"n_clusters": None}, {"n_clusters": True},
    {"min_count": 0}, {"min_count": True}, {"n_jobs": 0}, {"n_jobs": "2"},
])
def test_bad_parameters(params):
    with pytest.raises((ValueError, TypeError)):
        BrownClusters(**params).fit([["a", "b"]])


def test_unicode_words_and_a_huge_n_clusters():
    X = [["naïve", "日本", "😀"], ["日本", "naïve"]]
    model = assert_exact(X, 2**31 - 3)           # capped by the vocabulary
    assert set(model.clusters_) == {"naïve", "日本", "😀"} and model.n_clusters_ == 3
    single = BrownClusters().fit([["a", "a"]])
    assert single.clusters_ == {"a": ""} and single.merges_.shape == (0, 2)


def test_transform_checks_its_input_and_needs_a_fit():
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        BrownClusters().transform([["a"]])
    model = BrownClusters(n_clusters=2).fit([["a", "b"]])
    with pytest.raises(TypeError, match=r"X\[0\]\[0\]: word 1 is not a string"):
        model.transform([[1]])
    with pytest.raises(NotFittedError):
        BrownClusters().save("never-written")


def test_a_failed_fit_leaves_the_model_as_it_was():
    model = BrownClusters(n_clusters=2).fit([["a", "b", "a"]])
    before = fitted_state(model)
    with pytest.raises(TypeError):
        model.fit([["a", 1]])
    assert fitted_state(model) == before
