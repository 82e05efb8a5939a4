"""The presets on a task and corpus they were not chosen on: part-of-speech
tagging of the Penn Treebank sample, from the words alone.

Issue 29, item 4 ("plus a ``pos-rich`` if it helps") and its check that the
presets are general.  The tokens are the words of the preprocessed trees
(:func:`sklstruct.datasets.load_treebank`, empty elements removed), the
labels their 45 POS tags; a preset's templates of the POS column are left
out, as :func:`~sklstruct.features.feature_set` does for plain words.

Development score: 4-fold cross-validation over the files 1-159 (folds of
files 1-40, 41-80, 81-120, 121-159), mean token accuracy over the folds and
over ``--seeds`` of the learner.  Test score: trained on the files 1-159,
scored on 160-199 (the parser benchmark's split), seed 0.  ``unknown``: the
accuracy on the words the training files never saw.

A configuration is a preset name, optionally ``,template,template`` added to
its templates (``ner-rich,suffix5``) and ``:labels=off`` / ``:labels=dict``
(no label features; the label dictionary without the gazetteer); ``pos-rich``
is the candidate POS set below (after Ratnaparkhi 1996 and Toutanova et al.
2003: affixes up to five letters, the neighbours' suffixes, shapes, case and
position flags).  Each configuration prints one JSON line; ``--out`` writes
the markdown table.

Usage::

    python benchmarks/bench_pos_presets.py [--data DIR] [--configs S3 ner-rich ...]
        [--learners perceptron crf] [--seeds 0 1 2] [--no-test] [--out FILE]
"""
import argparse
import json
import time
import warnings

import numpy as np
from common import DEFAULT_DATA, feature_set_plus, report

from sklstruct import CRFTagger, StructuredPerceptronTagger
from sklstruct.datasets import load_treebank
from sklstruct.features import Preset

#: The candidate POS preset measured here (not in the library: it does not
#: beat ``ner-rich``, see the results).
POS_CANDIDATE = (
    "bias", "word", "lower", "lower[-2]", "lower[-1]", "lower[+1]", "lower[+2]",
    "lower[-1]|lower", "lower|lower[+1]",
    "prefix1", "prefix2", "prefix3", "prefix4",
    "suffix1", "suffix2", "suffix3", "suffix4", "suffix5",
    "suffix3[-1]", "suffix3[+1]", "suffix2[-1]", "suffix2[+1]",
    "shape[-1]", "shape", "shape[+1]",
    "is_title", "is_upper", "has_digit", "is_digit", "has_hyphen", "has_dot", "is_punct",
    "is_first", "is_title|is_first",
)
CONFIGS = ["S3", "ner", "chunking", "ner-rich:labels=off", "ner-rich:labels=dict", "ner-rich",
           "chunking-rich", "pos-rich:labels=off", "pos-rich:labels=dict",
           "ner-rich,suffix5:labels=dict", "ner-rich,lower[-1]|lower[+1]:labels=dict"]
DEV_FOLDS = [(1, 40), (41, 80), (81, 120), (121, 159)]


def vectorizer(config):
    """``feature_set`` of a configuration string (see the module's doc)."""
    name, _, option = config.partition(":labels=")
    base, *added = name.split(",")
    labels = {"": {}, "off": {"label_dictionary": False, "gazetteer": False},
              "dict": {"label_dictionary": True, "gazetteer": False}}[option]
    candidate = Preset(POS_CANDIDATE, 0, "candidate POS set", True) if base == "pos-rich" else None
    return feature_set_plus(base, added, candidate, random_state=0, **labels)


def learner(name, seed):
    if name == "perceptron":
        return StructuredPerceptronTagger(max_iter=10, random_state=seed)
    return CRFTagger()


def score(config, name, seed, X_train, y_train, X_test, y_test):
    """Token accuracy and unknown-word accuracy (in %) of one fit."""
    vec = vectorizer(config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")              # the CRF's ConvergenceWarning
        model = learner(name, seed).fit(vec.fit_transform(X_train, y_train), y_train)
    pred = np.concatenate(model.predict(vec.transform(X_test)))
    gold = np.concatenate([np.asarray(s) for s in y_test])
    seen = {w for s in X_train for w in s}
    unknown = np.array([w not in seen for s in X_test for w in s])
    right = pred == gold
    return 100 * right.mean(), 100 * right[unknown].mean(), vec


def run(words, tags, files, config, name, seeds, test):
    split = lambda mask: ([words[i] for i in np.flatnonzero(mask)],   # noqa: E731
                          [tags[i] for i in np.flatnonzero(mask)])
    tic = time.perf_counter()
    dev = []
    for a, b in DEV_FOLDS:
        held = (files >= a) & (files <= b)
        for seed in (seeds if name == "perceptron" else [0]):
            dev.append(score(config, name, seed, *split((files <= 159) & ~held),
                             *split(held))[:2])
    row = {"config": config, "learner": name, "dev": round(float(np.mean([d[0] for d in dev])), 2),
           "dev_unknown": round(float(np.mean([d[1] for d in dev])), 2)}
    if test:
        acc, unk, vec = score(config, name, 0, *split(files <= 159), *split(files >= 160))
        row.update(test=round(acc, 2), test_unknown=round(unk, 2),
                   features=len(vec.get_feature_names_out()))
    row["s"] = round(time.perf_counter() - tic, 1)
    print(json.dumps(row), flush=True)
    return row


def table(rows):
    lines = ["| features | learner | dev accuracy | dev unknown | test accuracy | test unknown |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        test = (f"{r['test']:.2f} | {r['test_unknown']:.2f}" if "test" in r else "- | -")
        config = r["config"].replace("|", "\\|")      # (a conjunction's bar, in a table)
        lines.append(f"| `{config}` | {r['learner']} | {r['dev']:.2f} | "
                     f"{r['dev_unknown']:.2f} | {test} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--configs", nargs="+", default=CONFIGS)
    parser.add_argument("--learners", nargs="+", default=["perceptron"],
                        choices=["perceptron", "crf"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--no-test", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    trees, files = load_treebank(args.data, return_file_ids=True)
    words = [[w for w, _ in t.pos()] for t in trees]
    tags = [[p for _, p in t.pos()] for t in trees]
    rows = [run(words, tags, files, c, name, args.seeds, not args.no_test)
            for name in args.learners for c in args.configs]
    body = (f"Token accuracy (%) of POS tagging from the words alone; dev: 4-fold "
            f"cross-validation over the files 1-159, mean over the folds and the seeds "
            f"{args.seeds} (the CRF: deterministic); test: files 1-159 -> 160-199, seed 0.  "
            "`unknown`: words the training files never saw.\n\n" + table(rows) + "\n")
    report("Presets on POS tagging (Penn Treebank sample, words only)", "bench_pos_presets.py",
           None, body, args.out)


if __name__ == "__main__":
    main()
