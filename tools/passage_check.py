"""The first-passage progress clock against a float64 Monte Carlo on drawn configurations.

    python tools/passage_check.py [--optimizer momentum|sgd] [--seed 0] [--n 30]
                                  [--seeds 1024] [--tilt 0.5] [--theory-only]

Draws n configurations deterministically from --seed: dims 4-64, alpha 0.5-1.5, sigma 0.5-3,
B in {1, 2, 4, 8, 32}, lr h_max / (1 - mu) in [1/8, 0.9] (mu in [0.5, 0.95]; 0 for SGD),
target 0.7-1.3 x the stationary floor of E[L] / L0, capped at 0.9. For each it prints the
median first passage of `theory.median_steps` and the median over --seeds runs of the first
update with L_t <= target (the eigenbasis recursion in float64 NumPy, the simulator's update:
x_{t+1} = (1 + mu - lr h) x_t - mu x_{t-1} - lr xi_t, x_{-1} = x_0, xi ~ N(0, c / B)), with
its 95% bootstrap CI (twoclock.analysis.clocks), and counts the rows within 5% or inside the CI.
"""
import argparse

import numpy as np

from twoclock import OptimConfig, QuadraticConfig, theory
from twoclock.analysis import clocks
from twoclock.models.quadratic import first_passage
from twoclock.models.quadratic.problem import initial_loss, noise_variances, spectrum

MAX_STEPS = 20_000
BATCHES = (1, 2, 4, 8, 32)


def draw(rng, optimizer: str) -> dict:
    """One configuration of the domain above (all floats rounded as printed)."""
    mu = round(float(rng.uniform(0.5, 0.95)), 3) if optimizer == "momentum" else 0.0
    return dict(dim=int(rng.integers(4, 65)), alpha=round(float(rng.uniform(0.5, 1.5)), 3),
                sigma=round(float(rng.uniform(0.5, 3.0)), 3), mu=mu,
                batch=int(rng.choice(BATCHES)), lrh=round(float(rng.uniform(0.125, 0.9)), 3),
                near_floor=round(float(rng.uniform(0.7, 1.3)), 3))


def floor(cfg: QuadraticConfig, mu: float, batch: int, lr: float) -> float:
    """Stationary E[L] / L0: per coordinate the AR(2) variance q (1 + mu) / ((1 - mu)
    ((1 + mu)^2 - a^2)), a = 1 + mu - lr h, q = lr^2 c / B (mu = 0: q / (1 - a^2))."""
    h, c = spectrum(cfg), noise_variances(cfg)
    a = 1.0 + mu - lr * h
    var = lr**2 * c / batch * (1.0 + mu) / ((1.0 - mu) * ((1.0 + mu) ** 2 - a * a))
    return float(0.5 * np.sum(h * var) / initial_loss(cfg))


def monte_carlo(cfg: QuadraticConfig, mu: float, batch: int, lr: float, seeds: int,
                seed: int) -> np.ndarray:
    """First update with L_t <= target per run (0 = not within MAX_STEPS), float64."""
    h, c = spectrum(cfg), noise_variances(cfg)
    sd = lr * np.sqrt(c / batch)
    tau = cfg.target * initial_loss(cfg)
    rng = np.random.default_rng(seed)
    x = np.ones((seeds, cfg.dim))
    x_prev = x.copy()
    hit = np.zeros(seeds, np.int64)
    for t in range(1, MAX_STEPS + 1):
        x, x_prev = (1.0 + mu - lr * h) * x - mu * x_prev - sd * rng.standard_normal(x.shape), x
        new = (hit == 0) & (0.5 * (x * x) @ h <= tau)
        hit[new] = t
        if t % 64 == 0 and np.mean(hit > 0) >= 0.75:  # the median and its CI are decided
            break
    return hit


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--optimizer", choices=("momentum", "sgd"), default="momentum")
    p.add_argument("--seed", type=int, default=0, help="seed of the draws (and of the runs)")
    p.add_argument("--n", type=int, default=30, help="configurations drawn")
    p.add_argument("--seeds", type=int, default=1024, help="Monte Carlo runs per configuration")
    p.add_argument("--tilt", type=float, default=first_passage.TILT, help="median_steps' tilt")
    p.add_argument("--theory-only", action="store_true", help="skip the Monte Carlo")
    a = p.parse_args()
    rng = np.random.default_rng(a.seed)
    print("| # | dim | alpha | sigma | mu | B | lr h/(1-mu) | target (floor) / L0 | Monte Carlo "
          "median [95% CI] | first-passage | error |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|")
    ok = 0
    for i in range(a.n):
        d = draw(rng, a.optimizer)
        lr = d["lrh"] * (1.0 - d["mu"])
        cfg0 = QuadraticConfig(dim=d["dim"], alpha=d["alpha"], sigma=d["sigma"], drift_dim=0)
        fl = floor(cfg0, d["mu"], d["batch"], lr)
        cfg = QuadraticConfig(dim=d["dim"], alpha=d["alpha"], sigma=d["sigma"], drift_dim=0,
                              target=min(fl * d["near_floor"], 0.9))
        opt = OptimConfig(name=a.optimizer, momentum=d["mu"], lr_rule="fixed")
        pred = theory.median_steps(cfg, opt, d["batch"], lr, MAX_STEPS, tilt=a.tilt)
        row = (f"| {i} | {d['dim']} | {d['alpha']} | {d['sigma']} | {d['mu']} | {d['batch']} | "
               f"{d['lrh']} | {cfg.target:.4g} ({fl:.4g}) |")
        if a.theory_only:
            print(f"{row} - | {pred} | - |")
            continue
        s = clocks.summarize(monte_carlo(cfg, d["mu"], d["batch"], lr, a.seeds, a.seed + i))
        med, (lo, hi) = s["median"], s["ci"]
        good = med is not None and (abs(pred - med) <= 0.05 * med or lo <= pred <= (hi or 1e99))
        ok += bool(good)
        err = "-" if med is None else f"{100 * (pred - med) / med:+.1f}%"
        print(f"{row} {med} [{lo}, {hi}] | {pred} | {err}{'' if good else ' (out)'} |")
    if not a.theory_only:
        print(f"{ok} of {a.n} within 5% of the Monte Carlo median or inside its 95% CI")


if __name__ == "__main__":
    main()
