"""Data path before/after: same weights, predictions and F1; transform, predict and fit timings.

Compares two installed versions of sklstruct (each in its own virtual
environment) on CoNLL-2000 chunking and CoNLL-2002 Spanish NER with the
benchmarks' features (``common.py``).  The script uses the public API only, so
one copy runs under both versions.  Four modes:

``equality --out FILE.npz``
    Fits six learners (random_state=0, a few epochs) on the CoNLL-2000 train
    set and two on the Spanish train set, and saves ``coef_``,
    ``transition_coef_``, ``classes_``, the test predictions, chunk F1 and the
    stacked test feature matrix.

``timing --out FILE.json [--reps 5]``
    In one process: ``transform`` of the test set, ``predict`` on the
    transformed test set, ``predict`` of a fitted Pipeline on raw sentences,
    ``fit`` (wall time and median epoch time from ``history_``) of perceptron
    k=1 and PA k=1 (10 epochs) and SDM k=1 (2 epochs); Spanish NER: transform,
    PA k=1 fit (5 epochs), predict.  Medians of ``--reps`` repetitions; peak
    RSS from getrusage.

``focus --out FILE.json [--reps 15]``
    The figures whose ratio came out close to 1, with more repetitions:
    ``transform`` of both test sets and the median epoch of a 30-epoch fit
    (perceptron k=1 on CoNLL-2000, PA k=1 on Spanish).

``drive --before PY --after PY [--pairs 3] [--focus]``
    Runs ``equality`` once under each interpreter, then ``timing`` alternately
    (BEFORE, AFTER, BEFORE, AFTER, ...), each in a fresh process started in a
    directory outside the checkouts, checks that each imports sklstruct from its
    own environment, and writes the markdown report: per-figure medians over
    the processes and the AFTER/BEFORE ratio (median of the per-pair ratios and
    ratio of the medians).  With ``--focus`` it runs ``focus`` instead of
    ``timing`` and appends its table to the report.

Usage::

    cd /tmp && python /path/to/benchmarks/bench_datapath.py drive \\
        --before /work/venv_base/bin/python --after /work/venv_after/bin/python \\
        --before-src /work/baseline --after-src /work/after --pairs 4 \\
        --work-dir /tmp/datapath --md /path/to/benchmarks/results/datapath.md
"""
import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = Path(os.environ.get("SKLSTRUCT_DATA", HERE.parents[1] / "shared" / "data"))


def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def check_install():
    """The interpreter's own sklstruct, not a source tree on sys.path."""
    import sklstruct

    path = os.path.realpath(sklstruct.__file__)
    prefix = os.path.realpath(sys.prefix)
    if not path.startswith(prefix + os.sep):
        raise SystemExit(f"sklstruct imported from {path}, not from the environment {prefix}")
    return path


FILES = {"conll2000": ("conll2000/train.txt", "conll2000/test.txt"),
         "esp": ("conll2002/esp.train", "conll2002/esp.testb")}


def corpus(data, name):
    """((train tokens, train labels), (test tokens, test labels))."""
    from sklstruct.datasets import read_conll

    return tuple(read_conll(Path(data) / f) for f in FILES[name])


def vectorizer(name):
    """The benchmarks' features (see common.load_corpus)."""
    from sklstruct import feature_set

    return feature_set("chunking" if name == "conll2000" else "ner")


def equality_models():
    from sklstruct import (KBestMIRATagger, LaRankTagger, PassiveAggressiveTagger, SDMTagger,
                           StructuredPerceptronTagger)

    conll = [("perceptron_k1", StructuredPerceptronTagger(k=1, max_iter=3, random_state=0)),
             ("pa_k1", PassiveAggressiveTagger(k=1, max_iter=3, random_state=0)),
             ("rpa_k2", PassiveAggressiveTagger(k=2, restricted=True, max_iter=3, random_state=0)),
             ("mira_k5", KBestMIRATagger(k=5, max_iter=3, random_state=0)),
             ("sdm_k1", SDMTagger(k=1, max_iter=2, random_state=0)),
             ("larank_k1", LaRankTagger(k=1, max_iter=1, random_state=0))]
    esp = [("perceptron_k1", StructuredPerceptronTagger(k=1, max_iter=3, random_state=0)),
           ("pa_k1", PassiveAggressiveTagger(k=1, max_iter=3, random_state=0))]
    return {"conll2000": conll, "esp": esp}


def run_equality(args):
    import scipy.sparse as sp

    from sklstruct.metrics import chunk_f1_score

    out = {"sklstruct_file": check_install()}
    models = equality_models()
    for name in FILES:
        (X_tok, y), (T_tok, t) = corpus(args.data, name)
        vec = vectorizer(name)
        X = vec.fit_transform(X_tok)
        Xt = vec.transform(T_tok)
        S = sp.vstack(list(Xt), format="csr")
        out[f"{name}/Xt.data"], out[f"{name}/Xt.indices"] = S.data, S.indices
        out[f"{name}/Xt.indptr"] = S.indptr
        out[f"{name}/Xt.shape"] = np.array(S.shape)
        for model_name, model in models[name]:
            tic = time.perf_counter()
            model.fit(X, y)
            fit_s = time.perf_counter() - tic
            pred = model.predict(Xt)
            key = f"{name}/{model_name}"
            out[f"{key}/coef_"] = np.asarray(model.coef_)
            out[f"{key}/transition_coef_"] = np.asarray(model.transition_coef_)
            out[f"{key}/classes_"] = np.asarray(model.classes_).astype(str)
            out[f"{key}/pred"] = np.concatenate([np.asarray(p).astype(str) for p in pred])
            out[f"{key}/pred_lengths"] = np.array([len(p) for p in pred])
            out[f"{key}/f1"] = np.array(chunk_f1_score(t, pred))
            print(f"{key}: F1 {100 * float(out[f'{key}/f1']):.4f}, fit {fit_s:.1f} s "
                  f"({model!r})", flush=True)
    np.savez_compressed(args.out, **out)


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        tic = time.perf_counter()
        fn()
        times.append(time.perf_counter() - tic)
    return float(np.median(times))


def run_timing(args):
    from sklearn.pipeline import Pipeline

    from sklstruct import PassiveAggressiveTagger, SDMTagger, StructuredPerceptronTagger

    res = {"sklstruct_file": check_install(), "reps": args.reps}
    (X_tok, y), (T_tok, t) = corpus(args.data, "conll2000")
    res["peak_mb_after_reading"] = peak_mb()
    vec = vectorizer("conll2000")
    tic = time.perf_counter()
    X = vec.fit_transform(X_tok)
    res["conll2000 fit_transform(train) s"] = time.perf_counter() - tic
    Xt = vec.transform(T_tok)
    res["conll2000 transform(test) s"] = median_time(lambda: vec.transform(T_tok), args.reps)
    res["peak_mb_after_features"] = peak_mb()

    def fit(label, model, epochs):
        tic = time.perf_counter()
        model.fit(X, y)
        res[f"conll2000 {label} fit ({epochs} epochs) s"] = time.perf_counter() - tic
        res[f"conll2000 {label} median epoch s"] = float(
            np.median([h["seconds"] for h in model.history_]))
        return model

    perc = fit("perceptron k=1", StructuredPerceptronTagger(k=1, max_iter=10, random_state=0),
               10)
    perc.predict(Xt)  # warm-up
    res["conll2000 predict(Xt) s"] = median_time(lambda: perc.predict(Xt), args.reps)
    pipe = Pipeline([("vectorizer", vec), ("tagger", perc)])
    res["conll2000 pipeline predict(raw test) s"] = median_time(lambda: pipe.predict(T_tok),
                                                                 args.reps)
    res["conll2000 predict(X train) s"] = median_time(lambda: perc.predict(X), 3)
    fit("PA k=1", PassiveAggressiveTagger(k=1, max_iter=10, random_state=0), 10)
    fit("SDM k=1", SDMTagger(k=1, max_iter=2, random_state=0), 2)
    res["peak_mb_after_conll2000"] = peak_mb()
    del X, Xt, pipe, perc

    (X_tok, y), (T_tok, t) = corpus(args.data, "esp")
    vec = vectorizer("esp")
    X = vec.fit_transform(X_tok)
    res["esp transform(testb) s"] = median_time(lambda: vec.transform(T_tok), args.reps)
    Xt = vec.transform(T_tok)
    tic = time.perf_counter()
    pa = PassiveAggressiveTagger(k=1, max_iter=5, random_state=0).fit(X, y)
    res["esp PA k=1 fit (5 epochs) s"] = time.perf_counter() - tic
    res["esp PA k=1 median epoch s"] = float(np.median([h["seconds"] for h in pa.history_]))
    pa.predict(Xt)
    res["esp predict(Xt) s"] = median_time(lambda: pa.predict(Xt), args.reps)
    pipe = Pipeline([("vectorizer", vec), ("tagger", pa)])
    res["esp pipeline predict(raw testb) s"] = median_time(lambda: pipe.predict(T_tok), args.reps)
    res["peak_mb_end"] = peak_mb()
    Path(args.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1), flush=True)


def run_focus(args):
    """The figures whose ratio is close to 1, with more repetitions: transform
    of the test sets and the median epoch of 30-epoch fits."""
    from sklstruct import PassiveAggressiveTagger, StructuredPerceptronTagger

    res = {"sklstruct_file": check_install(), "reps": args.reps}
    for name, model in (("conll2000", StructuredPerceptronTagger(k=1, max_iter=30,
                                                                 random_state=0)),
                        ("esp", PassiveAggressiveTagger(k=1, max_iter=30, random_state=0))):
        (X_tok, y), (T_tok, t) = corpus(args.data, name)
        vec = vectorizer(name)
        X = vec.fit_transform(X_tok)
        vec.transform(T_tok)
        res[f"{name} transform(test) s"] = median_time(lambda: vec.transform(T_tok), args.reps)
        model.fit(X, y)
        res[f"{name} {type(model).__name__} k=1 median epoch s (30 epochs)"] = float(
            np.median([h["seconds"] for h in model.history_]))
    Path(args.out).write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1), flush=True)


# ---------------------------------------------------------------- driver


def child(python, mode, out, args, log, run=True):
    cmd = [python, str(Path(__file__).resolve()), mode, "--out", str(out), "--data",
           str(args.data)]
    if mode in ("timing", "focus"):
        cmd += ["--reps", str(args.reps)]
    if not run:  # --reuse: the file is there from an earlier run of the same command
        log.append(shlex.join(cmd))
        return
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    print("$", shlex.join(cmd), flush=True)
    log.append(shlex.join(cmd))
    subprocess.run(cmd, check=True, cwd=args.work_dir, env=env, stdout=sys.stdout)


def compare(before, after):
    """Rows (key, status) for every saved array."""
    rows = []
    keys = sorted(set(before.files) | set(after.files))
    for key in keys:
        if key == "sklstruct_file":
            continue
        if key not in before.files or key not in after.files:
            rows.append((key, "missing in " + ("BEFORE" if key not in before.files else "AFTER")))
            continue
        a, b = before[key], after[key]
        if a.shape != b.shape:
            rows.append((key, f"NOT EQUAL: shape {a.shape} vs {b.shape}"))
        elif np.array_equal(a, b):
            rows.append((key, "equal"))
        elif a.dtype.kind in "fiu":
            rows.append((key, f"NOT EQUAL: max abs diff {np.max(np.abs(a - b)):.3g}"))
        else:
            rows.append((key, f"NOT EQUAL: {np.mean(a != b):.4%} of entries differ"))
    return rows


def git_rev(src):
    try:
        rev = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return rev + (" (work tree has local changes)" if dirty else " (clean work tree)")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "unknown"


def run_drive(args):
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    log = []
    versions = {"BEFORE": args.before, "AFTER": args.after}
    tic = time.perf_counter()
    timing_mode = "focus" if args.focus else "timing"
    for v, py in versions.items():
        child(py, "equality", work / f"equality_{v}.npz", args, log, run=not args.skip_equality)
    timings = {"BEFORE": [], "AFTER": []}
    for i in range(args.pairs):
        for v, py in versions.items():
            out = work / f"{timing_mode}_{v}_{i}.json"
            child(py, timing_mode, out, args, log, run=not (args.reuse and out.exists()))
            timings[v].append(json.loads(out.read_text()))
    elapsed = time.perf_counter() - tic

    before = np.load(work / "equality_BEFORE.npz")
    after = np.load(work / "equality_AFTER.npz")
    eq = compare(before, after)

    lines = ["# Data path: BEFORE vs AFTER (issue 11, item 3)", "",
             f"- BEFORE: `{git_rev(args.before_src)}` ({args.before_src}), "
             f"installed non-editable: `{before['sklstruct_file']}`",
             f"- AFTER: `{git_rev(args.after_src)}` ({args.after_src}), "
             f"installed non-editable: `{after['sklstruct_file']}`",
             f"- Machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
             f"Python {platform.python_version()}; shared with other work (noisy), so the "
             f"timings are {args.pairs} BEFORE/AFTER pairs of fresh processes run alternately "
             f"(B A B A ...), each figure the median of {args.reps} repetitions in its process "
             "(fit: one fit per process).",
             f"- Driver command: `{shlex.join([sys.executable] + sys.argv)}` "
             f"(run from `{os.getcwd()}`; {elapsed / 60:.1f} min"
             + ("; report rewritten from the files of the run below" if args.reuse else "")
             + ")",
             "- Child commands (run from " f"`{args.work_dir}`):", ""]
    lines += [f"      {c}" for c in log] + [""]

    timing_start = len(lines)
    lines += ["## Timings" + (": focused re-run of the close figures" if args.focus else ""), "",
              "Seconds, median over the processes of each version; ratio = AFTER / BEFORE "
              "(< 1: AFTER faster). 'pair ratios' are the per-pair ratios (pair i = "
              "the i-th BEFORE and AFTER processes, run back to back).", "",
              "| figure | BEFORE | AFTER | ratio of medians | median pair ratio | pair ratios |",
              "|---|---|---|---|---|---|"]
    keys = [k for k in timings["BEFORE"][0] if k not in ("sklstruct_file", "reps")]
    for key in keys:
        b = np.array([r[key] for r in timings["BEFORE"]])
        a = np.array([r[key] for r in timings["AFTER"]])
        pr = a / b
        name = ("peak RSS MB, " + key[len("peak_mb_"):].replace("_", " ")
                if key.startswith("peak") else key)
        fmt = "{:.1f}" if key.startswith("peak") else "{:.4f}"
        lines.append(f"| {name} | {fmt.format(np.median(b))} | {fmt.format(np.median(a))} | "
                     f"{np.median(a) / np.median(b):.3f} | {np.median(pr):.3f} | "
                     + ", ".join(f"{x:.2f}" for x in pr) + " |")
    lines += ["", "## Equality (random_state=0)", "",
              "conll2000: perceptron k=1, PA k=1, RPA k=2 and MIRA k=5 with max_iter=3, SDM k=1 "
              "with max_iter=2, LaRank k=1 with max_iter=1; esp (CoNLL-2002 Spanish, testb): "
              "perceptron k=1 and PA k=1 with max_iter=3. `Xt.*` is the stacked test feature "
              "matrix; `pred` the test predictions; `f1` chunk F1 on the test set.", "",
              "| model | F1 BEFORE | F1 AFTER | coef_ | transition_coef_ | predictions "
              "| classes_ |",
              "|---|---|---|---|---|---|---|"]
    status = dict(eq)
    models = sorted({k.rsplit("/", 1)[0] for k in before.files if k.endswith("/f1")})
    for m in models:
        lines.append(f"| {m} | {100 * float(before[m + '/f1']):.4f} | "
                     f"{100 * float(after[m + '/f1']):.4f} | {status[m + '/coef_']} | "
                     f"{status[m + '/transition_coef_']} | {status[m + '/pred']} | "
                     f"{status[m + '/classes_']} |")
    feats = [f"{k}: {s}" for k, s in eq if "/Xt." in k]
    lines += ["", "Test features: " + "; ".join(feats) + "."]
    not_equal = [f"{k} ({s})" for k, s in eq if s != "equal"]
    lines += ["", "**All saved arrays equal (np.array_equal), all F1 identical.**" if not not_equal
              else "**NOT EQUAL:** " + "; ".join(not_equal)]
    if args.focus:
        # only the timing table, appended to the report of a full run
        end = lines.index("## Equality (random_state=0)")
        lines = (["", f"Focused run ({elapsed / 60:.1f} min): "
                  f"`{shlex.join([sys.executable] + sys.argv)}` (run from `{os.getcwd()}`); "
                  f"children alternate as above, e.g. `{log[-1]}`.", ""]
                 + lines[timing_start:end])
    text = "\n".join(lines) + "\n"
    if args.md:
        with open(args.md, "a" if args.focus else "w") as f:
            f.write(text)
    print(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for mode in ("equality", "timing", "focus"):
        p = sub.add_parser(mode)
        p.add_argument("--out", required=True)
        p.add_argument("--data", default=DEFAULT_DATA)
        p.add_argument("--reps", type=int, default=5)
    p = sub.add_parser("drive")
    p.add_argument("--before", required=True, help="python of the BEFORE environment")
    p.add_argument("--after", required=True, help="python of the AFTER environment")
    p.add_argument("--before-src", default="", help="source tree of BEFORE (for its commit)")
    p.add_argument("--after-src", default="", help="source tree of AFTER (for its commit)")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--work-dir", default="/tmp/bench_datapath")
    p.add_argument("--md", default="")
    p.add_argument("--focus", action="store_true",
                   help="run the 'focus' mode instead of 'timing' and append its table to --md")
    p.add_argument("--reuse", action="store_true",
                   help="reuse timing JSON files already in --work-dir (rewrite the report only)")
    p.add_argument("--skip-equality", action="store_true",
                   help="reuse equality_*.npz already in --work-dir (the commands are listed)")
    args = parser.parse_args(argv)
    {"equality": run_equality, "timing": run_timing, "focus": run_focus,
     "drive": run_drive}[args.mode](args)


if __name__ == "__main__":
    main()
