"""Plain-text tables of result dicts for the terminal."""
from twoclock.config import DELTA


def fmt_samples(s: dict, budget=None, spec: str = ".0f", counts: bool = False) -> str:
    """'median [lo, hi]' of a clocks.summarize dict; a censored value prints as '>budget'
    (with the number when given), a censored median also as '(reached/seeds)' if counts."""
    def one(v):
        if v is None:
            return f">{budget}" if budget is not None else ">budget"
        return format(v, spec)
    if s["median"] is None and counts:
        return f"{one(None)} ({s['reached']}/{s['seeds']})"
    return f"{one(s['median'])} [{one(s['ci'][0])}, {one(s['ci'][1])}]"


def fmt_ratio(a, b) -> str:
    if a is None or b is None:
        return "-"
    return f"x{a / b:.2f}"


def fmt_num(v, spec=".0f") -> str:
    return "-" if v is None else format(v, spec)


MAIN_CLOCKS = ("progress_samples", "failure_samples")


def clock_table(result: dict) -> str:
    """The headline table: one row per (lr0, batch), clocks relative to the smallest batch."""
    runs = result["runs"]
    budget = result["config"]["sweep"]["budget"]
    unit = result.get("unit", "samples")
    head = (f"{'batch':>6} {'lr':>9} | {'N_prog median [95% CI]':>26} {'rel':>6} | "
            f"{'N_fail median [95% CI]':>26} {'rel':>6} | {'updates':>8} {'rel':>6} | "
            f"{'theory N_prog':>13} {'theory N_fail':>13}")
    lines = [f"clocks in {unit}; rel = relative to the smallest batch at the same lr0", head,
             "-" * len(head)]
    lr0s = sorted({r["lr0"] for r in runs})
    for lr0 in lr0s:
        rows = sorted((r for r in runs if r["lr0"] == lr0), key=lambda r: r["batch"])
        base = rows[0]
        if len(lr0s) > 1:  # one block per lr0, each labelled (the lr column is lr(B))
            lines.append(f"lr0 = {lr0:g}:")
        for r in rows:
            th = r.get("theory", {})
            p, f, u = r["progress_samples"], r["failure_samples"], r["progress_updates"]
            d = r.get("diverged", {})
            prog = fmt_samples(p, budget)
            if p["median"] is None and 2 * d.get("runs", 0) >= p["seeds"]:
                prog = f"diverged at {fmt_num(d['median_samples'])}"
            line = (f"{r['batch']:>6} {r['lr']:>9.3g} | {prog:>26} "
                    f"{fmt_ratio(p['median'], base['progress_samples']['median']):>6} | "
                    f"{fmt_samples(f, budget):>26} "
                    f"{fmt_ratio(f['median'], base['failure_samples']['median']):>6} | "
                    f"{fmt_num(u['median']):>8} "
                    f"{fmt_ratio(u['median'], base['progress_updates']['median']):>6} | "
                    f"{fmt_num(th.get('progress_samples')):>13} "
                    f"{fmt_num(th.get('failure_samples')):>13}")
            for key, v in r.items():  # the model's extra clocks (the bandit's collapse, ...)
                if key.endswith("_samples") and key not in MAIN_CLOCKS and isinstance(v, dict) \
                        and "median" in v:
                    line += f"  {key[:-len('_samples')]} {fmt_samples(v, budget)}"
            if "noise_scale" in r:
                line += "  B_simple " + ", ".join(
                    f"{k} {fmt_num(v, '.3g')} ({r['regime'][k]})"
                    for k, v in r["noise_scale"].items())
            if d.get("runs"):
                line += (f"  diverged {d['runs']}/{p['seeds']} seeds "
                         f"(median at {fmt_num(d['median_samples'])} {unit})")
            lines.append(line)
        lines.append("")
    return "\n".join(lines)


def critical_table(result: dict) -> str:
    lines = ["critical batch (smallest B with N_prog(B)/N_prog(B_min) >= "
             f"{1 + result['config'].get('delta', DELTA):g}, interpolated on log B):"]
    for cb in result["critical_batch"]:
        unreached = _unreached(result, cb["lr0"]) if cb["batch"] is None else None
        if unreached:
            line = f"  lr0={cb['lr0']:g}: {unreached}, so no critical batch was measured"
        else:
            meas = ("none in range" if cb["batch"] is None else
                    f"{cb['batch']:.1f} [{fmt_num(cb['ci'][0], '.1f')}, "
                    f"{fmt_num(cb['ci'][1], '.1f')}] (found in {cb['found']:.0%} of bootstrap "
                    "resamples)")
            line = f"  lr0={cb['lr0']:g}: measured {meas}"
        th = cb.get("theory")
        if th and th.get("skipped"):
            line += f"; theory skipped: {th['skipped']}"
        elif th:
            said = ("none predicted" if th["batch"] is None else
                    f"{th['mechanism']} mechanism, B ~ {th['batch']:.1f}")
            line += (f"; theory: {said} (curvature {fmt_num(th.get('curvature'), '.1f')}, "
                     f"saturation {fmt_num(th.get('saturation'), '.1f')})")
        lines.append(line)
    return "\n".join(lines)


def _unreached(result: dict, lr0) -> str | None:
    """Why no critical batch was measured at lr0 where its smallest batch's progress median
    is censored (none to slow down from): no run reached the target, or the smallest batch
    not in most seeds, within the budget; None where it has a median (none in range)."""
    rows = sorted((r for r in result.get("runs", ()) if r["lr0"] == lr0),
                  key=lambda r: r["batch"])
    if not rows or rows[0]["progress_samples"]["median"] is not None:
        return None
    budget = (f"within the budget ({result['config']['sweep']['budget']} "
              f"{result.get('unit', 'samples')})")
    if all(not r["progress_samples"].get("reached") for r in rows):
        return f"no run reached the target {budget}"
    return (f"the smallest batch (B {rows[0]['batch']}) did not reach the target in most seeds "
            f"{budget}")
