"""Shared pieces of the benchmarks: data with identical features for sklstruct and
python-crfsuite, running each model in a forked child (for its own peak memory),
and the results table."""
import multiprocessing as mp
import os
import pickle
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from sklstruct.datasets import read_conll
from sklstruct.features import PRESETS, feature_set
from sklstruct.metrics import chunk_report

DEFAULT_DATA = Path(os.environ.get(
    "SKLSTRUCT_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def stolen():
    """CPU seconds the hypervisor has given to other guests while this
    virtual machine wanted them, all CPUs, so far (``steal`` in /proc/stat,
    counted in ticks of 10 ms; 0.0 where /proc/stat does not say): the
    machine is not idle while it grows."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return 0.0
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def stolen_share(steal0, tic0):
    """The share of all CPUs' time stolen since ``stolen()`` was ``steal0``
    and ``time.perf_counter()`` was ``tic0``."""
    return (stolen() - steal0) / (os.cpu_count() * (time.perf_counter() - tic0))


def load(train_path, test_paths, vectorizer):
    """Read the files, fit the vectorizer on the training file, and give both
    libraries the same features: CSR matrices for sklstruct, the same attribute
    strings (restricted to the fitted vocabulary) for CRFsuite."""
    tokens, labels = read_conll(train_path)
    tic = time.perf_counter()
    X = {"train": vectorizer.fit_transform(tokens)}
    vocab = vectorizer.vocabulary_

    def attributes(toks):
        return [[[f for f in tok if f in vocab] for tok in s] for s in vectorizer.token_features(toks)]

    data = {"vectorizer": vectorizer, "X": X, "y": {"train": labels}, "tokens": {"train": tokens},
            "attrs": {"train": attributes(tokens)}, "n_features": len(vocab)}
    for name, path in test_paths.items():
        toks, labs = read_conll(path)
        X[name] = vectorizer.transform(toks)
        data["y"][name], data["tokens"][name] = labs, toks
        data["attrs"][name] = attributes(toks)
    data["feature_seconds"] = time.perf_counter() - tic
    return data


def n_tokens(data, part):
    return sum(map(len, data["y"][part]))


def run_estimator(data, name, estimator, test, queue, dtype=None):
    """Fit, predict, time and weigh ``estimator``; ``dtype``: predict with
    (and save) its ``astype(dtype)`` copy."""
    base = rss_mb()
    tic = time.perf_counter()
    estimator.fit(data["X"]["train"], data["y"]["train"])
    fit_s = time.perf_counter() - tic
    if dtype is not None:
        history = estimator.history_
        estimator = estimator.astype(dtype)
        estimator.history_ = history
    epoch_s = float(np.mean([h["seconds"] for h in estimator.history_]))
    tic = time.perf_counter()
    pred = estimator.predict(data["X"][test])
    pred_s = time.perf_counter() - tic
    tic = time.perf_counter()
    data["vectorizer"].transform(data["tokens"][test])
    transform_s = time.perf_counter() - tic
    # the whole model a user saves: the fitted vectorizer and the tagger
    model_mb = len(pickle.dumps((data["vectorizer"], estimator), protocol=5)) / 1e6
    queue.put(dict(name=name, f1=chunk_report(data["y"][test], pred).f1, epoch_s=epoch_s,
                   fit_s=fit_s, pred_tps=n_tokens(data, test) / pred_s,
                   pred_raw_tps=n_tokens(data, test) / (pred_s + transform_s),
                   mem_mb=peak_mb() - base, model_mb=model_mb))


def run_crfsuite(data, name, algorithm, params, test, queue):
    """Train and test CRFsuite.  ``params["seed"]``, if given, seeds the C
    library's rand(), which CRFsuite's shuffling uses (it never seeds it
    itself, so without this every run shuffles the same way)."""
    import ctypes

    import pycrfsuite

    params = dict(params)
    seed = params.pop("seed", None)
    if seed is not None:
        ctypes.CDLL(None).srand(int(seed))
    base = rss_mb()
    trainer = pycrfsuite.Trainer(algorithm=algorithm, verbose=False)
    for xseq, yseq in zip(data["attrs"]["train"], data["y"]["train"]):
        trainer.append(xseq, list(yseq))
    trainer.set_params(params)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        tic = time.perf_counter()
        trainer.train(path)
        fit_s = time.perf_counter() - tic
        iters = trainer.logparser.iterations
        model_mb = os.path.getsize(path) / 1e6
        epoch_s = float(np.mean([it["time"] for it in iters])) if iters else float("nan")
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        tic = time.perf_counter()
        pred = [tagger.tag(xseq) for xseq in data["attrs"][test]]
        pred_s = time.perf_counter() - tic
    queue.put(dict(name=name, f1=chunk_report(data["y"][test], pred).f1, epoch_s=epoch_s,
                   fit_s=fit_s, pred_tps=n_tokens(data, test) / pred_s,
                   pred_raw_tps=float("nan"), mem_mb=peak_mb() - base, model_mb=model_mb,
                   iterations=len(iters),
                   objective=float(iters[-1].get("loss", float("nan"))) if iters
                   else float("nan")))


def in_child(target, *args, **kwargs):
    """Run target(*args, queue, **kwargs) in a forked process and return what it put."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=args + (queue,), kwargs=kwargs)
    proc.start()
    result = queue.get()
    proc.join()
    return result


def table(rows, reference):
    """Markdown table with time and speed ratios against the reference row."""
    ref = next(r for r in rows if r["name"] == reference)
    lines = [
        "| model | chunk F1 | s / epoch | epoch time vs CRFsuite | predict tokens/s | "
        "predict speed vs CRFsuite | tokens/s incl. features | peak memory added (MB) | "
        "model MB (pickle; CRFsuite: its file) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        raw = "-" if np.isnan(r["pred_raw_tps"]) else f"{r['pred_raw_tps']:,.0f}"
        lines.append(f"| {r['name']} | {100 * r['f1']:.2f} | {r['epoch_s']:.3f} | "
                     f"{r['epoch_s'] / ref['epoch_s']:.2f}x | {r['pred_tps']:,.0f} | "
                     f"{r['pred_tps'] / ref['pred_tps']:.2f}x | {raw} | {r['mem_mb']:.0f} | "
                     f"{r.get('model_mb', float('nan')):.1f} |")
    return "\n".join(lines)


#: NER features: S3-style spelling features of the current and neighbouring
#: words plus the POS column of the Spanish files.
def quiet_fit(model, X, y):
    """``model.fit(X, y)`` with convergence warnings silenced (benchmarks stop
    early on purpose); returns the seconds it took."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tic = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - tic


def load_corpus(root, name):
    """CoNLL-2000 (train, test) or CoNLL-2002 Spanish (train, testa, testb)
    with the benchmarks' features."""
    from sklstruct import feature_set

    root = Path(root)
    if name == "conll2000":
        return load(root / "conll2000" / "train.txt", {"test": root / "conll2000" / "test.txt"},
                    feature_set("chunking"))
    esp = root / "conll2002"
    return load(esp / "esp.train", {"testa": esp / "esp.testa", "testb": esp / "esp.testb"},
                feature_set("ner"))


def report(title, script, argv, body, out=None):
    """Print a markdown report headed by the command that made it; write it
    to ``out`` if given."""
    import sys

    text = (f"# {title}\n\nCommand: `python benchmarks/{script} "
            f"{' '.join(sys.argv[1:] if argv is None else argv)}`\n\n{body}")
    print(text)
    if out:
        Path(out).write_text(text)


def write_tables(out_dir, prefix, tables):
    """One markdown file per corpus: ``out_dir/prefix_corpus.md``."""
    if out_dir:
        for name, text in tables.items():
            Path(out_dir, f"{prefix}_{name}.md").write_text(text + "\n")


def mean_row(name, rows):
    """Average the measurements of runs that differ only in their seed."""
    f1 = np.array([r["f1"] for r in rows])
    out = {key: float(np.mean([r[key] for r in rows])) for key in rows[0] if key != "name"}
    out["name"] = f"{name} (mean of {len(rows)} seeds, F1 std {100 * f1.std():.2f})"
    return out


def feature_set_plus(name, added=(), preset=None, **params):
    """``feature_set(name, **params)`` with the templates ``added`` to the
    preset's (development runs of candidate features), or of ``preset`` (a
    :class:`~sklstruct.features.Preset`) registered as ``name`` meanwhile."""
    preset = PRESETS[name] if preset is None else preset
    key = f"_bench:{name}+{'+'.join(added)}"
    PRESETS[key] = preset._replace(templates=preset.templates + tuple(added))
    try:
        return feature_set(key, **params)
    finally:
        del PRESETS[key]
