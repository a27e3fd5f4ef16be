"""Which regime is each bandit direction in? `python experiments/bandit_regimes.py`.

Runs the default bandit (noise-dominated drift) and a signal-dominated-drift counter-example
over a 16x batch range and prints, per batch, both clocks, the emergent collapse, and the
measured gradient noise scale B_simple = tr(Sigma) / |G|^2 (in responses) of the skill block
(averaged over checkpoints up to the progress clock) and of the drift block (whole run).
A direction is noise-dominated at batch B when B << B_simple.
"""
import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

from twoclock import bandit
from twoclock.clocks import summarize
from twoclock.config import OptimConfig, SweepConfig
from twoclock.sweep import run_sweep

CASES = {
    "default (noise-dominated drift)": {},
    "signal-dominated drift (c_d = 0.01)": dict(drift_noise=0.01, drift_threshold=10.0,
                                                drift_scale=0.05),
}


def regime_rows(res, cfg) -> list:
    rows = []
    for i, B in enumerate(res.batches):
        ck = res.ckpt[i]
        prog = summarize(res.prog_n[i, 0])
        upto = prog["median"] or float(ck["samples"][0, 0, -1])
        early = ck["samples"][0] <= max(upto, ck["samples"][0, 0, 0])  # [S, C]
        bs_skill = bandit.noise_scale(ck["noise_skill"][0][early], ck["signal_skill"][0][early])
        bs_drift = bandit.noise_scale(ck["noise_drift"][0], ck["signal_drift"][0])
        rows.append({"batch": int(B), "lr": float(res.lrs_BxL[i, 0]),
                     **bandit.describe_batch(cfg, B), "progress_samples": prog,
                     "failure_samples": summarize(res.fail_n[i, 0]),
                     "collapse_samples": summarize(res.extra["collapse_n"][i, 0]),
                     "b_simple_skill": float(bs_skill), "b_simple_drift": float(bs_drift),
                     "clip_fraction": float(np.mean(ck["clip_frac"])),
                     "zero_adv_fraction": float(np.mean(ck["zero_adv_frac"]))})
    return rows


def fmt(s) -> str:
    if s["median"] is None:
        return f">budget ({s['reached']}/{s['seeds']})"
    hi = ">" if s["ci"][1] is None else f"{s['ci'][1]:.0f}"
    return f"{s['median']:.0f} [{s['ci'][0]:.0f}, {hi}]"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, default=16)
    p.add_argument("--json", default=os.path.join("results", "bandit_regimes.json"))
    ns = p.parse_args(argv)
    d = bandit.DEFAULT_SWEEP
    sweep = SweepConfig(batches=d["batches"], lr0s=d["lr0s"], seeds=ns.seeds, budget=d["budget"])
    out = {"cases": {}}
    for name, kw in CASES.items():
        cfg = dataclasses.replace(bandit.BanditConfig(), **kw)
        t0 = time.perf_counter()
        res = run_sweep("bandit", cfg, OptimConfig(), sweep, quiet=True)
        rows = regime_rows(res, cfg)
        out["cases"][name] = {"overrides": kw, "runs": rows, "seconds": time.perf_counter() - t0}
        print(f"\n{name}: lr0 {sweep.lr0s[0]} (sqrt rule, b0 8), {ns.seeds} seeds, "
              f"{out['cases'][name]['seconds']:.0f} s")
        print(f"{'B':>5} {'P':>4} | {'N_prog':>20} | {'N_fail':>20} | {'collapse':>22} | "
              f"{'B_simple skill':>14} {'B_simple drift':>14}")
        f0 = rows[0]["failure_samples"]["median"]
        for r in rows:
            f = r["failure_samples"]["median"]
            rel = "" if f is None or f0 is None else f" x{f / f0:.2f}"
            print(f"{r['batch']:>5} {r['prompts']:>4} | {fmt(r['progress_samples']):>20} | "
                  f"{fmt(r['failure_samples']) + rel:>20} | {fmt(r['collapse_samples']):>22} | "
                  f"{r['b_simple_skill']:>14.3g} {r['b_simple_drift']:>14.3g}")
    if os.path.dirname(ns.json):
        os.makedirs(os.path.dirname(ns.json), exist_ok=True)
    with open(ns.json, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"\nwrote {ns.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
