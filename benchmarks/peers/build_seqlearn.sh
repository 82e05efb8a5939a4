#!/usr/bin/env bash
# Build and install seqlearn 0.2 (the last release, 2015) for current Python, for
# benchmarks/bench_scale.py: the PyPI sdist compiles, but imports sklearn.externals.six,
# scipy.misc.logsumexp and xrange, gone since; seqlearn-0.2-py311.patch replaces them
# (and builds with setuptools).  The .pyx files are unchanged.
# Usage: bash benchmarks/peers/build_seqlearn.sh  (the `python` on PATH, or $PYTHON;
# needs numpy, scipy, scikit-learn, Cython, setuptools and a C compiler)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$PY" -m pip download seqlearn==0.2 --no-deps --no-binary :all: -d "$WORK"
tar -xzf "$WORK"/seqlearn-0.2.tar.gz -C "$WORK"
patch -d "$WORK/seqlearn-0.2" -p1 < "$HERE/seqlearn-0.2-py311.patch"
"$PY" -m pip wheel --no-deps --no-build-isolation -w "$WORK/wheels" "$WORK/seqlearn-0.2"
"$PY" -m pip install --no-deps --force-reinstall "$WORK"/wheels/seqlearn-0.2-*.whl
cd /
"$PY" -c "from seqlearn.perceptron import StructuredPerceptron; print('seqlearn 0.2 OK')"
