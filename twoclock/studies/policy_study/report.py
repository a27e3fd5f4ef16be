"""The policy study's answers as text tables."""
import numpy as np

from twoclock.analysis.clocks import censored
from twoclock.analysis.paired import finite_or_none
from twoclock.studies.policy_study.cells import CLIPS, DRIFT


def report(out: dict) -> str:
    """The answers as text tables (the pre-registered test's: `prereg.report`)."""
    if "answers" not in out:
        from twoclock.studies.policy_study.prereg import report as prereg_report
        return prereg_report(out)
    a, st = out["answers"], out["study"]
    fmt = lambda v, f=".3g": "-" if v is None else format(v, f)
    ci = lambda d: f"{fmt(d['median'])} [{fmt(d['ci'][0])}, {fmt(d['ci'][1])}]"
    b0, b1 = str(min(st["batches"])), str(max(st["batches"]))
    lines = [f"policy study: batches {tuple(st['batches'])}, {st['seeds']} seeds, budget "
             f"{st['budget']} responses, {out['seconds']:.0f} s",
             "every [a, b] is a paired bootstrap 95% CI over seeds; '-' = not reached in the "
             "budget", "",
             f"1. progress gap N_prog(B) / N_prog({b0}) and critical batch:"]
    for rule, v in a["1_progress_gap"].items():
        cb = v["critical_batch"]
        gaps = "; ".join(f"{b}: {ci(g)}" for b, g in v["gap_by_batch"].items())
        lines.append(f"   {rule:>5}: {gaps}; critical batch {fmt(cb['batch'])} "
                     f"[{fmt(cb['ci'][0])}, {fmt(cb['ci'][1])}]")
    lines += ["", "2. batch exponent d log N / d log B: measured [CI] (over B) | predicted "
              "per batch (regime) | B_simple per batch (responses)"]
    for rule, clocks in a["2_exponents"].items():
        for clock, v in clocks.items():
            m = v["measured"]
            pred = ", ".join(f"{b}:{fmt(p, '.2g')}" for b, p in v["predicted_by_batch"].items())
            ns = ", ".join(f"{b}:{fmt(p)}" for b, p in v["noise_scale_by_batch"].items())
            over = f"{m['batches'][0]}-{m['batches'][-1]}" if m["batches"] else "-"
            lines.append(f"   {rule:>5} {clock:>8}: {ci(m):>24} ({over}) | {pred} | {ns}")
    if any("adam_predicted" in v for clocks in a["2_exponents"].values() for v in clocks.values()):
        lines += ["", "2b. Adam's per-coordinate noise at the reference policy: predicted exponent "
                  "(over the measured slope's batches) | predicted N per batch | measured median "
                  "N per batch"]
        for rule, clocks in a["2_exponents"].items():
            per = out["cells"][rule]["per_seed"]
            for clock, v in clocks.items():
                if "adam_predicted" not in v:
                    continue
                pn = ", ".join(f"{b}:{fmt(p)}" for b, p in v["adam_predicted_by_batch"].items())
                mn = ", ".join(f"{b}:{fmt(finite_or_none(np.median(censored(per[b][clock]))))}"
                               for b in sorted(per, key=int))
                same = fmt(v.get("adam_predicted_same_batches"))
                lines.append(f"   {rule:>5} {clock:>8}: {fmt(v['adam_predicted']):>6} ({same}) | "
                             f"{pn} | {mn}")
        share = out["adam_noise"]["signal_share"]
        lines.append("   share of each direction on signal-dominated coordinates (B_i < B): " +
                     "; ".join(f"{b}: " + " ".join(f"{k} {x:.2f}" for k, x in v.items())
                               for b, v in share.items()))
    lines += ["", "3. clipping (N_clip / N_none: > 1 is a delay)"]
    clip = a["3_clipping"]
    if "M1xE1" in clip:
        d = clip["M1xE1"]
        lines.append(f"   M 1 x E 1 ({d.get('seeds', st['seeds'])} seeds): clocks identical "
                     f"with and without clipping: "
                     f"{d['identical_clocks']}; delay at {b1}: " + ", ".join(
                         f"{k} {ci(v)}" for k, v in d["delay"][b1].items()))
    for conv, row in ((k, v) for k, v in clip.items() if k != "M1xE1"):
        lr = ("sqrt rule" if conv == "fixed_m" else
              f"the lr of B {b0} at every batch (the minibatch's size is fixed)")
        lines.append(f"   M 4 x E 2, {conv}, lr0 x {st.get('clip_lr_factor', 1.0):g}, {lr}:")
        for name in CLIPS:
            per = "; ".join(f"B {b}: " + " ".join(f"{k} {fmt(row['median'][name][b][k])}"
                                                  for k in ("progress",) + DRIFT)
                            + f" clip {row['clip_frac'][name][b]:.2%}" for b in (b0, b1))
            lines.append(f"      {name:>7}: {per}")
        for b in (b0, b1):
            lines.append(f"      (a) delay at {b:>4}: " + ", ".join(
                f"{k} {ci(v)}" for k, v in row["a_delay"][b].items()))
        lines.append(f"      (a) delay at {b1} / delay at {b0}: " + ", ".join(
            f"{k} {ci(v)}" for k, v in row["a_more_at_larger_batch"].items()))
        for b in (b0, b1):
            lines.append(f"      margin N_fail / N_prog at {b:>4}: eps0.2 over none " + ", ".join(
                f"{k} {ci(v)}" for k, v in row["a_margin_eps_over_none"][b].items()))
        lines.append(f"      (b) progress gap {b1}/{b0}: " + ", ".join(
            f"{k} {ci(v)}" for k, v in row["b_progress_gap"].items())
            + f"; eps0.2's gap / none's {ci(row['b_gap_eps_over_none'])}")
        for b in (b0, b1):
            lines.append(f"      (c) at {b:>4}: early acc higher - eps0.2 "
                         f"{ci(row['c_early_acc_higher_minus_eps'][b])}; N_higher / N_eps0.2 "
                         + ", ".join(f"{k} {ci(v)}"
                                     for k, v in row["c_fail_higher_over_eps"][b].items()))
    lines += ["", f"4. collapse at {st['unstable_factor']}x lr0, M 4 x E 2:"]
    coll = a["4_collapse"]
    for name in ("eps0.2", "none"):
        for b, v in coll.get(name, {}).items():
            lines.append(f"   {name:>7} B {b:>4}: collapsed {v['collapsed_seeds']}/{st['seeds']},"
                         f" stayed down {v['stayed_down_seeds']}, at {ci(v['collapse_samples'])}"
                         f" responses, final acc {ci(v['final_acc'])} (peak "
                         f"{ci(v['peak_acc'])}), clip {v['clip_frac_median']:.2%}")
    for b, v in coll.get("clip_effect", {}).items():
        lines.append(f"   clipping at {b:>4}: collapse delay {ci(v['collapse_delay'])}, final acc "
                     f"eps0.2 - none {ci(v['final_acc_clip_minus_none'])}")
    if "clip_effect_larger_over_smaller" in coll:
        lines.append(f"   collapse delay at {b1} / at {b0}: "
                     f"{ci(coll['clip_effect_larger_over_smaller'])}")
    for v, row in a.get("5_variants", {}).items():
        if v == list(a["5_variants"])[0]:
            lines += ["", "5. the fixed_size clipping comparison again (eps0.2 / none):"]
        for b in (b0, b1):
            lines.append(f"   {v:>12} delay at {b:>4} (clip {row['clip_frac'][b]:.2%}): " + ", ".join(
                f"{k} {ci(x)}" for k, x in row["delay"][b].items()))
        lines.append(f"   {'':>12} delay at {b1} / at {b0}: " + ", ".join(
            f"{k} {ci(x)}" for k, x in row["more_at_larger_batch"].items()))
        lines.append(f"   {'':>12} margin N_fail / N_prog at {b1}, eps0.2 over none: " + ", ".join(
            f"{k} {ci(x)}" for k, x in row["margin_eps_over_none"][b1].items()))
    if "6_cliptime" in a:
        from twoclock.studies.policy_study.cliptime import report_lines
        lines += report_lines(a["6_cliptime"], st)
    return "\n".join(lines)
