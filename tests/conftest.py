"""Shared test fixtures: where the real corpora are, and whether they must be there."""
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("SKLSTRUCT_DATA", REPO.parent / "shared" / "data"))
REQUIRE_DATA = os.environ.get("SKLSTRUCT_REQUIRE_DATA") == "1"


def require_data(*parts):
    """Path of a corpus file under SKLSTRUCT_DATA; skip (or fail under
    SKLSTRUCT_REQUIRE_DATA=1) when it is absent."""
    path = DATA_DIR.joinpath(*parts)
    if not path.exists():
        message = f"real corpus {path} not found (set SKLSTRUCT_DATA to the data directory)"
        if REQUIRE_DATA:
            pytest.fail(message + "; SKLSTRUCT_REQUIRE_DATA=1 forbids skipping")
        pytest.skip(message)
    return path


@pytest.fixture
def data_dir():
    return require_data()
