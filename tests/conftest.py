"""Shared test fixtures: where the real corpora are, and whether they must be there."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _checkout_data():
    """``../shared/data`` beside a development checkout (the tests run from the
    checkout's tests/ folder), or None: the fallback for developers, which the
    package itself does not have."""
    beside = REPO.parent / "shared" / "data"
    if (REPO / "sklstruct" / "__init__.py").is_file() and beside.is_dir():
        return beside
    return None


def data_dir():
    """Directory of the shared corpora: where the package's loaders look
    (``$SKLSTRUCT_DATA``, else ``~/sklstruct_data``: see
    :func:`sklstruct.datasets.get_data_home`), or, when that is not set and
    does not exist, ``../shared/data`` beside a development checkout."""
    from sklstruct.datasets import get_data_home

    home = Path(get_data_home())
    if os.environ.get("SKLSTRUCT_DATA") or home.is_dir():
        return home
    return _checkout_data() or home


@pytest.fixture(autouse=True, scope="session")
def _loaders_see_checkout_data():
    """Tests that call a loader without ``data_home`` (``load_treebank()``) find
    the checkout's corpora too: when data_dir() falls back to the checkout,
    SKLSTRUCT_DATA points there for the session."""
    with pytest.MonkeyPatch.context() as mp:
        if not os.environ.get("SKLSTRUCT_DATA") and data_dir() == _checkout_data():
            mp.setenv("SKLSTRUCT_DATA", str(data_dir()))
        yield


def require_data(*parts):
    """Path of a corpus file under data_dir(); skip the test when it is absent,
    or fail it when SKLSTRUCT_REQUIRE_DATA=1 (as CI sets), so CI cannot pass by skipping."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        message = (f"real corpus {path} not found (put the corpora in ~/sklstruct_data "
                   "or set SKLSTRUCT_DATA to the data directory)")
        if os.environ.get("SKLSTRUCT_REQUIRE_DATA") == "1":
            pytest.fail(message + "; SKLSTRUCT_REQUIRE_DATA=1 forbids skipping")
        pytest.skip(message)
    return path


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
