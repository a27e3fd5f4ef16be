"""The theory's bound on how fast a progress clock can grow with the batch, as an envelope on
every predicted progress band past the largest pilot (issue 50 item 5; docs/plan.md, "The
exponent envelope"). Standard library only (no NumPy needed, no JAX).

Both progress forms bound the local exponent e(B) = d log N / d log B whatever the knee is:
  adam (pilot/adam.py): N = A sqrt(m (m + B_n)) / lr, m = B / K, lr ~ B^p:
      e = 1/2 - p + (1/2) m / (m + B_n), in [1/2 - p, 1 - p] for every B_n >= 0 and K (a fixed
      K_pred scales m, not its logarithm's slope); a fixed lr [1/2, 1], the sqrt rule [0, 1/2];
  default (pilot/fit.py): N = N_min (1 + c (B / B_crit)^s)^(a / s):
      e = a c x^s / (1 + c x^s), x = B / B_crit, in [0, a) for every B_crit and sharpness s;
      a = 1 - p (saturation) or 1 (curvature): over the plausible forms [0, max a].
So from the largest pilot batch B_top, whose clock lies in [L, H],

    N(B) in [L (B / B_top)^lo, H (B / B_top)^hi]   for B > B_top,

whatever the pilots say of the critical batch. [L, H] is the largest pilot's clock interval
(`anchor`): the hull of the fitted median at B_top times exp(-+ z s), s the pilots' scatter
about the fit (or an evaluation's crossing noise where larger, pilot/evalnoise.py), and the
logged samples either side of the top pilot's crossing (where it was read from a log). The
plan's own profile band at B_top was tried first: with three one-seed pilots (one residual
degree of freedom, t = 12.7) it is a median x1.96 (default form) | x1.90 (adam) either side
at the pilot itself, and the envelope then took the median width only from x3.03 to x3.03 and
from x2.80 to x2.57. The envelope is anchored on [L, H], not on a slope fitted to the pilots: pilots whose own
exponents fall outside [lo, hi] (one noisy crossing each) widen [L, H] through the residuals,
and do not move the bound's exponents.

The envelope is intersected with the plan's band: an end the band leaves open, or puts beyond
the envelope, becomes the envelope's end, and the prediction says which (`info`). SLACK widens
[lo, hi] by a measured amount (docs/plan.md gives what it costs)."""
import math
from statistics import NormalDist

ON = True  # False: no envelope (the ablation in docs/plan.md, tools/envelope_table.py)
# (low, high): the exponent range widened by these on each side. 0: the theory's range itself;
# on the practitioner design no cell's coverage fell below 90% with it (docs/plan.md). The
# bandit is known to run past the high end (1.13 [0.997, 1.19] at 512 -> 1024 under a fixed
# lr, docs/shapes.md), which this does not widen for: measured, not assumed
SLACK = (0.0, 0.0)


def anchor(progress, b_top: float, level: float, brackets=None) -> list:
    """[L, H]: the largest pilot's clock at b_top, the hull of (a) the fitted median there
    times exp(-+ z s), s the per-run scatter in log N about the fit (sqrt(SSE / dof), or the
    evaluation's crossing noise where larger: fit.ProgressFit.floor), z the normal quantile of
    the level, and (b) the logged samples either side of each top pilot's crossing (brackets,
    [n, 2], brought to the prediction's lr and K; None: not known, a CSV of clocks). Where the
    fit has no residual degree of freedom, the plan's band at b_top."""
    fit = progress.fit
    base = getattr(fit, "base", fit)  # adam.AdamFit: its sqrt-rule fit's residuals
    if base.dof < 1:
        return progress.band([b_top], level)[0]["ci"]
    h = NormalDist().inv_cdf((1 + level) / 2) * math.sqrt(max(base.sse / base.dof, base.floor))
    m = float(fit.log_median([b_top])[0])
    lo, hi = math.exp(m - h), math.exp(m + h)
    if brackets is not None and len(brackets):
        lo, hi = min(lo, float(min(b[0] for b in brackets))), max(hi, float(max(b[1] for b in brackets)))
    return [lo, hi]


def exponents(form: str, p: float, plausible_a=()) -> tuple:
    """(lo, hi): the range of d log N / d log B a progress form allows under lr ~ B^p, SLACK
    included. form "adam": [1/2 - p, 1 - p]; otherwise the default forms', [0, max a] over
    the plausible forms' asymptotic exponents a (fit.form_exponent)."""
    lo, hi = (0.5 - p, 1.0 - p) if form == "adam" else (0.0, max(plausible_a))
    return lo - SLACK[0], hi + SLACK[1]


def ends(b: float, b_top: float, anchor, lo: float, hi: float) -> list:
    """[low, high] of N(b) for b > b_top from the clock's interval anchor = [L, H] at b_top:
    [L r^lo, H r^hi], r = b / b_top (for r < 1 the exponents swap ends); an end of the anchor
    that is None (open) leaves that end None."""
    r = b / b_top
    e_low, e_high = (lo, hi) if r >= 1 else (hi, lo)
    L, H = anchor
    return [None if L is None else L * r ** e_low, None if H is None else H * r ** e_high]


def clip(band: dict, env: list) -> tuple:
    """(the band intersected with env, which ends env set: 'low', 'high'). An open end
    (None) takes the envelope's; where the two do not meet (the band wholly outside, which a
    fit's own median cannot be) the envelope is the band. The median is kept, moved inside
    the new ends only where it lay outside."""
    (lo, hi), (el, eh) = band["ci"], env
    new_lo = el if lo is None else lo if el is None else max(lo, el)
    new_hi = eh if hi is None else hi if eh is None else min(hi, eh)
    if new_lo is not None and new_hi is not None and new_lo > new_hi:
        new_lo, new_hi = el, eh
    set_ = [name for name, old, new in (("low", lo, new_lo), ("high", hi, new_hi))
            if new is not None and new != old]
    m = band["median"]
    if m is not None:
        m = max(m, new_lo) if new_lo is not None else m
        m = min(m, new_hi) if new_hi is not None else m
    return {**band, "median": m, "ci": [new_lo, new_hi]}, set_


def apply(bands: list, B, b_top: float, anchor, lo: float, hi: float) -> tuple:
    """(bands, infos): each band at B beyond b_top clipped to the envelope; infos per batch:
    None at or below b_top, else {batch_top, anchor, exponents, ci (the envelope), set}."""
    out, infos = [], []
    for band, b in zip(bands, B):
        b = float(b)
        if not b > b_top or band["median"] is None:
            out.append(band)
            infos.append(None)
            continue
        env = ends(b, b_top, anchor, lo, hi)
        new, set_ = clip(band, env)
        out.append(new)
        infos.append({"batch_top": b_top, "anchor": list(anchor), "exponents": [lo, hi],
                      "ci": env, "set": set_})
    return out, infos


def describe(info: dict) -> str | None:
    """A band_why clause where the envelope set an end; None where it set none."""
    if not info or not info["set"]:
        return None
    lo, hi = info["exponents"]
    which = " and ".join(info["set"])
    L, H = info["anchor"]
    f = lambda v: "-" if v is None else f"{v:.4g}"
    return (f"its {which} end{'s' if len(info['set']) > 1 else ''} set by the theory's bound "
            f"N ~ B^[{lo:.3g}, {hi:.3g}] from the largest pilot (B {info['batch_top']:g}, "
            f"band [{f(L)}, {f(H)}])")


def factor(info: dict) -> float | None:
    """The envelope's own width factor sqrt(high / low) either side of its geometric middle
    (None where an end is open)."""
    el, eh = info["ci"]
    return None if el is None or eh is None or not el > 0 else math.sqrt(eh / el)


__all__ = ["ON", "SLACK", "exponents", "ends", "clip", "apply", "describe", "factor"]
