"""Regenerate twoclock/data/example_sweep_logs.csv: `python tools/example_sweep_logs.py [PATH]
[--answers]`.

A sweep as it is usually run, to try `experiments/plan.py --logs` on: design 0 of the practitioner
study's policy-model designs under a fixed lr (twoclock.studies.planner.practitioner; docs/plan.md,
"A practitioner's sweep"). The tiny transformer trained by GRPO on 2-digit addition (its
defaults: Adam, lr 1e-4 at every batch), one seed at each of B = 32, 64 and 128 responses, its
held-out accuracy scored on 1000 items (Binomial(1000, acc) / 1000) every 25 updates and not at
step 0. The pilots are simulated with the study's 16 seeds a batch and seed 0's log is written, so
the file is the study's `plan_calibration_practitioner_policy_fixed_s0.csv` bit for bit (on one
platform). About 5 minutes on 2 cores; --answers also simulates the held-out batches (2x and 8x,
16 seeds each: about 4 minutes more) and prints the median clocks a plan of this file is scored
against.
"""
import argparse
import os

from twoclock import OptimConfig
from twoclock.models import get
from twoclock.studies.planner import logs_check, practitioner as pr

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "twoclock",
                    "data", "example_sweep_logs.csv")
MODEL, RULE, SEED = "policy", "fixed", 0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", nargs="?", default=DATA, help="where to write (default: the shipped "
                                                          "file)")
    ap.add_argument("--answers", action="store_true",
                    help="also simulate the held-out batches and print their answers")
    a = ap.parse_args(argv)
    model = get(MODEL)
    cfg, opt = model.config(), OptimConfig(lr_rule=RULE)
    progress, _, conds, _ = logs_check.conditions(model, cfg)
    metric = conds[0].metric
    pilots = pr.batches(model)[0]
    sims = pr.pilot_sims(model, cfg, opt)
    pr.write_design(a.path, sims, pilots, SEED, metric, pr.noise_rng(RULE))
    print(f"wrote {a.path}: {MODEL} model, {RULE} lr, one seed at B {', '.join(map(str, pilots))}")
    if a.answers:
        for b, n in pr.heldout_answers(model, cfg, opt).items():
            print(f"B {b}: the median of {pr.HELDOUT_SEEDS} seeds' clocks to {progress}: "
                  f"{n:.6g} samples")


if __name__ == "__main__":
    main()
