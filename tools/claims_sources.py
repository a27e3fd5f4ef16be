"""The committed sources of docs/claims.md: the per-seed numbers of every run a claim rests on,
small enough to keep in the repository (docs/claim_sources/), so every number the claims table
states can be recomputed from the repository without JAX (`python -m twoclock.analysis.claims`).

    python tools/claims_sources.py [--only NAME ...] [--out docs/claim_sources] [--reuse DIR]

- quadratic_sqrt, quadratic_fixed, bandit_sqrt, bandit_signal: one model's default sweep
  (`Model.default_sweep`) under one lr rule: per-seed first crossings in samples (0 = never
  crossed) for every (batch, lr0, seed), and the model's theory columns (seconds each).
- plan_check_MODEL: the planner's check from logs (`experiments/plan_check.py --logs --model
  MODEL`): each pilot run's clocks as the plan reads them, and the held-out answers beside the
  plan's predictions as the code makes them now (the policy model's: 11 min).
- STUDY_RUNS (policy_study, policy_variants, damage_study, bandit_regimes, clipping_4x1,
  clipping_4x2, plan_calibration): the study's own command, its per-seed numbers and its own
  answers (1 to 25 min each on 2 cores). `--reuse DIR` reads the JSON an earlier run of the
  same command wrote to DIR/NAME instead of running it.
"""
import argparse
import dataclasses
import json
import math
import os
import re
import sys
import time

import numpy as np

import twoclock
from twoclock import OptimConfig, SweepConfig, run_sweep
from twoclock.atomic import atomic_write
from twoclock.cli import run_study
from twoclock.models import MODELS
from twoclock.studies import STUDIES
from twoclock.studies.assemble import assemble

# name: (model, lr rule, the model's config fields changed from its defaults, extra per-seed
# clocks kept). bandit_signal: docs/bandit.md's signal-dominated counter-example.
SOURCES = {
    "quadratic_sqrt": ("quadratic", "sqrt", {}, ()),
    "quadratic_fixed": ("quadratic", "fixed", {}, ()),
    "bandit_sqrt": ("bandit", "sqrt", {}, ("collapse_n",)),
    "bandit_signal": ("bandit", "sqrt", {"drift_noise": 0.01, "drift_threshold": 10.0,
                                         "drift_scale": 0.05}, ("collapse_n",)),
}
PLAN_CHECKS = ("quadratic", "bandit", "policy")
# the slow studies whose per-seed numbers the claims recompute: name: (study, its flags)
STUDY_RUNS = {
    "policy_study": ("policy_study", []),
    "policy_variants": ("policy_study", ["--parts", "variants"]),
    "damage_study": ("damage_study", []),
    "bandit_regimes": ("bandit_regimes", []),
    "clipping_4x1": ("clipping", ["--batches", "64", "256", "1024", "--seeds", "32",
                                  "--minibatches", "4", "--epochs", "1"]),
    "clipping_4x2": ("clipping", ["--batches", "64", "256", "1024", "--seeds", "32",
                                  "--minibatches", "4", "--epochs", "2"]),
    "plan_calibration": ("plan_calibration", []),
    "updates_cost": ("updates_cost", []),
}


def _round(a) -> list:
    """Crossings to 6 significant digits (interpolated samples; exact to far below a seed's
    spread), as nested lists."""
    return np.vectorize(lambda v: float(f"{v:.6g}"))(np.asarray(a, np.float64)).tolist()


def source(name: str) -> dict:
    model_name, rule, changed, extra = SOURCES[name]
    m = MODELS[model_name]
    sweep = SweepConfig(**{k: tuple(v) if isinstance(v, list) else v
                           for k, v in m.default_sweep.items()})
    opt, cfg = OptimConfig(lr_rule=rule), dataclasses.replace(m.config(), **changed)
    t0 = time.perf_counter()
    res = run_sweep(m, cfg, opt, sweep, quiet=True)
    runs, crit = assemble(m, cfg, opt, sweep, res)
    theory = {k: [[None] * len(res.lr0s) for _ in res.batches]
              for k in ("progress_samples", "failure_samples")}
    for r in runs:
        i, j = list(res.batches).index(r["batch"]), list(res.lr0s).index(r["lr0"])
        for k in theory:
            theory[k][i][j] = (r.get("theory") or {}).get(k)
    per_seed = {"progress": res.prog_n, "failure": res.fail_n, "progress_updates": res.prog_t}
    per_seed.update({k.removesuffix("_n"): res.extra[k] for k in extra})
    return {
        "source": name, "command": f"python tools/claims_sources.py --only {name}",
        "model": model_name, "lr_rule": rule, "config_changed": changed, "unit": m.unit,
        "batches": [int(b) for b in res.batches], "lr0s": [float(v) for v in res.lr0s],
        "seeds": int(res.prog_n.shape[-1]),
        "per_seed": {k: _round(v) for k, v in per_seed.items()},
        "per_seed_shape": "[batch][lr0][seed]; 0 = never crossed within the budget",
        "theory": theory,
        # the model's critical batch per lr0 (null where it has none)
        "theory_critical_batch": [(c.get("theory") or {}).get("batch") for c in crit],
        "seconds": round(time.perf_counter() - t0, 1),
    }


def _condition(clock: str, conds: list) -> str:
    """The condition of conds that a held-out row's clock names (the row prints the
    threshold to 6 significant digits: 'progress_frac<=0.370854' for ...046)."""
    split = lambda c: re.match(r"(.+?)(<=|>=)(.+)", c).groups()  # noqa: E731
    m, op, v = split(clock)
    same = [c for c in conds if split(c)[:2] == (m, op) and
            float(f"{float(split(c)[2]):.6g}") == float(f"{float(v):.6g}")]
    assert len(same) == 1, (clock, conds)
    return same[0]


def _heldout(h: dict, now: dict, conds: list) -> dict:
    """A held-out row of the check: its answer, and the prediction the plan makes now."""
    clock = _condition(h["clock"], conds)
    pred = now[(float(h["batch"]), clock)]
    if not math.isclose(pred["median"], h["vs_logged"]["predicted"], rel_tol=1e-9):
        raise SystemExit(f"B {h['batch']} {clock}: the plan predicts {pred['median']:.6g} now, "
                         f"the check's run {h['vs_logged']['predicted']:.6g}: rerun the check")
    return {"batch": h["batch"], "clock": clock, "answer": h["vs_logged"]["measured"],
            "answer_ci": h["measured_ci"], "predicted": pred["median"], "band": pred["ci"]}


def plan_check(model: str, work: str, reuse: str | None = None) -> dict:
    """The plan check from logs at its defaults: its held-out answers and predictions, and each
    pilot run's clocks as the plan reads them (twoclock.plan_logs on the pilots' log file).
    With reuse: the check an earlier run of the same command wrote to reuse/plan_check_MODEL."""
    t0 = time.perf_counter()
    if reuse is not None:
        work = os.path.join(reuse, f"plan_check_{model}")
    else:
        code = run_study.main(STUDIES.plan_check, ["--model", model, "--logs", "--out", work,
                                                   "--no-figure", "--quiet"])
        if code != 0:
            raise SystemExit(f"plan_check --model {model} failed ({code})")
    with open(os.path.join(work, f"plan_check_{model}_logs.json")) as f:
        pc = json.load(f)
    log_file = (os.path.join(work, os.path.basename(pc["log_file"])) if reuse is not None
                else pc["log_file"])
    held = sorted({h["batch"] for h in pc["heldout"]})
    # the plan as the code plans it now (the check's own call): its pilots' clocks, and each
    # held-out prediction and band (the band may have changed since a reused run; the median
    # of the same logs must not)
    plan = twoclock.plan_logs(log_file, pc["progress"], pc["failures"], predict=held).to_json()
    now = {(p["batch"], pc["progress"]): p["progress_samples"] for p in plan["predictions"]}
    now.update({(p["batch"], f["condition"]): p["failure_samples"] for f in plan["failures"]
                for p in f["predictions"]})
    pilots = {}
    for r in plan["runs"]:
        per = pilots.setdefault(str(int(r["batch"])), {c: [] for c in
                                                       [pc["progress"]] + pc["failures"]})
        per[pc["progress"]].append(r["progress_samples"])
        for c in pc["failures"]:
            per[c].append(r["failures"][c])  # None: never crossed in its logs
    return {
        "source": f"plan_check_{model}", "command": "python tools/claims_sources.py --only "
        f"plan_check_{model} (python experiments/plan_check.py --logs --model {model})",
        "model": model, "lr_rule": pc["lr_rule"], "pilot_batches": pc["pilot_batches"],
        "pilot_seeds": pc["pilot_seeds"], "heldout_seeds": pc["heldout_seeds"],
        "pilot_clocks": {b: {c: [None if v is None else float(f"{v:.6g}") for v in vs]
                             for c, vs in per.items()} for b, per in pilots.items()},
        "heldout": [_heldout(h, now, [pc["progress"]] + pc["failures"])
                    for h in pc["heldout"]],
        "seconds": round(time.perf_counter() - t0, 1),
    }


def _rounded(x):
    """Every float of a nested JSON value to 6 significant digits."""
    if isinstance(x, float):
        return float(f"{x:.6g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def study_output(name: str, work: str, reuse: str | None) -> tuple:
    """(the study's JSON, its folder): run `STUDY_RUNS[name]` into work/name, or, with reuse,
    read the JSON an earlier run of the same command wrote to reuse/name."""
    study, flags = STUDY_RUNS[name]
    folder = os.path.join(reuse or work, name)
    if reuse is None:
        code = run_study.main(STUDIES[study], flags + ["--out", folder, "--no-figure",
                                                       "--quiet"])
        if code != 0:
            raise SystemExit(f"{study} {' '.join(flags)} failed ({code})")
    found = [f for f in sorted(os.listdir(folder)) if f.endswith(".json") and f != "run.json"
             and not f.startswith("plan_calibration_")]
    if len(found) != 1:
        raise SystemExit(f"{folder}: expected one study JSON, found {found}")
    with open(os.path.join(folder, found[0])) as f:
        return json.load(f), folder


def _calibration_rows(d: dict, folder: str) -> list:
    """Each scored row of the calibration at its 95% level, with the no-theory baseline: the
    median over the design's seeds of the largest pilot batch's clock (held in samples)."""
    from twoclock.pilot import clocks as pc, reader  # noqa: PLC0415 (NumPy only)
    from twoclock.pilot.conditions import parse_condition  # noqa: PLC0415
    from twoclock.studies.planner import calibrate  # noqa: PLC0415
    seeds = dict(calibrate.SEED_SETS)
    out, logs = [], {}
    for r in d["rows"]:
        sim = d["simulations"][r["model"]]
        path = os.path.join(folder, os.path.basename(sim["log_files"][0]))
        cond = parse_condition(r["clock"], "--progress")
        if (path, cond.metric) not in logs:
            logs[(path, cond.metric)] = reader.read_logs(path, (cond.metric,))
        log = logs[(path, cond.metric)]
        top, s_set = max(r["pilots"]), seeds[r["design"].split(", ", 1)[1]]
        runs = log.runs
        found = pc.clocks(log, cond, need_one=False, first_ok=True)
        at = [k for k, run in enumerate(runs) if run.name in {f"B{top}-s{i}" for i in s_set}]
        base = float(np.median([found[k].samples if found[k].crossed else math.inf
                                for k in at]))
        lvl = r["levels"]["0.95"]
        out.append({"model": r["model"], "design": r["design"], "pilots": r["pilots"],
                    "batch": r["batch"], "clock": r["clock"], "kind": r["kind"],
                    "answer": r["measured"], "predicted": lvl["predicted"], "band": lvl["ci"],
                    "baseline": base if math.isfinite(base) else None})
    return out


def from_study(name: str, work: str, reuse: str | None) -> dict:
    """A slow study's committed source: its per-seed numbers and its own answers (the claims
    recompute from the first and a test checks them against the second)."""
    t0 = time.perf_counter()
    d, folder = study_output(name, work, reuse)
    study, flags = STUDY_RUNS[name]
    out = {"source": name, "command": f"python tools/claims_sources.py --only {name} "
           f"(python experiments/{study}.py {' '.join(flags)})".replace(" )", ")")}
    if name in ("policy_study", "policy_variants", "damage_study"):
        out["study"] = d["study"]
        out["cells"] = {n: {k: c[k] for k in ("per_seed", "critical_batch", "start") if k in c}
                        for n, c in d["cells"].items()}
        out["answers"] = d["answers"]
    elif name == "bandit_regimes":
        out["cases"] = {n: [{"batch": r["batch"], "lr0": r["lr0"], "per_seed": r["per_seed"]}
                            for r in c["runs"]] for n, c in d["cases"].items()}
    elif name.startswith("clipping_"):
        out["config"] = {k: d["config"][k] for k in ("clips",)}
        out["config"].update({k: d["config"].get(k) for k in ("minibatches", "epochs")})
        out["runs"] = [{k: r[k] for k in ("batch", "clip", "fail_n")} for r in d["runs"]]
        out["claims"] = {k: d["claims"][k] for k in ("a_failure_delay", "a_more_at_larger_batch")}
    else:  # plan_calibration
        out["rows"] = _calibration_rows(d, folder)
        out["coverage"] = d["coverage"]
    out = _rounded(out)
    out["seconds"] = round(d.get("seconds") or (time.perf_counter() - t0), 1)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = sorted(SOURCES) + [f"plan_check_{m}" for m in PLAN_CHECKS] + list(STUDY_RUNS)
    p.add_argument("--only", nargs="+", choices=names, default=names)
    p.add_argument("--work", default=os.path.join("results", "claims_sources"),
                   help="where the plan checks write their logs (not committed)")
    p.add_argument("--out", default=os.path.join("docs", "claim_sources"))
    p.add_argument("--reuse", metavar="DIR", help="read the slow studies' JSON from DIR/NAME "
                   "(written by the same commands) instead of running them")
    a = p.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    for name in a.only:
        out = (plan_check(name.removeprefix("plan_check_"), a.work, a.reuse)
               if name.startswith("plan_check_") else
               from_study(name, a.work, a.reuse) if name in STUDY_RUNS else source(name))
        text = "{\n" + ",\n".join(f"{json.dumps(k)}: {json.dumps(v, allow_nan=False)}"
                                   for k, v in out.items()) + "\n}\n"  # a key a line
        atomic_write(os.path.join(a.out, f"{name}.json"), lambda f: f.write(text))
        print(f"{name}: {out['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
