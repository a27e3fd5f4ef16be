"""Where the policy model's sqrt-rule 8x bias comes from (docs/plan.md, "A practitioner's
sweep"): Adam's form predicts its clock to grow as about B^0.41 from 256 to 1024 under the sqrt
rule; it grows as B^0.33. This measures the clock's lr elasticity at B 1024 around the sqrt
rule's lr there (the form's -1: an lr that bought more than 1/lr would slow the growth), and the
fixed-lr exponent from 256 to 1024 at that lr and at the largest pilot's (the form's, with its
pilots' knee: 0.5 + 0.5 m / (m + B_n)): whether the knee moves with the lr or with the batch.

    python tools/practitioner_bias.py [--seeds 16]
    python tools/practitioner_bias.py --exact N256 N1024 [--seeds 16]

With --exact, instead: the practitioner design's sqrt-rule pilots (B 32, 64, 128) simulated
with the engine's exact per-update clocks (no evaluation grid, no binomial noise), the form
fitted to every run and to each seed's three clocks (one seed a batch), scored against the
practitioner run's held-out answers N256 and N1024: how much of the design's 8x bias is the form
and how much one seed a batch and the evaluation grid.

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


def _clocks(rule: str, batches, lr: float, seeds: int, budget: int, n_ckpt: int) -> np.ndarray:
    """The engine's progress clocks (samples, per update) of `seeds` policy runs at its
    defaults under `rule` through lr at b0 (fixed: lr itself): batch x seed (0: never)."""
    from twoclock import OptimConfig  # noqa: PLC0415 (JAX: only when measuring)
    from twoclock.models import MODELS  # noqa: PLC0415
    from twoclock.studies.planner import logs_check  # noqa: PLC0415
    m = MODELS["policy"]
    res = logs_check.simulate(m, m.config(), OptimConfig(name="adam", lr_rule=rule), batches,
                              lr, seeds, budget, n_ckpt)
    return np.asarray(res.prog_n[:, 0], np.float64)


def clock(batch: int, lr: float, seeds: int) -> float:
    """The median progress clock (samples) of `seeds` policy runs at a fixed lr."""
    n = _clocks("fixed", (batch,), lr, seeds, BUDGET, 16)[0]
    return float(np.median(np.where(n > 0, n, math.inf)))


PILOTS, HELD = (32, 64, 128), (256, 1024)  # the practitioner design's policy batches


def pilot_clocks(seeds: int) -> np.ndarray:
    """The engine's progress clocks (samples, per update, no evaluation grid or binomial noise)
    of the practitioner's policy pilots under the sqrt rule (lr0 1e-4 at b0 8, budget 16384):
    batch x seed (0: never)."""
    return _clocks("sqrt", PILOTS, LR0, seeds, 16384, 2)


def exact_errors(n_BxS: np.ndarray, truth) -> tuple:
    """Adam's form (sqrt rule through lr0 at b0) fitted to exact pilot clocks n_BxS at PILOTS:
    (the relative errors at HELD of the fit to every run, the median signed errors at HELD of
    the fits to each seed's three clocks (one seed a batch), the relative errors of the fit to
    every run with the knee's sharpness held at 1 as one seed a batch leaves it, the sharpness
    the fit to every run finds)."""
    from twoclock.pilot import adam  # noqa: PLC0415
    B, held = np.array(PILOTS, np.float64), np.array(HELD, np.float64)
    lr = LR0 * np.sqrt(B / B0)
    fit = lambda b, n, r, sharp=True: adam.fit_adam(b, n, r, np.ones(b.size), 0.5, LR0, B0,
                                                    sharp=sharp)
    err = lambda f: np.exp(f.log_median(held)) / truth - 1
    ok = n_BxS > 0
    runs = (np.repeat(B, n_BxS.shape[1])[ok.ravel()], n_BxS[ok],
            np.repeat(lr, n_BxS.shape[1])[ok.ravel()])
    every = fit(*runs)
    per = [err(fit(B, n_BxS[:, s], lr)) for s in range(n_BxS.shape[1]) if ok[:, s].all()]
    return err(every), np.median(per, axis=0), err(fit(*runs, sharp=False)), every.m


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=16, help="runs a cell (>= 2)")
    ap.add_argument("--exact", nargs=2, type=float, metavar=("N256", "N1024"),
                    help="instead: the form fitted to the pilots' exact clocks (sqrt rule), "
                    "scored against these held-out answers (the practitioner run's)")
    a = ap.parse_args(argv)
    if a.seeds < 2:
        ap.error(f"--seeds: at least 2, got {a.seeds}")
    if a.exact and not all(math.isfinite(x) and x > 0 for x in a.exact):
        ap.error(f"--exact: two answers > 0 (samples at B 256 and 1024), got {a.exact}")
    t0 = time.perf_counter()
    if a.exact:
        n = pilot_clocks(a.seeds)
        every, per, unsharp, m = exact_errors(n, np.array(a.exact))
        print(f"sqrt rule, exact pilot clocks at B {PILOTS} (medians "
              + ", ".join(f"{np.median(x[x > 0]):.0f}" for x in n) + f" samples): the form "
              f"fitted to all {int((n > 0).sum())} runs errs {every[0]:+.1%} at 2x, "
              f"{every[1]:+.1%} at 8x (knee sharpness {m:.3g}; held at 1, {unsharp[0]:+.1%} "
              f"and {unsharp[1]:+.1%}); to each seed's three clocks, median signed "
              f"{per[0]:+.1%} at 2x, {per[1]:+.1%} at 8x")
        print(f"{time.perf_counter() - t0:.0f} s")
        return
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
