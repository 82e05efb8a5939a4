"""CoNLL-2000 chunking: sklstruct's perceptron beside python-crfsuite's averaged perceptron.

Both learners see identical features: the token attributes of
``feature_set("chunking")`` (CRFsuite's own chunking example templates), fed to
sklstruct as CSR matrices and to CRFsuite as the same attribute strings
(``SequenceVectorizer.token_features``).  Each model is trained and evaluated
in a forked child process so that its peak memory can be read on its own.

Usage (needs ``pip install python-crfsuite``)::

    python benchmarks/bench_conll2000.py [--data DIR] [--epochs 10] [--out results.md]

Reports chunk F1 on the official test set (conlleval), seconds per training
epoch, prediction tokens/s and the peak resident memory added while training
and predicting.
"""
import argparse
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sklstruct import StructuredPerceptronTagger, feature_set
from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_report

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_sklstruct(data, k, epochs, queue):
    base = rss_mb()
    Xtr, ytr, Xte, yte = data["Xtr"], data["ytr"], data["Xte"], data["yte"]
    model = StructuredPerceptronTagger(k=k, max_iter=epochs, random_state=0)
    tic = time.perf_counter()
    model.fit(Xtr, ytr)
    fit_s = time.perf_counter() - tic
    epoch_s = float(np.mean([h["seconds"] for h in model.history_]))
    tic = time.perf_counter()
    pred = model.predict(Xte)
    pred_s = time.perf_counter() - tic
    # prediction from raw tokens, feature extraction included
    tic = time.perf_counter()
    data["vectorizer"].transform(data["tokens_te"])
    transform_s = time.perf_counter() - tic
    report = chunk_report(yte, pred)
    queue.put(dict(name=f"sklstruct perceptron k={k}", f1=report.f1, epoch_s=epoch_s, fit_s=fit_s,
                   pred_tps=data["n_test_tokens"] / pred_s,
                   pred_raw_tps=data["n_test_tokens"] / (pred_s + transform_s),
                   mem_mb=peak_mb() - base))


def run_crfsuite(data, algorithm, epochs, queue):
    import pycrfsuite

    base = rss_mb()
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    for xseq, yseq in zip(data["attrs_tr"], data["ytr"]):
        trainer.append(xseq, list(yseq))
    trainer.set_params({"max_iterations": epochs})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        tic = time.perf_counter()
        trainer.train(path)
        fit_s = time.perf_counter() - tic
        iters = trainer.logparser.iterations
        epoch_s = float(np.mean([it["time"] for it in iters])) if iters else fit_s / epochs
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        tic = time.perf_counter()
        pred = [tagger.tag(xseq) for xseq in data["attrs_te"]]
        pred_s = time.perf_counter() - tic
    report = chunk_report(data["yte"], pred)
    queue.put(dict(name=f"python-crfsuite {algorithm}", f1=report.f1, epoch_s=epoch_s,
                   fit_s=fit_s, pred_tps=data["n_test_tokens"] / pred_s,
                   pred_raw_tps=float("nan"), mem_mb=peak_mb() - base))


def in_child(target, *args):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=args + (queue,))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def load(data_dir):
    tokens_tr, ytr = read_conll(Path(data_dir) / "conll2000" / "train.txt")
    tokens_te, yte = read_conll(Path(data_dir) / "conll2000" / "test.txt")
    vec = feature_set("chunking")
    tic = time.perf_counter()
    Xtr = vec.fit_transform(tokens_tr)
    Xte = vec.transform(tokens_te)
    feat_s = time.perf_counter() - tic
    # the identical features for CRFsuite, restricted to the fitted vocabulary
    vocab = vec.vocabulary_
    attrs_tr = [[[f for f in tok if f in vocab] for tok in s] for s in vec.token_features(tokens_tr)]
    attrs_te = [[[f for f in tok if f in vocab] for tok in s] for s in vec.token_features(tokens_te)]
    return dict(Xtr=Xtr, ytr=ytr, Xte=Xte, yte=yte, tokens_te=tokens_te, vectorizer=vec,
                attrs_tr=attrs_tr, attrs_te=attrs_te, feat_s=feat_s,
                n_train_tokens=sum(map(len, ytr)), n_test_tokens=sum(map(len, yte)),
                n_features=len(vocab))


def table(rows, reference):
    ref = next((r for r in rows if r["name"] == reference), None)
    lines = [
        "| model | chunk F1 | s / epoch | epoch time vs CRFsuite | predict tokens/s | "
        "predict speed vs CRFsuite | tokens/s incl. features | peak memory added (MB) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        t_ratio = r["epoch_s"] / ref["epoch_s"] if ref else float("nan")
        p_ratio = r["pred_tps"] / ref["pred_tps"] if ref else float("nan")
        raw = "-" if np.isnan(r["pred_raw_tps"]) else f"{r['pred_raw_tps']:,.0f}"
        lines.append(f"| {r['name']} | {100 * r['f1']:.2f} | {r['epoch_s']:.3f} | {t_ratio:.2f}x | "
                     f"{r['pred_tps']:,.0f} | {p_ratio:.2f}x | {raw} | {r['mem_mb']:.0f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("SKLSTRUCT_DATA", DEFAULT_DATA))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 5])
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    data = load(args.data)
    print(f"CoNLL-2000: {len(data['ytr'])} training sentences ({data['n_train_tokens']} tokens), "
          f"{len(data['yte'])} test sentences ({data['n_test_tokens']} tokens), "
          f"{data['n_features']} features; feature extraction {data['feat_s']:.1f} s; "
          f"{args.epochs} epochs", flush=True)
    rows = [in_child(run_crfsuite, data, "ap", args.epochs)]
    for k in args.k:
        rows.append(in_child(run_sklstruct, data, k, args.epochs))
    out = table(rows, "python-crfsuite ap")
    print(out)
    if args.out:
        Path(args.out).write_text(out + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
