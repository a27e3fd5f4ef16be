"""One call from a CSV path (or the published GRPO table) to the plan, and its text table
(from the plan's JSON, `Plan.to_json()`, as the file holds it)."""
from dataclasses import replace

from twoclock.pilot import article as pilot_article, forms, plan as pilot, predict as pp
from twoclock.pilot.result import Plan
from twoclock.pilot.rule import anchored


# the planner's accuracy goal: a prediction within this share of the answer
GOAL = 0.15
# plausible failure forms whose medians differ by more than this, where only their left-out
# errors chose, are reported: the choice then moves the plan more than its accuracy goal
FORMS_DISAGREE = GOAL


def disagreement_lines(form: dict, predictions, indent: str = "    ") -> list:
    """A line where the plausible forms' medians at the largest predicted batch differ by more
    than FORMS_DISAGREE and the tests did not choose the form: the chosen form's median is
    then one reading of several."""
    if not predictions or form["chosen_by"] == "tests":
        return []
    p = max(predictions, key=lambda x: x["batch"])
    d = forms.disagreement(p["failure_samples"])
    if d is None or d <= FORMS_DISAGREE:
        return []
    by = ", ".join(f"{k} {v:.0f}" for k, v in p["failure_samples"]["by_form"].items())
    return [f"{indent}the forms disagree at B {p['batch']:g}: {by} ({1 + d:.2f}x), and only "
            "their left-out errors chose: plan on the band, or add pilot seeds"]


def chosen_form(ff: dict | None) -> str | None:
    """The chosen failure form's own parameters in words, where it is not the power law (whose
    exponent q the lines print anyway); None for the power law or where no form was fitted.
    ff: the plan's failure_form (FailureForm.to_json: each form's parameters by its name)."""
    if ff is None or ff["chosen"] in (None, "power"):
        return None
    par = ff[ff["chosen"]]
    if ff["chosen"] == "coupled":
        return f"coupled form, N_fail = {par['ratio_to_progress']:.3g} N_prog"
    cb = par["critical_batch"]
    return (f"knee form ({par['form']} shape), " + ("no critical batch within the pilots' "
                                                    "reach" if cb is None else
                                                    f"critical batch {cb:.4g}"))


def failure_words(fe: dict, own: str | None, power: str = "") -> str:
    """A failure clock's fit in words: the chosen form's own (`chosen_form`), then the power
    law's q as not chosen; where the power law is chosen (own None), power + its q, or "no
    fit". fe: the clock's failure_exponent (value, ci)."""
    q = None if fe["value"] is None else \
        f"q = {fe['value']:.3g} [{fe['ci'][0]:.3g}, {fe['ci'][1]:.3g}]"
    if own is None:
        return "no fit" if q is None else power + q
    return own if q is None else f"{own}; the power law, not chosen, {q}"


def plan_file(path=None, predict=None, margin: float = 0.1, level: float = 0.95,
              progress_form: str | None = None, predict_rule: tuple | None = None) -> Plan:
    """pilot.plan on a CSV, or with path None on the published table (plus its reading).
    predict: batches B, (B, K) pairs or 'B:K' texts (pilot/predict.py). predict_rule: (p,
    lr0 or None, b0 or None), the anchor by default the pilots' rule's."""
    pilot.check_settings(predict, margin, level)
    runs = pilot_article.article_runs() if path is None else pilot.read_runs(path)
    rule = anchored(predict_rule, runs.batch_R, runs.lr_R)
    if path is None:
        out = pilot.plan(runs, predict or pilot_article.predict_batches(), margin, level,
                         progress_form=progress_form, predict_rule=rule)
        return replace(out, article=pilot_article.reading(out))
    return pilot.plan(runs, predict, margin, level, progress_form=progress_form,
                      predict_rule=rule)


def _g(v, fmt="{:.4g}"):
    return "-" if v is None else fmt.format(v)


def ci(d, fmt="{:.4g}"):
    return f"{_g(d['median'], fmt)} [{_g(d['ci'][0], fmt)}, {_g(d['ci'][1], fmt)}]"


def table(out: dict) -> str:
    """The plan (its JSON) as printed text."""
    f, lvl = out["fit"], round(100 * out["fit"]["level"])
    r, pr = f["rule"], f.get("pilots_rule")
    own = pr or r
    lines = [f"pilot runs: {out['source']}: {len(out['runs'])} runs, "
             f"{len(out['runs']) - own['off_rule_runs']} on the rule lr = {own['lr0']:.4g} "
             f"(B/{own['b0']:g})^{own['p']:g}"
             + (f" ({own['off_rule_runs']} off it, not fitted)" if own["off_rule_runs"] else "")
             + ("" if pr is None else f"; predictions under lr = {r['lr0']:.4g} "
                f"(B/{r['b0']:g})^{r['p']:g} (--predict-rule)"),
             f"progress clock: {f['progress']['form']} form, "
             + ("" if f["progress"]["form"] == "adam" else "N_prog = N_min " + (
                 f"(1 + c B/B_crit)^{f['progress']['asymptote_exponent']:g}"
                 if f["progress"].get("sharpness", 1.0) == 1.0 else
                 f"(1 + c (B/B_crit)^{f['progress']['sharpness']:.3g})^"
                 f"{f['progress']['asymptote_exponent'] / f['progress']['sharpness']:.3g}")
                 + " with N_prog(B_crit) = 1.2 N_min; ")
             + f"{f['progress']['why']}"]
    cb = out["critical_batch"]
    knee = " (the knee: the sqrt rule's critical batch)" if f["progress"]["form"] == "adam" else ""
    fitted = [q["batch"] for q in out["runs"] if q.get("on_rule", True)]
    below = cb["batch"] is not None and fitted and cb["batch"] < min(fitted)
    flat = ("no knee: noise-dominated" if knee else "progress flat")
    lines.append(f"critical batch{knee}: {_g(cb['batch'])} [{_g(cb['ci'][0])}, "
                 f"{_g(cb['ci'][1])}] ({lvl}% CI)"
                 + (f"; below the smallest pilot batch ({min(fitted):g}): every pilot is past "
                    "it, so it is extrapolated" if below else "") if cb["batch"] is not None else
                 "critical batch: none within reach" + ("" if cb["ci"][0] is None else
                                                        f" ({flat} up to {cb['ci'][0]:.4g})"))
    fe = out["failure_exponent"]
    ff = f.get("failure_form")
    own = chosen_form(ff)
    lines.append(f"failure clock: {failure_words(fe, own, 'as a power law N_fail ~ B^q, ')}; "
                 + fe["reading"])
    if ff is not None:
        lines.append(f"failure clock's form (the clock that fails first at the largest batch): "
                     f"{ff['why']}")
        lines += disagreement_lines(ff, out["predictions"], indent="  ")
    pe = f.get("progress_form_error")
    if pe is not None and pe["curvature"] is not None:
        # the rate forms.loo_rate measures: the bend of log N in log B the left-out end
        # batches' errors imply (not the "curvature" progress form, whose name this shares)
        lines.append(f"form error: the bands past the pilots carry each form's leave-one-end-out "
                     f"error (progress: with an end batch left out, the form misses a bend of "
                     f"log N in log B of {pe['curvature']:.3g} per (log B)^2)")
    t = f["throughput"]
    if t is not None:
        lines.append(f"throughput: roofline fitted to step times (t_lat {t['gen_latency']:.4g} s,"
                     f" B_gen {t['critical_gen_batch']:.4g}, knee {t['knee']:.3g}); measured "
                     "step times are used where runs have them")
    show = pp.shows_k(list(out["predictions"]) + list(out["runs"]))  # B:K where any K != 1
    lines += ["", f"{'batch:K' if show else 'batch':>8} {'lr':>9}  "
              f"{'progress samples [' + str(lvl) + '% CI]':<30}"
              f"{'failure samples':<30}{'hours to target':<24}".rstrip()]
    for p in out["predictions"]:
        h = p["hours_to_target"]
        fs = p["failure_samples"]
        b = pp.label(p["batch"], p.get("updates", 1.0), show)
        lines.append(f"{b:>8} {p['lr']:>9.4g}  {ci(p['progress_samples'], '{:.0f}'):<30}"
                     f"{'-' if fs['median'] is None else ci(fs, '{:.0f}'):<30}"
                     f"{'-' if h is None else ci(h, '{:.3g}'):<24}")
    lines += (updates_note(out) + envelope_note(out["predictions"], f["progress"]["form"])
              + zero_width_note(out, show))
    rec = out["recommendation"]
    unit = "s" if rec["objective"] == "seconds" else "samples"
    c = rec["constant"]
    no_failure = all(e.get("failure") is None for e in out["estimates"])
    lines += ["", f"recommendation (least {rec['objective']} to target, " + (
        "progress only: no failure clock to keep ahead):" if out.get("progress_only") else
        "no pilot failed, so no failure clock to keep ahead):" if no_failure else
        f"failure clock at least {rec['margin']:g} ahead):")]
    if rec["objective"] == "samples":
        lines.append("  (no seconds_per_update column: samples, not wall-clock time, are "
                     "minimised, which favours the smallest batch)")
    # the cost beside the samples only where it is another quantity (seconds): minimising
    # samples, the cost is the samples already printed
    lines.append("  constant batch: none is safe" if c is None else
                 f"  constant batch {c['batch']:g}: {c['progress_samples']:.4g} samples "
                 f"(from the {c['source']})"
                 + (f", {c['cost']:.4g} {unit}" if rec["objective"] == "seconds" else ""))
    fo = rec["fit_only_constant"]
    if fo is not None and c is not None and fo["batch"] != c["batch"]:
        lines.append(f"  (the fitted curves alone would pick {fo['batch']:g}: "
                     f"{fo['cost']:.4g} {unit})")
    s = rec["schedule"]
    lines.append("  schedule: none is safe" if s is None else
                 f"  schedule {s['b1']:g} -> {s['b2']:g} after {s['switch_samples']:.4g} samples:"
                 f" {s['cost']:.4g} {unit}"
                 + ("" if no_failure else f", failure clock spent {s['failure_fraction']:.2f}")
                 + ("" if s["beats_constant"] else " (no faster than the constant batch)"))
    if rec["unsafe"]:
        lines.append("  predicted to fail first: " + ", ".join(f"{b:g}" for b in rec["unsafe"]))
    if "article" in out:
        a = out["article"]
        lines += ["", "published table: time to target relative to P = 128 (sqrt rule)",
                  f"{'prompts':>8} {'published':>10} {'planned':>8}  clock from"]
        lines += [f"{x['prompts']:>8} {_g(x['published'], '{:.2f}'):>10} {x['planned']:>8.2f}"
                  f"  {x['source']}" for x in a["rows"]]
        lines.append(f"optimum: planned P = {_g(a['optimum_prompts'], '{:g}')}, published "
                     f"P = {a['published_optimum_prompts']}")
    return "\n".join(line.rstrip() for line in lines)


# What 32 updates per rollout batch cost on the bandit past the clip band, N(32 m, 32) / N(m, 1)
# at m = 64, lowest and highest over the clipped cells (docs/claim_sources/updates_cost.json,
# `python experiments/updates_cost.py`; a test holds these to that file).
K32_COST = (1.4, 5.1)


def updates_note(out: dict) -> list:
    """A line under the predictions where one takes K > 1 updates per rollout batch at a K no
    pilot ran: m = B / K counts the K minibatches as fresh, which the clip breaks once the
    policy's move over a rollout batch leaves its band (docs/plan.md, "Updates per rollout
    batch"); a pilot at that K says which regime a run is in."""
    ran = {float(r.get("updates", 1.0)) for r in out["runs"]}
    ks = sorted({float(p.get("updates", 1.0)) for p in out["predictions"]} - ran - {1.0})
    if not ks:
        return []
    return [f"K = {', '.join(f'{k:g}' for k in ks)}: no pilot took it; m = B / K holds only "
            "while the policy's move over one rollout batch stays inside the clip band (on the "
            f"bandit past it 32 updates cost {K32_COST[0]:g}x to {K32_COST[1]:g}x; docs/plan.md, "
            "\"Updates per rollout batch\"): a pilot at that K says which"]


def envelope_note(predictions, form: str) -> list:
    """A line where Adam's form predicts at B:K (K != 1) past its envelope's anchor: the
    envelope (pilot/envelope.py) starts from the largest pilot's samples per update times K
    (plan._envelope), not from the largest pilot batch, which the band's reason calls "the
    largest pilot"; e.g. B 1024 for 2048:4 where the largest pilot takes 256 an update."""
    got = [(p, p["progress_samples"].get("envelope")) for p in predictions
           if p.get("updates", 1.0) != 1.0]
    got = [(p, e) for p, e in got if e]
    if form != "adam" or not got:
        return []
    m = got[0][1]["batch_top"] / got[0][0]["updates"]
    at = ", ".join(f"B {e['batch_top']:g} for {pp.label(p['batch'], p['updates'], True)}"
                   for p, e in got)
    return [f"envelope at B:K: anchored at the largest pilot's samples per update ({m:.4g}) "
            f"times K: {at}"]


# a chosen progress form whose squared log error over the pilots is at most this fits them
# exactly (residuals ~1e-5 in log; any logged run scatters by percents): its band has no width
EXACT_SSE = 1e-9


def zero_width_note(out: dict, show: bool) -> list:
    """A line where a progress band prints with no width ([625, 625]) because the pilots'
    clocks fit the chosen form exactly (its squared log error at most EXACT_SSE: no scatter
    to make a band from, as in a noise-free fixture); [] otherwise."""
    pr = out["fit"]["progress"]
    sse = pr["sse_log"].get(pr["form"])
    zero = [p for p in out["predictions"] if p["progress_samples"]["median"] is not None
            and None not in p["progress_samples"]["ci"]
            and len({f"{v:.0f}" for v in p["progress_samples"]["ci"]}) == 1]
    if not zero or sse is None or sse > EXACT_SSE:
        return []
    at = ", ".join(pp.label(p["batch"], p.get("updates", 1.0), show) for p in zero)
    return [f"band of zero width at B {at}: the pilots' clocks fit the {pr['form']} form "
            f"exactly (squared log error {sse:.2g}), so there is no scatter to make a band "
            "from; real logs have scatter"]


def scored(head: str, d: dict, width: int, answer: str = "measured") -> str:
    """A held-out check's row: head, then the answer (d[answer]), predicted, band, error and
    coverage of d (a score: answer, predicted, ci, rel_error, covered), `width` wide."""
    if d["rel_error"] is None:
        return f"{head}  censored or not fitted"
    band = "[" + ", ".join("-" if v is None else f"{v:.0f}" for v in d["ci"]) + "]"
    return (f"{head} {d[answer]:>{width}.0f} {d['predicted']:>{width}.0f} {band:>20} "
            f"{100 * d['rel_error']:>+6.1f}% {'yes' if d['covered'] else 'no'}")


__all__ = ["plan_file", "chosen_form", "failure_words", "ci", "table", "updates_note",
           "envelope_note", "zero_width_note", "EXACT_SSE", "scored"]
