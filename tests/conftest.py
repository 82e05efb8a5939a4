"""Shared test fixtures; the tests' folder is on sys.path, so test modules import
the shared oracles (``_oracles``) and the corpus locator (``_data``) directly."""
import os

import pytest

from _data import _checkout_data, data_dir, require_data


@pytest.fixture(autouse=True, scope="session")
def _loaders_see_checkout_data():
    """Tests that call a loader without ``data_home`` (``load_treebank()``) find
    the checkout's corpora too: when data_dir() falls back to the checkout,
    SKLSTRUCT_DATA points there for the session."""
    with pytest.MonkeyPatch.context() as mp:
        if not os.environ.get("SKLSTRUCT_DATA") and data_dir() == _checkout_data():
            mp.setenv("SKLSTRUCT_DATA", str(data_dir()))
        yield


@pytest.fixture(scope="session")
def ptb_sample_raw():
    """Every tree of the Penn Treebank sample as read (no preprocessing), read
    once per session; skips (or fails under SKLSTRUCT_REQUIRE_DATA=1) when absent."""
    from sklstruct.parsing import read_ptb

    directory = require_data("treebank", "combined")
    trees = []
    for path in sorted(directory.glob("wsj_*.mrg")):
        trees.extend(read_ptb(path))
    return trees
