"""Why a predicted band is wide (issue 50 item 5; docs/plan.md, "Bands that say why"): its width
factor, max(median / low, high / median) (infinite where an end is open), and, where that is
above WIDE (x2 either side), one line naming the pilot and the target behind it. The band itself
is the plan's (pilot.plan); this only reads it. Where the theory's exponent bound set an end
(pilot/envelope.py), the line says so first. A band scored against the truth (its error,
coverage and width, as the planner's calibration studies score it): score."""
import math

from twoclock.pilot import envelope

WIDE = 2.0  # a band wider than x2 either side of its median says why
EXTRAPOLATION = 4.0  # a predicted batch this many times the largest pilot's is named


def width(band: dict) -> float | None:
    """max(median / low, high / median) of a {median, ci} band; inf where an end is open or
    low is 0; None where there is no median."""
    m, (lo, hi) = band["median"], band["ci"]
    if m is None:
        return None
    if lo is None or hi is None or not lo > 0:
        return math.inf
    return max(m / lo, hi / m)


def width_json(band: dict) -> float | None:
    """`width` as plan.json holds it (strict JSON): null where it is inf or None."""
    w = width(band)
    return None if w is None or math.isinf(w) else w


def half_share(band: dict) -> float | None:
    """(high - low) / 2 / median of a {median, ci} band: its half-width as a share of the
    median; None where an end is open or there is no median."""
    m, (lo, hi) = band["median"], band["ci"]
    return None if m is None or lo is None or hi is None else (hi - lo) / 2 / m


def score(band: dict, true, key: str = "width", measure=width) -> dict:
    """A {median, ci} band against the truth: {predicted: the median, ci, rel_error: median /
    true - 1, covered: low <= true <= high (an open low end 0, an open high end unbounded),
    key: measure(band)}; those last three None where the truth or the median is None."""
    m, (lo, hi) = band["median"], band["ci"]
    if true is None or m is None:
        return {"predicted": m, "ci": band["ci"], "rel_error": None, "covered": None, key: None}
    return {"predicted": m, "ci": band["ci"], "rel_error": m / true - 1,
            "covered": bool((lo or 0) <= true <= (math.inf if hi is None else hi)),
            key: measure(band)}


def _pilots(estimates, pilot_batches) -> list:
    """[(batch, measured median clock, fitted clock)] at the pilot batches, by batch."""
    return sorted((e["batch"], e["progress"], e["progress_fit"]) for e in estimates
                  if e["batch"] in pilot_batches and e["progress"] is not None
                  and e["progress_fit"] is not None)


def _off_theory(ps, top: float | None) -> list:
    """Clauses for the first neighbouring pilots whose clock falls with the batch, and the
    first whose clock grows faster than B^top (the theory's largest exponent under the rule,
    where known): one seed a batch cannot say which of the two lies off the curve."""
    fell = fast = None
    for (b1, p1, _), (b2, p2, _) in zip(ps, ps[1:]):
        if fell is None and p2 < p1:
            fell = (f"pilot B {b2:g} reached it in fewer samples ({p2:.4g}) than pilot B "
                    f"{b1:g} ({p1:.4g}), so the pilots do not say how the clock grows with "
                    "the batch")
        e = math.log(p2 / p1) / math.log(b2 / b1)
        if fast is None and top is not None and e > top:
            fast = (f"pilot B {b2:g} took {p2 / p1:.3g}x the samples of pilot B {b1:g} "
                    f"({p2:.4g} against {p1:.4g}), as B^{e:.3g} where the theory allows at "
                    f"most B^{top:.3g}, so one of the two lies off the curve")
    return [c for c in (fell, fast) if c is not None]


def reasons(b: float, critical: dict, estimates, pilot_batches,
            top: float | None = None) -> list:
    """Why the pilots leave the clock at batch b open, most telling first: pilots whose clocks
    fall with the batch or grow faster than B^top (one reason); a critical batch whose band
    spans b (or is open); b far beyond the largest pilot; the pilot farthest from the fitted
    curve."""
    ps = _pilots(estimates, pilot_batches)
    off = _off_theory(ps, top)
    out = [", and ".join(off)] if off else []
    lo, hi = critical["ci"]
    band = f"[{'-' if lo is None else f'{lo:.4g}'}, {'-' if hi is None else f'{hi:.4g}'}]"
    if lo is None or hi is None:
        out.append(f"the pilots' critical batch is not pinned: B_crit band {band} is open")
    elif lo <= b <= hi:
        out.append(f"the pilots' critical batch is not pinned: B_crit band {band} spans the "
                   "predicted batch")
    top = max(pilot_batches) if pilot_batches else None
    if top and b / top >= EXTRAPOLATION:
        out.append(f"B {b:g} is {b / top:.3g}x the largest pilot (B {top:g})")
    if ps:
        bw, pw, fw = max(ps, key=lambda x: abs(math.log(x[1] / x[2])))
        out.append(f"pilot B {bw:g}'s clock ({pw:.4g} samples) lies {100 * (pw / fw - 1):+.0f}% "
                   "off the fitted curve")
    return out


def why(band: dict, b: float, condition: str, critical: dict, estimates,
        pilot_batches, at: str | None = None) -> str | None:
    """One line where the band at b is wider than WIDE either side (the first two reasons, the
    envelope's clause first where it set an end; pilots off the theory's exponents where the
    envelope gives them); None otherwise. at: the batch as the table prints it (B:K)."""
    w = width(band)
    if w is None or w <= WIDE:
        return None
    info = band.get("envelope")
    rs = reasons(b, critical, estimates, set(pilot_batches),
                 info["exponents"][1] if info else None)
    env = envelope.describe(info)
    rs = rs if env is None else [env] + rs
    head = "open-ended" if math.isinf(w) else f"x{w:.3g} either side"
    return f"band at B {at or format(b, 'g')} for {condition} is {head}: " + "; ".join(rs[:2])


__all__ = ["WIDE", "width", "width_json", "half_share", "score", "reasons", "why"]
