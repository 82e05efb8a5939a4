"""Where the real corpora are, and whether a test must find them."""
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
