"""A public batch sweep stored as logged curves (twoclock/data/real/<sweep>/curves.csv), scored
pre-registered: the planner reads the pilots' curves as a user would (`plan.py --logs`), and
predicts the held-out batches' clocks, read from their curves the same way. No JAX.

    python tools/real_curves.py extract TB_DIR OUT.csv    # the TensorBoard runs -> curves.csv
    python tools/real_curves.py predict SWEEP OUT.json    # pilots only; refuses an existing OUT
    python tools/real_curves.py score PREDICTIONS.json OUT.json
    python tools/real_curves.py exponent SWEEP LEVEL B_FROM   # the sweep's growth past B_FROM

The sweep's design.json fixes, before any prediction: the metric, the level grid of targets,
and the designs (pilot batches, held-out batches). `predict` reads only the pilots' rows: a
design's targets are the grid's levels that every pilot crosses between two logged points (not
at its first), and at each it writes
- the planner's Adam form (`progress_form="adam"`, the lr rule read from the pilots), its
  median and 95% band at each held-out batch;
- the planner's default forms (saturation or curvature);
- the joint fit of the design's targets (twoclock/pilot/levels.py), Adam's form;
- two baselines refitted on the pilots' clocks (tools/real_sweep.py): McCandlish's N = N_min
  (1 + B / B_noise), and the obvious rule, the largest pilot's clock times (B / B_top)^(1 - p).
Commit its file before running `score`, which reads the held-out curves: each held-out run's
clock is its first logged crossing, linear in samples (twoclock.pilot.clocks.crossing, the
planner's own reading), "never" where its curve does not reach the level.
"""
import csv
import json
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
from real_sweep import DATA, mccandlish_fit, mccandlish_predict, obvious_rule  # noqa: E402
from score_real import paired_cis, write_once  # noqa: E402
from twoclock.atomic import atomic_write  # noqa: E402
from twoclock.pilot import api, bands, levels  # noqa: E402
from twoclock.pilot.clocks import crossing  # noqa: E402
from twoclock.pilot.conditions import parse_condition  # noqa: E402
from twoclock.pilot.plan import PilotError  # noqa: E402

LEVEL = 0.95
METHODS = ("adam", "default", "joint", "mccandlish", "obvious_rule")


# ------------------------------------------------------------------------------------ the data

def extract(tb_dir: str, out: str, batch_re: str, lr: float, samples_tag: str, tags,
            source: str) -> int:
    """Every TensorBoard run under tb_dir as rows of curves.csv: run (its folder), batch (from
    its name by batch_re), lr, step, samples (the samples_tag scalar), the tags and the source
    key (the README's); rows written."""
    import re
    from twoclock.pilot import tbfiles
    rows = []
    for name, _, by_step, _, _ in tbfiles.runs(tb_dir, tbfiles.event_dirs(tb_dir), []):
        b = int(re.search(batch_re, name).group(1))
        for step in sorted(by_step):
            v = by_step[step]
            rows.append([name, b, f"{lr:g}", step, f"{v[samples_tag]:.0f}",
                         *(f"{v[t]:.9g}" for t in tags), source])
    rows.sort(key=lambda r: (r[1], r[3]))

    def write(f):
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["run", "batch", "lr", "step", "samples", *tags, "source"])
        w.writerows(rows)
    atomic_write(out, write)
    return len(rows)


def read_curves(sweep: str) -> tuple:
    """(design.json, {batch: {column: np.ndarray}}) of a stored curves sweep."""
    folder = os.path.join(DATA, sweep)
    if not os.path.isfile(os.path.join(folder, "curves.csv")):
        raise SystemExit(f"sweep: no curves.csv under twoclock/data/real/{sweep}")
    with open(os.path.join(folder, "design.json"), encoding="utf-8") as f:
        meta = json.load(f)
    runs = {}
    with open(os.path.join(folder, "curves.csv"), newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            runs.setdefault(float(r["batch"]), []).append(r)
    out = {}
    for b, rs in runs.items():
        if len({r["run"] for r in rs}) != 1:
            raise SystemExit(f"{sweep}: two runs at batch {b:g}")
        out[b] = {"run": rs[0]["run"], "lr": float(rs[0]["lr"]),
                  "samples": np.array([float(r["samples"]) for r in rs]),
                  "metric": np.array([float(r[meta["metric"]]) for r in rs])}
    return meta, out


def clock(run: dict, text: str) -> tuple:
    """(samples at the first logged crossing of the condition, index of the first point that
    meets it; None: never, 0: at the first logged point)."""
    at, i = crossing(run["samples"], run["metric"], parse_condition(text, "--progress"))
    return (float(at) if i is not None else None), i


def table(runs: dict, batches, metric: str) -> dict:
    """The runs at `batches` as the planner's in-memory log table."""
    cols = {"run": [], "batch": [], "lr": [], "samples": [], metric: []}
    for b in batches:
        r = runs[b]
        n = r["samples"].size
        cols["run"] += [r["run"]] * n
        cols["batch"] += [b] * n
        cols["lr"] += [r["lr"]] * n
        cols["samples"] += r["samples"].tolist()
        cols[metric] += r["metric"].tolist()
    return cols


# ------------------------------------------------------------------------------------ predict

def _bands(plan: dict) -> dict:
    return {p["batch"]: {"median": p["progress_samples"]["median"],
                         "band": p["progress_samples"]["ci"]} for p in plan["predictions"]}


def _plan(tab, text, held, form):
    try:
        return api.plan_logs(tab, text, [], predict=list(held), progress_form=form).to_json()
    except PilotError as e:
        return str(e)


def predict_design(meta: dict, runs: dict, d: dict) -> dict:
    """One design's targets and each method's predictions at its held-out batches."""
    pilots, held, metric = [float(b) for b in d["pilots"]], [float(b) for b in d["held_out"]], \
        meta["metric"]
    tab = table(runs, pilots, metric)
    lr = [runs[b]["lr"] for b in pilots]
    p = math.log(lr[-1] / lr[0]) / math.log(pilots[-1] / pilots[0])  # the pilots' lr ~ B^p
    targets, skipped, plans = [], {}, {}
    for level in meta["levels"]:
        text = f"{metric}>={level:g}"
        got = [clock(runs[b], text) for b in pilots]
        if any(i is None for _, i in got):
            skipped[text] = "not reached by pilot B " + ", ".join(
                f"{b:g}" for b, (_, i) in zip(pilots, got) if i is None)
            continue
        if any(i == 0 for _, i in got):
            skipped[text] = "pilot B " + ", ".join(f"{b:g}" for b, (_, i) in zip(pilots, got)
                                                   if i == 0) + " meets it at its first point"
            continue
        n_p = [n for n, _ in got]
        plans[text] = {f: _plan(tab, text, held, f) for f in ("adam", None)}
        mc = mccandlish_fit(pilots, n_p)
        targets.append({"target": text, "pilot_samples": dict(zip(map(str, pilots), n_p)),
                        "mccandlish_fit": mc, "predictions": {
                            str(b): {"mccandlish": mccandlish_predict(mc, b),
                                     "obvious_rule": obvious_rule(pilots[-1], n_p[-1], b, p)}
                            for b in held}})
    texts = [t["target"] for t in targets]
    ok = [t for t in texts if not isinstance(plans[t]["adam"], str)]
    joint = None
    if len(ok) >= 2:
        try:
            joint = levels.joint_plan(ok, [plans[t]["adam"] for t in ok], held, LEVEL)
        except PilotError as e:
            joint = str(e)
    for t in targets:
        for name, pl in (("adam", plans[t["target"]]["adam"]),
                         ("default", plans[t["target"]][None])):
            for b in held:
                t["predictions"][str(b)][name] = pl if isinstance(pl, str) else _bands(pl)[b]
        row = None if not isinstance(joint, dict) or t["target"] not in ok else \
            _bands(joint["targets"][ok.index(t["target"])])
        for b in held:
            t["predictions"][str(b)]["joint"] = (row[b] if row is not None else
                                                 joint if isinstance(joint, str) else
                                                 "not in the joint fit")
    return {"name": d["name"], "pilots": pilots, "held_out": held, "lr_exponent_p": p,
            "skipped_targets": skipped, "targets": targets}


def predict(sweep: str, out: str) -> dict:
    write_once(out)
    meta, runs = read_curves(sweep)
    doc = {"sweep": sweep, "metric": meta["metric"], "level": LEVEL,
           "clock": "first logged crossing, linear in samples (the planner's reading)",
           "methods": {"adam": "plan_logs(progress_form='adam') on the pilots' curves",
                       "default": "plan_logs on the pilots' curves, forms as they are",
                       "joint": "levels.joint_plan over the design's targets, Adam's form",
                       "mccandlish": "N = N_min (1 + B / B_noise) refitted on the pilots' "
                                     "clocks, least squares in log N",
                       "obvious_rule": "the largest pilot's clock x (B / B_top)^(1 - p)"},
           "designs": [predict_design(meta, runs, d) for d in meta["designs"]]}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


# -------------------------------------------------------------------------------------- score

def score(pred_path: str, out: str) -> dict:
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    meta, runs = read_curves(pre["sweep"])
    rows = []
    for d in pre["designs"]:
        top = d["pilots"][-1]
        for t in d["targets"]:
            for b, pr in t["predictions"].items():
                truth, i = clock(runs[float(b)], t["target"])
                row = {"design": d["name"], "target": t["target"], "batch": float(b),
                       "x_largest_pilot": float(b) / top, "truth": truth,
                       "truth_at_first_point": i == 0}
                for m in METHODS:
                    v = pr[m]
                    if isinstance(v, str):
                        row[m] = {"refused": v}
                        continue
                    med = v if isinstance(v, float) else v["median"]
                    s = {"median": med, "error": None if truth is None else med / truth - 1}
                    if isinstance(v, dict):
                        band = v["band"]
                        s["covered"] = truth is not None and band[0] is not None and \
                            band[0] <= truth and (band[1] is None or truth <= band[1])
                        s["width"] = bands.width({"median": med, "ci": band})
                    row[m] = s
                rows.append(row)
        atomic_write(out + ".partial", lambda f: json.dump(rows, f, indent=1))
    doc = {"predictions": pred_path, "rows": rows, "summary": summary(rows),
           "contrasts": contrasts(rows)}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    os.remove(out + ".partial")
    return doc


def summary(rows) -> list:
    """Per design and held-out batch: each method's median |error|, 95% coverage (a truth
    never reached counts as a miss) and median width, over the targets."""
    out = []
    for key in dict.fromkeys((r["design"], r["batch"]) for r in rows):
        rs = [r for r in rows if (r["design"], r["batch"]) == key]
        s = {"design": key[0], "batch": key[1], "x_largest_pilot": rs[0]["x_largest_pilot"],
             "targets": len(rs), "never": sum(r["truth"] is None for r in rs)}
        for m in METHODS:
            got = [r[m] for r in rs if "refused" not in r[m]]
            err = [abs(g["error"]) for g in got if g["error"] is not None]
            cov = [g["covered"] for g in got if "covered" in g]
            wid = [g["width"] for g in got if "width" in g]
            s[m] = {"answered": len(got),
                    "median_abs_error": float(np.median(err)) if err else None,
                    "coverage_95": float(np.mean(cov)) if cov else None,
                    "median_width": float(np.median(wid)) if wid else None}
        out.append(s)
    return out


def contrasts(rows) -> dict:
    """|log(pred / true)| of the Adam form minus each other method's, paired over the
    predictions every method answered with a truth (tools/score_real.py's paired_cis: CIs over
    the pairs and over the targets)."""
    ok = [r for r in rows if r["truth"] is not None and
          all("refused" not in r[m] for m in METHODS)]
    if len(ok) < 3:
        return {"n": len(ok), "reading": "too few predictions answered by every method"}
    ratio = lambda m: [r[m]["median"] / r["truth"] for r in ok]
    groups = [f"{r['design']} {r['target']}" for r in ok]
    return {m: paired_cis(ratio("adam"), ratio(m), groups) for m in METHODS[1:]}


def exponent(runs: dict, text: str, b_from: float) -> dict:
    """The least-squares slope of log N on log B over the runs from b_from on whose curves
    cross the condition between two logged points (a run that never reaches it, or meets it
    at its first point, has no clock), with its Student-t 95% CI (one run a batch: the scatter
    about the line is the noise)."""
    from twoclock.pilot.fit import t_quantile
    pts = [(b, *clock(runs[b], text)) for b in sorted(runs) if b >= b_from]
    pts = [(b, n) for b, n, i in pts if i is not None and i > 0]
    if len(pts) < 3:
        raise SystemExit(f"exponent: {len(pts)} runs from B {b_from:g} reach {text}; need 3")
    x, y = (np.log([p[i] for p in pts]) for i in (0, 1))
    slope, icpt = np.polyfit(x, y, 1)
    dof = len(pts) - 2
    r = y - (icpt + slope * x)
    se = math.sqrt(float(r @ r) / dof / float(((x - x.mean()) ** 2).sum())) if dof else math.inf
    half = t_quantile(0.975, dof) * se if dof else math.inf
    return {"runs": len(pts), "batches": [p[0] for p in pts], "slope": float(slope),
            "ci": [float(slope - half), float(slope + half)]}


def _k(x) -> str:
    return f"{x / 1000:.1f}k"


def markdown(doc: dict, pre: dict) -> str:
    """The scored rows (truth, the Adam form's median and band, each method's error) and the
    summary, as docs/real_runs.md shows them."""
    bands_ = {(d["name"], t["target"], float(b)): pr["adam"] for d in pre["designs"]
              for t in d["targets"] for b, pr in t["predictions"].items()}
    out = ["| design | target | held-out B (x largest pilot) | true samples | Adam [95% band] "
           "| Adam | default forms | joint | McCandlish | obvious rule |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        a = bands_[(r["design"], r["target"], r["batch"])]
        out.append(f"| {r['design']} | {r['target'].split('>=')[1]} | {r['batch']:g} "
                   f"({r['x_largest_pilot']:.3g}x) | {_k(r['truth'])} | {_k(a['median'])} "
                   f"[{_k(a['band'][0])}, {_k(a['band'][1])}] | " + " | ".join(
                       f"{r[m]['error']:+.1%}" for m in METHODS) + " |")
    out += ["", "| design | held out | median abs. error: Adam, default, joint, McCandlish, "
            "obvious rule | 95% coverage: Adam, default, joint | median band: Adam, default, "
            "joint |", "|---|---|---|---|---|"]
    for s in doc["summary"]:
        out.append(f"| {s['design']} | {s['batch']:g} ({s['x_largest_pilot']:.3g}x, "
                   f"{s['targets']}) | " + ", ".join(
                       f"{s[m]['median_abs_error']:.1%}" for m in METHODS) + " | " + ", ".join(
                       f"{s[m]['coverage_95']:.0%}" for m in METHODS[:3]) + " | " + ", ".join(
                       f"x{s[m]['median_width']:.2f}" for m in METHODS[:3]) + " |")
    return "\n".join(out)


def main(argv) -> None:
    if argv[:1] == ["extract"] and len(argv) == 3:
        n = extract(argv[1], argv[2], r"q2_b_(\d+)_", 5e-3, "Train_EnvstepsSoFar",
                    ("Eval_AverageReturn", "Train_AverageReturn"), "tb_8938091")
        print(f"wrote {n} rows to {argv[2]}")
    elif argv[:1] == ["predict"] and len(argv) == 3:
        doc = predict(argv[1], argv[2])
        for d in doc["designs"]:
            print(d["name"], "targets:", [t["target"] for t in d["targets"]],
                  "skipped:", d["skipped_targets"])
    elif argv[:1] == ["score"] and len(argv) == 3:
        doc = score(argv[1], argv[2])
        for s in doc["summary"]:
            print(s["design"], f"B {s['batch']:g} ({s['x_largest_pilot']:.2g}x), "
                  f"{s['targets']} targets, {s['never']} never:", "; ".join(
                      f"{m} " + ", ".join("-" if s[m][k] is None else
                                         (f"{s[m][k]:.1%}" if k != "median_width" else
                                          f"x{s[m][k]:.2f}")
                                         for k in ("median_abs_error", "coverage_95",
                                                   "median_width"))
                      for m in METHODS))
        for m, c in doc["contrasts"].items():
            print(f"adam - {m}: {c['mean']:+.3f}, CI over predictions [{c['ci_pairs'][0]:+.3f}, "
                  f"{c['ci_pairs'][1]:+.3f}], over targets [{c['ci_groups'][0]:+.3f}, "
                  f"{c['ci_groups'][1]:+.3f}] ({c['n']} predictions): {c['reading']}")
        with open(argv[1], encoding="utf-8") as f:
            print(markdown(doc, json.load(f)))
    elif argv[:1] == ["exponent"] and len(argv) == 4:
        meta, runs = read_curves(argv[1])
        e = exponent(runs, f"{meta['metric']}>={float(argv[2]):g}", float(argv[3]))
        print(f"{meta['metric']}>={float(argv[2]):g} over B {e['batches'][0]:g} to "
              f"{e['batches'][-1]:g} ({e['runs']} runs): N ~ B^{e['slope']:.3f} "
              f"[{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
