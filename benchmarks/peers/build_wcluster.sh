#!/usr/bin/env bash
# Build Percy Liang's wcluster (github.com/percyliang/brown-cluster), the reference
# C++ implementation of Brown clustering, outside the project, for
# benchmarks/bench_brown.py.  Usage:
#   bash benchmarks/peers/build_wcluster.sh [DEST] [SOURCE]
# DEST (default $HOME/brown-cluster) receives the build; SOURCE is a local clone or
# git directory to take the sources from (default: git clone from GitHub).
# Prints the path of the wcluster binary (pass it as --wcluster, or set $WCLUSTER).
set -euo pipefail
DEST=${1:-$HOME/brown-cluster}
SOURCE=${2:-https://github.com/percyliang/brown-cluster.git}
mkdir -p "$DEST"
if [ -d "$SOURCE" ] && [ ! -f "$SOURCE/wcluster.cc" ]; then   # a bare git directory
  git --git-dir="$SOURCE" archive HEAD | tar -x -C "$DEST"
elif [ -d "$SOURCE" ]; then
  cp -r "$SOURCE"/. "$DEST"
else
  git clone --depth 1 "$SOURCE" "$DEST"
fi
make -C "$DEST" -j2 >&2
echo "$DEST/wcluster"
