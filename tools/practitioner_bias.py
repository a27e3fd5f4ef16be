"""Where the policy model's sqrt-rule 8x bias comes from (docs/plan.md, "A practitioner's
sweep"): Adam's form predicts its clock to grow as about B^0.41 from 256 to 1024 under the sqrt
rule; it grows as B^0.33. This measures the clock's lr elasticity at B 1024 around the sqrt
rule's lr there (the form's -1: an lr that bought more than 1/lr would slow the growth), and the
fixed-lr exponent from 256 to 1024 at that lr and at the largest pilot's (the form's, with its
pilots' knee: 0.5 + 0.5 m / (m + B_n)): whether the knee moves with the lr or with the batch.

    python tools/practitioner_bias.py [--seeds 16]

The policy model at its defaults, Adam, 16 seeds a cell, the median of the engine's progress
clocks; lr0 1e-4 at b0 8 as in the practitioner design."""
import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LR0, B0, BUDGET = 1e-4, 8.0, 30_000


def clock(batch: int, lr: float, seeds: int) -> float:
    """The median progress clock (samples) of `seeds` policy runs at a fixed lr."""
    from twoclock import OptimConfig  # noqa: PLC0415 (JAX: only when measuring)
    from twoclock.models import MODELS  # noqa: PLC0415
    from twoclock.studies.planner import logs_check  # noqa: PLC0415
    m = MODELS["policy"]
    res = logs_check.simulate(m, m.config(), OptimConfig(name="adam", lr_rule="fixed"),
                              (batch,), lr, seeds, BUDGET, 16)
    n = np.asarray(res.prog_n[0, 0], np.float64)
    return float(np.median(np.where(n > 0, n, math.inf)))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=16, help="runs a cell (>= 2)")
    a = ap.parse_args(argv)
    if a.seeds < 2:
        ap.error(f"--seeds: at least 2, got {a.seeds}")
    t0 = time.perf_counter()
    lr = LR0 * math.sqrt(1024 / B0)  # the sqrt rule's lr at 1024
    lrs = (lr / 2, lr, 2 * lr)
    at = [clock(1024, x, a.seeds) for x in lrs]
    el = np.diff(np.log(at)) / np.diff(np.log(lrs))
    print(f"B 1024, fixed lr {', '.join(f'{x:.4g}' for x in lrs)}: clocks "
          f"{', '.join(f'{x:.0f}' for x in at)}; lr elasticity {el[0]:.3f}, {el[1]:.3f}")
    by_b = [clock(b, lr, a.seeds) for b in (256, 512)] + [at[1]]
    ex = np.diff(np.log2(by_b))
    print(f"fixed lr {lr:.4g}, B 256, 512, 1024: clocks {', '.join(f'{x:.0f}' for x in by_b)}; "
          f"exponent per doubling {ex[0]:.3f}, {ex[1]:.3f}")
    low = LR0 * math.sqrt(128 / B0)  # the largest pilot's lr under the sqrt rule
    by_b = [clock(b, low, a.seeds) for b in (256, 512, 1024)]
    ex = np.diff(np.log2(by_b))
    print(f"fixed lr {low:.4g} (the largest pilot's), B 256, 512, 1024: clocks "
          f"{', '.join(f'{x:.0f}' for x in by_b)}; exponent per doubling {ex[0]:.3f}, "
          f"{ex[1]:.3f}")
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
