"""Bias of the clock read from logged curves (twoclock.pilot.logs) against the logging interval
and the smoothing, on synthetic curves whose crossing is known: `python tools/log_crossing_bias.py`.

Curves (s in samples, crossing s* = 10 000 in every case):
- progress, concave: acc(s) = 0.9 - 0.5 exp(-s / tau), threshold 0.7 (the chord between two
  logged points lies below the curve, so interpolation crosses late);
- drift, convex: drift(s) = 2 (s / s*)^2, threshold 2 (the chord lies above: early);
- loss ratio, convex decreasing: loss(s) = exp(-3 s / s*), threshold exp(-3) (a loss that
  falls by e^3 = 20x to its target, like the quadratic model's 0.05: the chord lies above, late).
Logged at the start and every d samples from a uniformly drawn phase (2000 phases). Reported:
the mean and the worst relative error of the clock, linearly interpolated and, for comparison,
read at the first logged point past the crossing. With noise: Gaussian of sd sigma on each
logged value (1000 draws), the mean relative error of the first logged crossing, raw and
smoothed.
"""
import math

import numpy as np

from twoclock.pilot.logs import crossing, parse_condition, smooth

S_STAR = 10_000.0
TAU = S_STAR / math.log(0.5 / 0.2)  # 0.9 - 0.5 exp(-s*/tau) = 0.7
CURVES = {
    "progress (concave)": (lambda s: 0.9 - 0.5 * np.exp(-s / TAU),
                           parse_condition("acc>=0.7", "-")),
    "drift (convex)": (lambda s: 2.0 * (s / S_STAR) ** 2, parse_condition("drift>=2", "-")),
    "loss (convex, down)": (lambda s: np.exp(-3.0 * s / S_STAR),
                            parse_condition(f"loss<={math.exp(-3.0):.17g}", "-")),
}


def grid(d, phase, end=4 * S_STAR):
    """Logged at s = 0 (the start) and then every d from phase in (0, d]."""
    return np.concatenate([[0.0], np.arange(phase, end, d)])


def interval_bias(f, cond, d, n=2000, rng=None):
    rng = rng or np.random.default_rng(0)
    lin, nxt = [], []
    for ph in rng.uniform(0, d, n):
        s = grid(d, d - ph)
        at, i = crossing(s, f(s), cond)
        lin.append(at / S_STAR - 1)
        nxt.append(s[i] / S_STAR - 1)
    lin, nxt = np.array(lin), np.array(nxt)
    return lin.mean(), np.abs(lin).max(), nxt.mean()


def noisy_bias(f, cond, d, sigma, how=None, n=2000, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        s = grid(d, d - rng.uniform(0, d))
        v = f(s) + sigma * rng.standard_normal(s.size)
        at, i = crossing(s, smooth(s, v, how), cond)
        out.append(at / S_STAR - 1 if i not in (None, 0) else math.nan)
    return float(np.nanmean(out)), float(np.nanstd(out))


def main():
    print("noise-free: relative error of the clock against the logging interval d")
    print(f"{'curve':<20} {'d / s*':>7} {'interp mean':>12} {'interp worst':>13} "
          f"{'next point mean':>16}")
    for name, (f, cond) in CURVES.items():
        for frac in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0):
            m, w, nx = interval_bias(f, cond, frac * S_STAR)
            print(f"{name:<20} {frac:>7.2f} {100 * m:>+11.3f}% {100 * w:>12.3f}% "
                  f"{100 * nx:>+15.2f}%")
    print("\nsmoothing, noise-free (logged every 0.01 s*): relative error of the clock")
    for name, (f, cond) in CURVES.items():
        for how in (("ema", 0.05 * S_STAR), ("ema", 0.1 * S_STAR), ("window", 0.1 * S_STAR),
                    ("window", 0.2 * S_STAR)):
            m, _ = noisy_bias(f, cond, 0.01 * S_STAR, 0.0, how, n=200)
            print(f"{name:<20} {how[0]}:{how[1] / S_STAR:.2f} s*  {100 * m:>+7.2f}%")
    print("\nnoise sd sigma on each logged value: mean (sd) relative error of the first crossing")
    f, cond = CURVES["progress (concave)"]
    slope = 0.5 / TAU * math.exp(-S_STAR / TAU)  # d acc / ds at s*
    for sigma in (0.005, 0.01, 0.02):
        print(f"sigma {sigma:g} (= {sigma / slope / S_STAR:.3f} s* of the curve's rise)")
        for frac in (0.01, 0.05, 0.1):
            for how in (None, ("ema", 0.05 * S_STAR), ("window", 0.1 * S_STAR)):
                m, sd = noisy_bias(f, cond, frac * S_STAR, sigma, how, n=1000)
                tag = "raw" if how is None else f"{how[0]}:{how[1] / S_STAR:.2f} s*"
                print(f"  d {frac:.2f} s*  {tag:<16} {100 * m:>+7.2f}% ({100 * sd:.2f}%)")


if __name__ == "__main__":
    main()
