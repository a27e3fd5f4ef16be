"""Which regime is each bandit direction in, and does the failure clock hold under the sqrt rule,
for the injected drift (the headline's) and for the emergent drift (the clipping study's)?

Each case is one batch sweep (64 ... 1024 responses, one lr0): both clocks, the emergent
collapse, the theory's failure clock where there is one, the measured gradient noise scale
B_simple = tr(Sigma) / |G|^2 of the skill and the drift block, the drift's restoring force and
Adam's normaliser. `flat_exponent` fits the exponent p of lr ~ B^p that holds N_fail flat from
two rules' batch slopes.
"""
from dataclasses import dataclass
import time

import numpy as np

from twoclock.analysis import report as tables, results
from twoclock.config import RULE_EXPONENT, OptimConfig, SweepConfig, param, require, require_int
from twoclock.engine.sweep import run_sweep
from twoclock.models.bandit import EMERGENT
from twoclock.studies.assemble import assemble
from twoclock.studies.protocol import Engine, Study

MODELS = ("bandit",)  # the cases are the bandit's regimes
UNCLIPPED = {**EMERGENT, "clip_low": None}
# name -> (bandit overrides, optimizer overrides)
CASES = {
    "injected drift (headline default)": ({}, {}),
    "injected, signal-dominated (c_d = 0.01)": (dict(drift_noise=0.01, drift_threshold=10.0,
                                                     drift_scale=0.05), {}),
    "emergent drift, unclipped, sqrt rule": (UNCLIPPED, {}),
    "emergent drift, unclipped, sqrt rule, beta2 0.95": (UNCLIPPED, dict(beta2=0.95)),
    "emergent drift, unclipped, sqrt rule, Malladi companions": (UNCLIPPED, dict(malladi=True)),
    "emergent drift, clip eps 0.2, sqrt rule": (EMERGENT, {}),
}
BUDGET = {"injected": 100_000, "emergent": 40_000}
LR0S_EMERGENT = (0.02, 0.04)  # two lr0s: the failure clock's lr exponent at fixed B


@dataclass(frozen=True)
class Config:
    """Which cases, and how many seeds each."""
    SCRIPT = "bandit_regimes.py"
    MODEL_FLAGS = False  # each case sets its own model and optimizer config
    seeds: int = param(16, "seeds per (case, batch, lr0)")
    cases: tuple = param(tuple(range(len(CASES))), "case indices: " + "; ".join(
        f"{i} = {n}" for i, n in enumerate(CASES)))

    def __post_init__(self):
        require_int("seeds", self.seeds)
        require(len(self.cases) > 0 and all(isinstance(i, int) and 0 <= i < len(CASES)
                                            for i in self.cases),
                "cases", f"indices in [0, {len(CASES) - 1}]", self.cases)


def run_case(model, name: str, seeds: int, quiet: bool = True, keep=None) -> dict:
    """One case's result dict (the headline's layout, plus per-entry drift diagnostics)."""
    kw, okw = CASES[name]
    cfg, opt = model.config(**kw), OptimConfig(**okw)
    d = model.default_sweep
    two = name == "emergent drift, unclipped, sqrt rule"
    sweep = SweepConfig(batches=d["batches"], lr0s=LR0S_EMERGENT if two else d["lr0s"],
                        seeds=seeds, budget=BUDGET[cfg.drift_source])
    t0 = time.perf_counter()
    res = run_sweep(model, cfg, opt, sweep, quiet=quiet, keep=keep)
    runs, _ = assemble(model, cfg, opt, sweep, res, extra=("collapse_n",))
    for r in runs:
        i, j = res.batches.index(r["batch"]), res.lr0s.index(r["lr0"])
        ck = {k: v[j] for k, v in res.ckpt[i].items()}  # [S, C]
        r["drift_diagnostics"] = {k: float(np.mean(ck[k])) for k in (
            "restoring_drift", "adam_rms_drift", "move_drift", "logratio_drift", "clip_frac",
            "clip_frac_active")}
        # each seed's crossings (samples, 0 = never), so a paired contrast can be recomputed
        r["per_seed"] = {"progress": res.prog_n[i, j].tolist(),
                         "failure": res.fail_n[i, j].tolist(),
                         "collapse": np.asarray(res.extra["collapse_n"][i, j]).tolist()}
        if cfg.drift_source == "emergent":
            r["theory"] = {}  # the injected pull's theory does not apply
    return {"unit": "responses", "overrides": {"model": kw, "optimizer": okw}, "runs": runs,
            "config": results.config_dict(model=cfg, optimizer=opt, sweep=sweep),
            "seconds": time.perf_counter() - t0}


def batch_slope(case: dict, lr0=None, clock: str = "failure_samples") -> float | None:
    """Least-squares slope of log N(B) against log B (at one lr0, default the smallest) over
    the batches whose median is known."""
    lr0 = min(r["lr0"] for r in case["runs"]) if lr0 is None else lr0
    pts = [(r["batch"], r[clock]["median"]) for r in case["runs"]
           if r["lr0"] == lr0 and r[clock]["median"]]
    if len(pts) < 2:
        return None
    b, n = np.log(np.array(pts, float)).T
    return float(np.polyfit(b, n, 1)[0])


def lr_exponent(case: dict, clock: str = "failure_samples") -> float | None:
    """q in N ~ lr^-q at fixed batch: median over batches of -dlog N / dlog lr0 between the
    case's two lr0s."""
    lo, hi = sorted({r["lr0"] for r in case["runs"]})[:2]
    get = {(r["batch"], r["lr0"]): r[clock]["median"] for r in case["runs"]}
    q = [-np.log(get[(b, hi)] / get[(b, lo)]) / np.log(hi / lo) for b, l in get
         if l == lo and get[(b, lo)] and get.get((b, hi))]
    return float(np.median(q)) if q else None


def flat_exponent(slope: float, q: float, p_rule: float) -> float | None:
    """The exponent p of lr ~ B^p that holds N flat, for N ~ B^a lr^-q: under the rule p_rule
    the batch slope is a - q p_rule, so a = slope + q p_rule and p = a / q."""
    if slope is None or not q:
        return None
    return float((slope + q * p_rule) / q)


def run(model, model_cfg, opt, study: Config, *, keep=None, quiet: bool = True,
        engine: Engine = Engine()) -> dict:
    """Every chosen case (each sets its own model and optimizer config: model_cfg and opt are
    the defaults, unused)."""
    del model_cfg, opt, engine
    names = [list(CASES)[i] for i in study.cases]
    out = {"cases": {n: run_case(model, n, study.seeds, quiet, keep) for n in names},
           "versions": results.versions()}
    for n, c in out["cases"].items():
        c["failure_slope"] = batch_slope(c)
        if len({r["lr0"] for r in c["runs"]}) >= 2:
            c["failure_lr_exponent"] = q = lr_exponent(c)
            c["flat_exponent"] = flat_exponent(
                c["failure_slope"], q, RULE_EXPONENT[c["config"]["optimizer"]["lr_rule"]])
    return out


def report(out: dict) -> str:
    """Per case: both clocks per (batch, lr0), the drift's diagnostics and the flat exponent."""
    lines = []
    for name, case in out["cases"].items():
        lines += [f"\n{name}: {case['seconds']:.0f} s; N_fail ~ B^"
                  f"{tables.fmt_num(case['failure_slope'], '.2f')}", tables.clock_table(case)]
        lines.append("  drift: " + "; ".join(
            f"B {r['batch']}: restoring {r['drift_diagnostics']['restoring_drift']:.3g}, "
            f"Adam rms {r['drift_diagnostics']['adam_rms_drift']:.3g}, "
            f"move/batch {r['drift_diagnostics']['move_drift']:.3g}" for r in case["runs"]))
        if case.get("flat_exponent") is not None:
            lines.append(f"  N_fail ~ lr^-{case['failure_lr_exponent']:.2f} at fixed B: "
                         f"lr ~ B^{case['flat_exponent']:.2f} holds N_fail flat")
    return "\n".join(lines)


STUDY = Study("bandit_regimes", Config, run, report, models=MODELS)
