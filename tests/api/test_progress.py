"""Progress: verbose=1 prints one line per epoch, verbose=2 adds tqdm's bar
over the sentences (a one-pass LaRank advances it during its pass), the same
model either way; the cutting-plane solver says how it stopped."""
import sys

import numpy as np
import pytest
from _oracles import random_problem

from sklstruct import LaRankTagger, SDMTagger, StructuredPerceptronTagger
from sklstruct import _progress

tqdm = pytest.importorskip("tqdm")


def weights(model):
    return [model.coef_, model.transition_coef_, model.start_coef_, model.end_coef_]


@pytest.mark.parametrize("make", [
    lambda v: StructuredPerceptronTagger(max_iter=3, random_state=0, verbose=v),
    lambda v: SDMTagger(max_iter=2, random_state=0, verbose=v),
    lambda v: LaRankTagger(max_iter=1, random_state=0, verbose=v),
])
def test_verbose_2_shows_a_bar_and_learns_the_same_model(make, capsys):
    X, y = random_problem(n=250, seed=3)
    quiet = make(0).fit(X, y)
    assert capsys.readouterr().out == ""
    lines = make(1).fit(X, y)
    out = capsys.readouterr()
    assert out.out.count("-- ") == lines.max_iter and out.err == ""
    bar = make(2).fit(X, y)
    out = capsys.readouterr()
    assert out.out.count("-- ") == bar.max_iter           # the lines, above the bar
    assert f"{250 * bar.max_iter}/{250 * bar.max_iter}" in out.err   # the bar, finished
    for a, b, c in zip(weights(quiet), weights(lines), weights(bar)):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert not hasattr(bar, "_bar")


def test_a_one_pass_larank_advances_its_bar_during_the_pass(monkeypatch):
    updates = []

    class Recording(tqdm.tqdm):
        def update(self, n=1):
            updates.append(n)
            return super().update(n)

    monkeypatch.setattr("tqdm.auto.tqdm", Recording)
    X, y = random_problem(n=300, seed=1)
    LaRankTagger(max_iter=1, random_state=0, verbose=2).fit(X, y)
    assert len([n for n in updates if n > 0]) >= 50 and sum(updates) == 300


def test_without_tqdm_verbose_2_prints_lines_and_says_why(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)     # import fails
    X, y = random_problem(n=40, seed=0)
    with pytest.warns(UserWarning, match="pip install tqdm"):
        StructuredPerceptronTagger(max_iter=2, random_state=0, verbose=2).fit(X, y)
    assert capsys.readouterr().out.count("-- Epoch") == 2


def test_no_bar_below_verbose_2():
    assert _progress.progress_bar(0, 10, "x", "y") is None
    assert _progress.progress_bar(1, 10, "x", "y") is None
