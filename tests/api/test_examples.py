"""The scripts in examples/ run headless on their default (small) data and
write their figures."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


def test_there_are_examples():
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_writes_its_figure(script, tmp_path):
    out = tmp_path / "figure.png"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run([sys.executable, str(script), "--out", str(out)], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert out.stat().st_size > 10_000
