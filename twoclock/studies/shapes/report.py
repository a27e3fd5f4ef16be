"""The shapes study's text: per model, the critical batch at each target beside the noise-scale
theory, and the fixed rule's local exponents beside theirs; the real sweep's shape last."""


def _f(v, spec=".3g") -> str:
    return "-" if v is None else format(v, spec)


def _ci(ci) -> str:
    return f"[{_f(ci[0])}, {_f(ci[1])}]"


def critical_table(p: dict) -> list:
    """One line per target of a panel's critical-batch curve."""
    acc = p["start_accuracy"] is not None
    head = f"{'accuracy' if acc else 'loss/L0':>9} {'N at B_min':>11} {'B_crit [95% CI]':>24} " \
           f"{'found':>6} {'B_noise':>9} {'point':>8} {'path':>8}"
    lines = [head + (f" {'Adam per-coord':>14}" if not acc else "")]
    for r in p["critical"]:
        b = r["critical_batch"]
        if b is not None:
            cell = f"{b:.1f} {_ci(r['critical_ci'])}"
        elif r["samples_at_b_min"] is not None:  # no slowdown up to the largest batch
            cell = f"> {p['batches'][-1]}"
        else:  # no median at B_min to slow down from: no critical batch, not a large one
            cell = "no batch reached" if not r.get("reached_batches", [None]) else \
                "B_min not reached"
        line = (f"{_f(r['accuracy'] if acc else r['progress_frac'], '.3f'):>9} "
                f"{_f(r['samples_at_b_min'], '.0f'):>11} {cell:>24} {r['critical_found']:>6.2f} "
                f"{_f(r['noise']['b_noise'], '.4g'):>9} {_f(r['theory_batch'], '.4g'):>8} "
                f"{_f(r['theory_path_batch'], '.4g'):>8}")
        if not acc:
            line += f" {_f(r['noise'].get('b_adam_critical'), '.4g'):>14}"
        lines.append(line)
    rise = p["critical_rise_per_unit"]
    lines.append(f"d ln B_crit / d(target): {_f(rise)} per unit of "
                 f"{'accuracy' if acc else '(1 - loss/L0)'}")
    return lines


def exponent_table(p: dict) -> list:
    """One line per adjacent batch pair of a panel's fixed-lr exponents."""
    fx = p["fixed"]
    lines = [f"fixed lr {fx['lr']:.4g}; B_noise at the target {_f(fx['b_noise_at_target'], '.4g')}",
             f"{'B1->B2':>11} {'d log N / d log B [95% CI]':>30} {'theory (path)':>13} "
             f"{'theory (target)':>15}"]
    for e in fx["exponents"]:
        lines.append(f"{e['batches'][0]:>5}->{e['batches'][1]:<5} "
                     f"{_f(e['median']) + ' ' + _ci(e['ci']):>30} "
                     f"{_f(e['theory_path']):>13} {_f(e['theory_at_target']):>15}")
    return lines


def report(out: dict) -> str:
    """Every panel's two tables, then the real sweep's numbers they are compared with."""
    lines = []
    for p in out["panels"]:
        lines += [f"== {p['model']} (batches in {p['unit']}; {p['seconds']:.0f} s) ==",
                  "critical batch against the target (sqrt rule):", *critical_table(p),
                  "local exponent against batch (fixed lr):", *exponent_table(p), ""]
    real = out["real"]
    lines.append("real sweep (OLMo-2 1B, GRPO on math): critical batch " + ", ".join(
        f"{float(k):.0%}: {v}" for k, v in real["critical_batch"].items())
        + f"; fixed-lr exponent {real['fixed_exponent']['exponent'][0]}-"
          f"{real['fixed_exponent']['exponent'][1]} over {real['fixed_exponent']['range'][0]}-"
          f"{real['fixed_exponent']['range'][1]} rollouts")
    return "\n".join(lines)


__all__ = ["report", "critical_table", "exponent_table"]
