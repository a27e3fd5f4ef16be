"""The gradient noise scale along the progress path at the smallest batch, at each target of
the shapes study: exact for the quadratic (mean-field Adam's second moments of the offsets),
measured at the checkpoints for the GRPO models.

Which noise scale: the quadratic gives both McCandlish's B_simple = tr(Sigma) / E|G|^2 (the
one the theory curves use) and the critical batch of Adam's per-coordinate rate
(`curves.adam_coordinate_critical`): Adam normalises each coordinate by its own noise, so a
coordinate with a small gradient turns sign-like only at its own, larger, B_i. The bandit
records B_simple over its skill directions (tr over the skill block) and the policy along the
held-out accuracy direction (a directional B_simple); neither records a per-coordinate one along
the path, so theirs is the B_simple of that direction, pooled over seeds over the stretch of
checkpoints between the previous target's median clock and this one's.
"""
import numpy as np

from twoclock.models.quadratic.adam_progress import _adam_meanfield
from twoclock.models.quadratic.problem import initial_loss, noise_variances, spectrum
from twoclock.studies.shapes import curves


def pooled_noise_scale(noise, signal) -> float:
    """B_simple = mean(noise) / mean(signal), means first (McCandlish's estimator pooled over
    seeds and checkpoints); inf where the mean signal is not positive (none detected)."""
    n, s = float(np.mean(noise)), float(np.mean(signal))
    return n / s if s > 0 else float("inf")


def quadratic_path(cfg, opt, lr: float, batch: int, n_steps: int, levels) -> list:
    """Per level (of loss / L0): {b_noise (B_simple), b_adam_critical, update} at the first
    update of mean-field Adam at `batch` whose E[L] <= level x L0 (None where not reached);
    and the path in pieces, one per update (`noise_path`)."""
    h, c, L0 = spectrum(cfg), noise_variances(cfg), initial_loss(cfg)
    loss, _, t, (mean, var, _) = _adam_meanfield(cfg, opt, lr, float(batch), n_steps,
                                                 stop_at=min(levels) * L0, record=True)
    ex2_T = var + mean ** 2
    # the path in pieces, one per update: B_simple at the offsets the update starts from
    steps = [curves.simple_noise_scale(h, c, e) for e in ex2_T[:-1]]
    out = []
    for v in levels:
        hit = np.flatnonzero(loss <= v * L0)
        if hit.size == 0:
            out.append({"b_noise": None, "b_adam_critical": None, "update": None, "pieces": 0})
            continue
        k = int(hit[0])
        out.append({"b_noise": curves.simple_noise_scale(h, c, ex2_T[k]),
                    "b_adam_critical": curves.adam_coordinate_critical(h, c, ex2_T[k], batch),
                    "update": k, "pieces": k})
    del t
    return out, {"w": [float(batch)] * len(steps), "b_noise": steps}


def measured_path(ck: dict, direction: str, med_samples) -> list:
    """Per target: the pooled B_simple of `direction` over the checkpoints (one batch's, {name:
    [S, C]}) after the previous target's median clock and up to this one's (fresh measurements
    only, where the model marks them; the nearest fresh one at or before where none falls
    inside), with the stretch's responses; and the path in pieces, one per stretch (a stretch
    with no detectable signal has noise scale inf)."""
    s = np.asarray(ck["samples"])[0]
    fresh = np.asarray(ck["noise_fresh"])[0] > 0 if "noise_fresh" in ck else np.ones_like(s, bool)
    noise, signal = np.asarray(ck[f"noise_{direction}"]), np.asarray(ck[f"signal_{direction}"])
    out, lo, w, bs = [], 0.0, [], []
    for m in med_samples:
        if m is None:
            out.append({"b_noise": None, "from": lo, "to": None, "pieces": len(w)})
            continue
        keep = (s > lo) & (s <= m) & fresh
        if not keep.any():
            before = np.flatnonzero(fresh & (s <= max(m, s[0])))
            keep = np.zeros_like(fresh)
            keep[before[-1] if before.size else int(np.argmax(fresh))] = True
        v = pooled_noise_scale(noise[:, keep], signal[:, keep])
        w.append(float(m) - lo)
        bs.append(v if np.isfinite(v) else float("inf"))
        out.append({"b_noise": v if np.isfinite(v) else None, "from": lo, "to": float(m),
                    "pieces": len(w)})
        lo = float(m)
    return out, {"w": w, "b_noise": bs}


def noise_path(cfg, opt, res, levels, med_samples, directions: tuple) -> list:
    """The noise path of a model's sqrt cell (SweepResult res) at its smallest batch, measured
    along the first of `directions` its checkpoints record, else the quadratic's exact one: (per
    level {b_noise, pieces: how many of the path's pieces lead to it, ...}, the path in pieces
    {w: samples each took at the smallest batch, b_noise: each one's noise scale})."""
    b = int(res.batches[0])
    ck = {k: v[0] for k, v in res.ckpt[0].items()}  # lr0 index 0: [S, C]
    measured = [d for d in directions if f"noise_{d}" in ck]
    if measured:  # the first of directions the model checkpoints
        return measured_path(ck, measured[0], med_samples)
    return quadratic_path(cfg, opt, float(res.lrs_BxL[0, 0]), b, int(res.n_steps_B[0]), levels)


__all__ = ["pooled_noise_scale", "quadratic_path", "measured_path", "noise_path"]
