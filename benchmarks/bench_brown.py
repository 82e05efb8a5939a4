"""BrownClusters against Percy Liang's wcluster (the reference C++ program).

Both cluster the words of a training file given as one stream of text
(wcluster reads a file as one stream, across lines; BrownClusters gets the
whole file as one sentence, so that both fit the same model: p(c) = count / T,
p(c, d) = bigrams / (T - 1)).  Each run is timed (wall clock, one thread), and
the average mutual information (AMI) of its C clusters is computed from
scratch, for both programs the same way, from their clusterings
(wcluster's ``paths`` file: the words of one of its C clusters share a path).
wcluster orders words of equal count as its hash table happens to, so the two
runs part at the first tie and their AMI differ a little either way.

Build wcluster outside the project first::

    bash benchmarks/peers/build_wcluster.sh ~/brown-cluster
    python benchmarks/bench_brown.py --wcluster ~/brown-cluster/wcluster \\
        --out benchmarks/results/brown.md

Without ``--wcluster`` (or ``$WCLUSTER``), only BrownClusters is run;
``--wcluster-max C`` runs wcluster only up to C clusters.
"""
import argparse
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from sklstruct import BrownClusters
from sklstruct.datasets import read_conll
from sklstruct.features.clusters import _average_mutual_information

DATA = Path(os.environ.get("SKLSTRUCT_DATA",
                           Path(__file__).resolve().parents[1].parent / "shared" / "data"))
CORPORA = {"CoNLL-2000 train": DATA / "conll2000" / "train.txt",
           "CoNLL-2002 esp.train": DATA / "conll2002" / "esp.train"}


def words_of(path):
    """The words of a CoNLL file, one list per sentence."""
    tokens, _ = read_conll(path)
    return [[t[0] for t in sentence] for sentence in tokens]


def ami_of(paths, stream):
    """AMI of the partition given by word -> path, on one stream of words."""
    ids = {p: i for i, p in enumerate(sorted(set(paths.values())))}
    cluster_of = [ids[paths[w]] if w in paths else -1 for w in stream]
    return _average_mutual_information(cluster_of, [len(stream)])


def run_wcluster(binary, text_file, C, workdir):
    out = Path(workdir) / f"c{C}"
    tic = time.perf_counter()
    subprocess.run([binary, "--text", str(text_file), "--c", str(C), "--output_dir", str(out),
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - tic
    paths = {}
    with open(out / "paths", encoding="utf-8") as f:
        for line in f:
            bits, word, _ = line.rstrip("\n").split("\t")
            paths[word] = bits
    return seconds, paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wcluster", default=os.environ.get("WCLUSTER"),
                        help="path of the wcluster binary (benchmarks/peers/build_wcluster.sh)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--wcluster-max", type=int, default=None,
                        help="run wcluster only for C up to this (it takes minutes at C=1000)")
    parser.add_argument("--out", help="write the markdown table here")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip() or "?"
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                if line.startswith("model name")), platform.machine())
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for name, path in CORPORA.items():
            sentences = words_of(path)
            stream = [w for s in sentences for w in s]
            text_file = Path(workdir) / "text.txt"
            with open(text_file, "w", encoding="utf-8") as f:
                for s in sentences:
                    f.write(" ".join(s) + "\n")
            for C in args.sizes:
                tic = time.perf_counter()
                model = BrownClusters(n_clusters=C).fit([stream])
                ours = time.perf_counter() - tic
                ami = ami_of(model.clusters_, stream)
                assert abs(ami - model.mutual_information_) < 1e-9
                row = [name, f"{len(stream):,}", f"{len(model.vocabulary_):,}", str(C),
                       f"{ours:.1f}", f"{ami:.4f}"]
                if args.wcluster and (args.wcluster_max is None or C <= args.wcluster_max):
                    theirs, paths = run_wcluster(args.wcluster, text_file, C, workdir)
                    assert set(paths) == set(model.clusters_)
                    row += [f"{theirs:.1f}", f"{ami_of(paths, stream):.4f}",
                            f"{ours / theirs:.2f}x"]
                else:
                    row += ["-", "-", "-"]
                rows.append(row)
                print(" | ".join(row), flush=True)
    header = ["text", "tokens", "words", "C", "sklstruct s", "sklstruct AMI",
              "wcluster s", "wcluster AMI", "time vs wcluster"]
    lines = [
        "# BrownClusters against wcluster",
        "",
        f"Machine: {cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"commit {commit}; one thread each; the words of each file as one stream; "
        "AMI in bits, of the C clusters, computed the same way for both.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] * 3 + ["---:"] * (len(header) - 3)) + "|",
    ] + ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
