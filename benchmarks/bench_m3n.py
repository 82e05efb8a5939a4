"""M3NTagger: SGD with stochastic meta-descent against its SMO baseline and 1-best PA,
and its kernels (Yu & Lam, Accelerated Training of Maximum Margin Markov Models for
Sequence Labeling, Tables 2-3 and Figures 2-3).

CoNLL-2000 with the input features of the paper's Table 1 as far as the data
allows (no external lexicon): word, POS tag, word shape and four spelling
flags of the tokens at offsets -3..+3.  Two tasks: all chunk types (22
labels, chunk F1), and the paper's NP setting (NP chunks against everything
else: B-NP, I-NP, O; NP F1).  C = 1 as in the paper.

``--part linear``: on the full training set, M3N trained by SGD (SMD steps),
by the paper's baseline, structured SMO on the factored dual (at its default
cap of steps per visit, and run to tol at each visit for ``--slow-passes``),
and by the working-set dual, and 1-best PA for 10 epochs on the same
features: F1, training time, and the objective J of eq. 4 after each pass
against training time (Figure 2a), with the time SGD needs to reach the
objective each dual solver has after p passes.

``--part solvers``: SGD against structured SMO with the linear, quadratic
and neural kernels on the NP task, the first ``--solver-sentences`` training
sentences (Tables 2-3 and Figure 2 a-c, on a subset: exact kernels cost time
in proportion to the support tokens).

``--part kernels``: the NP task on training subsets (Figure 3): the linear,
quadratic ((<a, b> + 1)^2) and neural (tanh(0.1 <a, b>)) kernels by SGD, NP F1,
training time and support tokens; and the quadratic kernel approximated per
token by Nystroem in a Pipeline.  Exact kernels cost time proportional to
the support set per token, so they run on subsets.

Results go to ``--out`` (markdown) and ``--json`` (the curves, read by
``examples/plot_m3n_convergence.py``).

Usage::

    python benchmarks/bench_m3n.py --part linear --out benchmarks/results/m3n_linear.md
        --json benchmarks/results/m3n.json
    python benchmarks/bench_m3n.py --part solvers --out benchmarks/results/m3n_solvers.md
        --json benchmarks/results/m3n.json
    python benchmarks/bench_m3n.py --part kernels --out benchmarks/results/m3n_kernels.md
        --json benchmarks/results/m3n.json
"""
import argparse
import json
import sys
import time

import numpy as np
from common import DEFAULT_DATA, report
from sklearn.kernel_approximation import Nystroem
from sklearn.pipeline import make_pipeline

from sklstruct import M3NTagger, PassiveAggressiveTagger, SequenceVectorizer, TokenTransformer
from sklstruct.datasets import read_conll
from sklstruct.metrics import chunk_report

#: Table 1 of the paper without its lexicon: words, POS tags, shapes and
#: spelling flags at offsets -3..+3.
TABLE1 = ["word", "pos", "shape", "is_title", "is_upper", "has_digit", "has_hyphen"]
KERNELS = {"linear": dict(kernel="linear"),
           "quadratic": dict(kernel="poly", degree=2, gamma=1.0, coef0=1.0),
           "tanh": dict(kernel="tanh", gamma=0.1, coef0=0.0)}


def np_only(Y):
    return [np.array([lab if lab.endswith("-NP") else "O" for lab in y]) for y in Y]


def load(root):
    tr_tokens, tr_labels = read_conll(root / "conll2000" / "train.txt")
    te_tokens, te_labels = read_conll(root / "conll2000" / "test.txt")
    vec = SequenceVectorizer(TABLE1, window=3)
    return dict(Xtr=vec.fit_transform(tr_tokens), Xte=vec.transform(te_tokens),
                ytr=tr_labels, yte=te_labels, n_features=len(vec.vocabulary_),
                tokens=sum(map(len, tr_labels)))


def run(model, X, y, X_test, y_test):
    tic = time.perf_counter()
    model.fit(X, y)
    wall = time.perf_counter() - tic
    est = model[-1] if hasattr(model, "steps") else model
    rep = chunk_report(y_test, model.predict(X_test))
    hist = est.history_
    return dict(p=rep.precision, r=rep.recall, f1=rep.f1, wall=wall,
                train_s=float(sum(h["seconds"] for h in hist)), passes=len(hist),
                times=np.cumsum([h["seconds"] for h in hist]).tolist(),
                objective=[float(v) for v in getattr(est, "objective_curve_", [])],
                dual=getattr(est, "dual_objective_", None),
                n_support=int(getattr(est, "n_support_", 0)))


def time_to_reach(times, curve, target):
    hit = [t for t, v in zip(times, curve) if v <= target]
    return hit[0] if hit else None


def reach_table(rows, baseline, checkpoints):
    """Markdown rows: the time each SGD row needs to reach the objective the
    dual solver ``baseline`` has after p passes, against the baseline's time."""
    base = rows[baseline]
    sgds = [(name, r) for name, r in rows.items() if name.startswith("M3N SGD")]
    lines = [f"Time to reach the objective of {baseline} after p passes (training time "
             "only, the objective evaluations excluded):", "",
             "| p | its J | its s | " + " | ".join(f"{n} s | speed-up" for n, _ in sgds)
             + " |", "|---|---|---|" + "---|---|" * len(sgds)]
    for p in sorted(set(checkpoints) & set(range(1, base["passes"] + 1))):
        target, t_base = base["objective"][p - 1], base["times"][p - 1]
        cells = []
        for _, sgd in sgds:
            t_sgd = time_to_reach(sgd["times"], sgd["objective"], target)
            cells.append(f"{t_sgd:.1f} | {t_base / t_sgd:.1f}x" if t_sgd is not None
                         else f"not reached in {sgd['passes']} passes | -")
        lines.append(f"| {p} | {target:,.1f} | {t_base:.1f} | " + " | ".join(cells) + " |")
    return lines + [""]


def solver_table(rows):
    lines = ["| model | passes | training s | s / pass | P | R | F1 | final J | dual |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        obj = f"{r['objective'][-1]:,.1f}" if r["objective"] else "-"
        dual = f"{r['dual']:,.1f}" if r.get("dual") is not None else "-"
        lines.append(f"| {name} | {r['passes']} | {r['train_s']:.1f} | "
                     f"{r['train_s'] / r['passes']:.3f} | {100 * r['p']:.2f} | "
                     f"{100 * r['r']:.2f} | {100 * r['f1']:.2f} | {obj} | {dual} |")
    return lines + [""]


def part_linear(data, passes, slow_passes):
    out, curves = [], {}
    for task, ytr, yte in [("all chunks", data["ytr"], data["yte"]),
                           ("NP only", np_only(data["ytr"]), np_only(data["yte"]))]:
        models = {
            "M3N SGD (SMD)": M3NTagger(max_iter=passes, random_state=0),
            "M3N SGD (SMD, mu=3e-5)": M3NTagger(mu=3e-5, max_iter=passes, random_state=0),
            "M3N structured SMO": M3NTagger(solver="smo", max_iter=passes, random_state=0),
            "M3N structured SMO, each visit to tol": M3NTagger(
                solver="smo", max_smo_iter=1000, max_iter=slow_passes, random_state=0),
            "M3N working-set dual": M3NTagger(solver="working_set", max_iter=passes,
                                              random_state=0),
            "1-best PA, 10 epochs": PassiveAggressiveTagger(max_iter=10, random_state=0)}
        rows = {}
        for name, model in models.items():
            rows[name] = run(model, data["Xtr"], ytr, data["Xte"], yte)
            print(f"  {task}: {name}: F1 {100 * rows[name]['f1']:.2f}, "
                  f"{rows[name]['train_s']:.1f} s", flush=True)
        curves[task] = {name: {k: r[k] for k in ("times", "objective")}
                        for name, r in rows.items() if r["objective"]}
        lines = [f"### {task}", ""] + solver_table(rows)
        for baseline, points in [("M3N structured SMO", (10, 25, 50, passes)),
                                 ("M3N structured SMO, each visit to tol",
                                  (5, 10, slow_passes)),
                                 ("M3N working-set dual", (10, 25, 50, passes))]:
            lines += reach_table(rows, baseline, points)
        best = min(r["objective"][-1] for n, r in rows.items() if r["objective"])
        for name, r in rows.items():
            if r["objective"]:
                lines.append(f"{name}: final objective {r['objective'][-1] / best:.4f} times "
                             "the lowest.")
        if task == "all chunks":
            pa, sgd = rows["1-best PA, 10 epochs"], rows["M3N SGD (SMD)"]
            lines.append(f"Linear SGD's (defaults) chunk F1 minus 1-best PA's: "
                         f"{100 * (sgd['f1'] - pa['f1']):+.2f}.")
        out.append("\n".join(lines))
    return "\n\n".join(out), curves


def part_kernel_solvers(data, n, passes):
    """SGD against structured SMO with each kernel on the NP task (Tables 2-3,
    Figure 2 a-c), on the first n training sentences."""
    ytr, yte = np_only(data["ytr"])[:n], np_only(data["yte"])
    out, curves = [], {}
    for kernel, params in KERNELS.items():
        rows = {f"M3N SGD (SMD), {kernel}": M3NTagger(max_iter=passes, random_state=0,
                                                      **params),
                f"M3N structured SMO, {kernel}": M3NTagger(solver="smo", max_iter=passes,
                                                           random_state=0, **params)}
        rows = {name: run(m, data["Xtr"][:n], ytr, data["Xte"], yte)
                for name, m in rows.items()}
        for name, r in rows.items():
            print(f"  {name}: F1 {100 * r['f1']:.2f}, {r['train_s']:.1f} s", flush=True)
        curves[kernel] = {name: {k: r[k] for k in ("times", "objective")}
                          for name, r in rows.items()}
        sgd = next(r for name, r in rows.items() if "SGD" in name)
        rows = {name.replace(f", {kernel}", ""): r for name, r in rows.items()}
        lines = [f"### {kernel} kernel", ""] + solver_table(rows)
        lines += reach_table(rows, "M3N structured SMO", (5, 10, passes))
        smo = rows["M3N structured SMO"]
        lines.append(f"Final objective, SGD / SMO: {sgd['objective'][-1] / smo['objective'][-1]:.3f}; "
                     f"support tokens: SGD {sgd['n_support'] or '-'}, SMO {smo['n_support'] or '-'}.")
        out.append("\n".join(lines))
    return "\n\n".join(out), curves


def part_kernels(data, sizes, passes):
    ytr, yte = np_only(data["ytr"]), np_only(data["yte"])
    rows, lines = [], ["| training sentences | tokens | model | passes | training s | "
                       "s / pass | support tokens | NP F1 |", "|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        X, y = data["Xtr"][:n], ytr[:n]
        tokens = int(sum(map(len, y)))
        models = {f"{name} kernel": M3NTagger(max_iter=passes, random_state=0, **params)
                  for name, params in KERNELS.items()
                  if name != "tanh" or n <= max(sizes) // 4}
        models["quadratic by Nystroem (1000 components) + linear"] = make_pipeline(
            TokenTransformer(Nystroem(kernel="poly", degree=2, gamma=1.0, coef0=1.0,
                                      n_components=1000, random_state=0)),
            M3NTagger(max_iter=passes, random_state=0))
        for name, model in models.items():
            r = run(model, X, y, data["Xte"], yte)
            r.update(name=name, n=n, tokens=tokens)
            rows.append(r)
            support = r["n_support"] if "kernel" in name and "linear" not in name else "-"
            lines.append(f"| {n} | {tokens} | {name} | {r['passes']} | {r['train_s']:.1f} | "
                         f"{r['train_s'] / r['passes']:.2f} | {support} | "
                         f"{100 * r['f1']:.2f} |")
            print("  " + lines[-1], flush=True)
    return "\n".join(lines), rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--part", nargs="+", default=["linear", "solvers", "kernels"],
                        choices=["linear", "solvers", "kernels"])
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--slow-passes", type=int, default=20,
                        help="passes of the structured SMO run to tol at each visit")
    parser.add_argument("--solver-sentences", type=int, default=500)
    parser.add_argument("--solver-passes", type=int, default=20)
    parser.add_argument("--kernel-passes", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    parser.add_argument("--out")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    from pathlib import Path
    data = load(Path(args.data))
    body = (f"CoNLL-2000: {len(data['ytr'])} training sentences ({data['tokens']} tokens), "
            f"{sum(map(len, data['yte']))} test tokens; Table 1 features: "
            f"{data['n_features']} features; C = 1.\n\n")
    results = {}
    if "linear" in args.part:
        text, results["linear"] = part_linear(data, args.passes, args.slow_passes)
        body += ("## SGD against the dual solvers, linear kernel (Tables 2-3, Figure 2a)\n\n"
                 "Structured SMO at its default cap of 3 steps per example and visit, and "
                 "run to tol at each visit (cap 1000); the working-set dual at its cap "
                 "of 1000.\n\n" + text + "\n\n")
    if "solvers" in args.part:
        text, results["solvers"] = part_kernel_solvers(data, args.solver_sentences,
                                                       args.solver_passes)
        body += (f"## SGD against structured SMO by kernel, NP task, the first "
                 f"{args.solver_sentences} training sentences (Tables 2-3, Figure 2 a-c)\n\n"
                 f"{args.solver_passes} passes each; NP F1 on the full test set.\n\n"
                 + text + "\n\n")
    if "kernels" in args.part:
        text, results["kernels"] = part_kernels(data, args.sizes, args.kernel_passes)
        body += ("## Kernels on the NP task, by training-set size (Figure 3)\n\n"
                 f"SGD (SMD), {args.kernel_passes} passes; NP F1 on the full test set.\n\n"
                 + text + "\n")
    report("M3NTagger: SGD, SMO and kernels", "bench_m3n.py", argv, body, args.out)
    if args.json:
        # parts run separately share one file
        path = Path(args.json)
        merged = json.loads(path.read_text()) if path.exists() else {}
        merged.update(results)
        path.write_text(json.dumps(merged))
    return 0


if __name__ == "__main__":
    sys.exit(main())
