"""Shared test fixtures: where the real corpora are, and whether they must be there."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_dir():
    """Directory of the shared corpora: $SKLSTRUCT_DATA or <repo>/../shared/data."""
    return Path(os.environ.get("SKLSTRUCT_DATA") or REPO.parent / "shared" / "data")


def require_data(*parts):
    """Path of a corpus file under SKLSTRUCT_DATA; skip the test when it is absent,
    or fail it when SKLSTRUCT_REQUIRE_DATA=1 (as CI sets), so CI cannot pass by skipping."""
    path = data_dir().joinpath(*parts)
    if not path.exists():
        message = f"real corpus {path} not found (set SKLSTRUCT_DATA to the data directory)"
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
