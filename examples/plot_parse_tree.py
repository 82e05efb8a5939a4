"""
Parsing: a drawn tree, and the max-margin parser against the PCFG
=================================================================

Trains :class:`~sklstruct.F1MaxMarginParser` (Bauer et al.'s structural SVM
with the PCFG's log-probabilities and span features) and the
maximum-likelihood :class:`~sklstruct.PCFGParser` on the same trees, draws the
max-margin parser's tree of one sentence (left), and plots F1 on held-out
trees (never trained on) against the number of training trees for both
(right).

By default it runs in seconds on the first trees of the Penn Treebank sample
when it is installed (``$SKLSTRUCT_DATA`` or NLTK's data: the last 100 trees
held out), else on the eight trees written in this script (six to train on,
two held out: a demonstration of the API, too small to measure anything);
``--sizes`` and ``--sentence`` change what it does.
"""
import argparse
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sklstruct import F1MaxMarginParser, PCFGParser  # noqa: E402
from sklstruct.datasets import load_treebank  # noqa: E402
from sklstruct.parsing import Tree, parseval  # noqa: E402

#: Used when the treebank sample is not installed.
TOY = [
    "(S (NP (DT the) (NN dog)) (VP (VBZ barks)))",
    "(S (NP (DT a) (NN cat)) (VP (VBZ sleeps)))",
    "(S (NP (DT the) (NN cat)) (VP (VBZ sees) (NP (DT a) (NN dog))))",
    "(S (NP (NNP John)) (VP (VBZ sees) (NP (DT the) (NN cat)) (PP (IN with) "
    "(NP (DT a) (NN telescope)))))",
    "(S (NP (DT a) (JJ big) (NN dog)) (VP (VBZ runs) (ADVP (RB fast))))",
    "(S (NP (NNP Mary)) (VP (VBZ sleeps)) (. .))",
    "(S (NP (DT the) (JJ old) (NN man)) (VP (VBD saw) (NP (NNP Mary)) (PP (IN in) "
    "(NP (DT the) (NN park)))) (. .))",
    "(S (NP (NNP John)) (VP (VBD gave) (NP (DT a) (NN book)) (PP (TO to) (NP (NNP Mary)))) "
    "(. .))",
]


def data(max_len):
    """(training trees, held-out trees, what they are): the test trees are
    never among the training trees."""
    try:
        trees = [t for t in load_treebank() if len(t.leaves()) <= max_len]
        return trees[:-100], trees[-100:], "Penn Treebank sample"
    except (OSError, ValueError):
        trees = [Tree.fromstring(s) for s in TOY]
        return trees[:-2], trees[-2:], "the script's toy treebank"


def draw(ax, tree):
    """Leaves evenly spaced, every node above the middle of its children."""
    leaves = tree.leaves()
    pos = {}

    def place(node, depth, start):
        if isinstance(node, str):
            return start + 1, (start, depth)
        end, xs = start, []
        for child in node.children:
            end, (x, _) = place(child, depth + 1, end)
            xs.append(x)
        pos[id(node)] = ((xs[0] + xs[-1]) / 2, depth)
        return end, pos[id(node)]

    place(tree, 0, 0)
    height = max(y for _, y in pos.values()) + 1

    def edges(node):
        x, y = pos[id(node)]
        ax.text(x, -y, node.label, ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round", fc="white", ec="0.6"))
        for child in node.children:
            if isinstance(child, str):
                ax.plot([x, x], [-y, -height], color="0.6", lw=0.8)
            else:
                cx, cy = pos[id(child)]
                ax.plot([x, cx], [-y, -cy], color="0.4", lw=0.8)
                edges(child)

    edges(tree)
    for k, word in enumerate(leaves):
        ax.text(k, -height - 0.3, word, ha="center", va="top", fontsize=8, rotation=45)
    ax.set_xlim(-1, len(leaves))
    ax.set_ylim(-height - 2, 1)
    ax.axis("off")


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100])
    ap.add_argument("--max-len", type=int, default=15)
    ap.add_argument("--sentence", default="The/DT board/NN approved/VBD the/DT plan/NN "
                    "on/IN Monday/NNP ./.")
    ap.add_argument("--out", default="plot_parse_tree.png")
    args = ap.parse_args()
    train, test, source = data(args.max_len)
    print(f"{source}: {len(train)} training trees, {len(test)} held-out trees")
    curve = []
    # sizes beyond the training trees there are would repeat the last point
    sizes = sorted({min(n, len(train)) for n in args.sizes})
    for n in sizes:
        sub = train[:n]
        for name, est in (("max-margin", F1MaxMarginParser(C=10, fixed_tags=True, n_jobs=2)),
                          ("PCFG", PCFGParser())):
            tic = time.perf_counter()
            est.fit([t.pos() for t in sub], sub)
            f1 = 100 * parseval(test, est.predict([t.pos() for t in test]))["f1"]
            curve.append((name, len(sub), f1))
            print(f"{name}, {len(sub)} trees: F1 {f1:.2f} ({time.perf_counter() - tic:.1f} s)")
            if name == "max-margin":
                parser = est
    sentence = [tuple(tok.rsplit("/", 1)) for tok in args.sentence.split()]
    tree = parser.predict([sentence])[0]
    print(tree)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5),
                                      gridspec_kw={"width_ratios": [3, 2]})
    draw(left, tree)
    left.set_title(f"max-margin parser, {sizes[-1]} training trees")
    for name in ("max-margin", "PCFG"):
        mine = [c for c in curve if c[0] == name]
        right.plot([c[1] for c in mine], [c[2] for c in mine], marker="o", label=name)
    right.set(xlabel="training trees", ylabel=f"F1 on {len(test)} held-out trees (PARSEVAL)",
              title=f"F1 against training size ({source})")
    right.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"wrote {Path(args.out).name}")


if __name__ == "__main__":
    main()
