"""The claims table, docs/claims.md: each comparison README.md and docs/ state, recomputed from
the result files committed under docs/claim_sources/ and docs/preregistered/, with its paired
95% CI and a verdict, and each theory score beside the no-theory baseline's. NumPy only.

    python -m twoclock.analysis.claims [--check]

writes docs/claims.md (`--check`: exit 1, writing nothing, where the file is not what the
command writes now). The sources' per-seed clocks come from `python tools/claims_sources.py`.
"""
import argparse
import json
import os
import sys

import numpy as np

from twoclock.analysis import clocks, paired
from twoclock.clock import reached

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES, PREREG = "docs/claim_sources", "docs/preregistered"
OUT = "docs/claims.md"
WITHIN = 0.2  # the policy pre-registration's goal: a clock within 20% of its prediction


def load(rel: str) -> dict:
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def verdict(ci, claim: tuple) -> str:
    """holds / not established / fails of a CI [lo, hi] (None: unbounded) against a claim:
    ("above", x): the contrast exceeds x; ("below", x); ("within", a, b): it lies in [a, b]."""
    lo = -np.inf if ci[0] is None else ci[0]
    hi = np.inf if ci[1] is None else ci[1]
    kind, *v = claim
    if kind == "above":
        return "holds" if lo > v[0] else "fails" if hi < v[0] else "not established"
    if kind == "below":
        return "holds" if hi < v[0] else "fails" if lo > v[0] else "not established"
    a, b = v
    return "holds" if a <= lo and hi <= b else "fails" if hi < a or lo > b else "not established"


def _ci_text(est: dict, digits: int) -> str:
    f = lambda x, side: (side if x is None else f"{x:.{digits}f}")  # noqa: E731
    return f"{f(est['median'], '>')} [{f(est['ci'][0], '<')}, {f(est['ci'][1], '>')}]"


class Source:
    """One committed per-seed source (tools/claims_sources.py): clocks [batch, lr0, seed]."""

    def __init__(self, name: str):
        self.name, self.path = name, f"{SOURCES}/{name}.json"
        self.d = load(self.path)
        self.idx = clocks.bootstrap_indices(self.d["seeds"])

    def seeds(self, clock: str, b: int, lr0: float) -> np.ndarray:
        i, j = self.d["batches"].index(b), self.d["lr0s"].index(lr0)
        return np.asarray(self.d["per_seed"][clock][i][j], np.float64)

    def ratio(self, clock: str, b: int, b_ref: int, lr0: float) -> dict:
        """N(b) / N(b_ref) at lr0, paired over seeds."""
        return paired.ratio_ci(self.seeds(clock, b, lr0), self.seeds(clock, b_ref, lr0),
                               self.idx)

    def median_ci(self, clock: str, b: int, lr0: float) -> dict:
        return clocks.summarize(self.seeds(clock, b, lr0), idx=self.idx)


def contrasts() -> list:
    """[claim, contrast, estimate text, verdict, source] rows: the headline contrasts."""
    rows = []

    def add(claim, contrast, est, rule, src, digits=2):
        rows.append([claim, contrast, _ci_text(est, digits), verdict(est["ci"], rule), src])

    q, qf = Source("quadratic_sqrt"), Source("quadratic_fixed")
    for lr0 in (1e-2, 5e-3):
        add(f"quadratic, sqrt rule, lr0 {lr0:g}: progress slows over 32x",
            "N_prog(256) / N_prog(8)", q.ratio("progress", 256, 8, lr0), ("above", 1), q.path)
    for lr0 in (1e-2, 2e-2, 5e-3):
        add(f"quadratic, sqrt rule, lr0 {lr0:g}: the failure clock is flat within 5% over 32x",
            "N_fail(256) / N_fail(8)", q.ratio("failure", 256, 8, lr0), ("within", 0.95, 1.05),
            q.path)
        add(f"quadratic, sqrt rule, lr0 {lr0:g}: the failure clock rises over 32x",
            "N_fail(256) / N_fail(8)", q.ratio("failure", 256, 8, lr0), ("above", 1), q.path)
    add("quadratic, fixed lr, lr0 0.01: the failure clock grows (as sqrt(B): 5.66 over 32x)",
        "N_fail(256) / N_fail(8)", qf.ratio("failure", 256, 8, 1e-2), ("above", 1), qf.path)
    for s, rule in ((q, "sqrt rule"), (qf, "fixed lr")):
        add(f"quadratic, {rule}, lr0 0.01: updates to target at 2x batch fall",
            "U_prog(16) / U_prog(8)", s.ratio("progress_updates", 16, 8, 1e-2), ("below", 1),
            s.path)
    b = Source("bandit_sqrt")
    for B in (128, 256, 512, 1024):
        add(f"bandit, sqrt rule: the failure clock is within +-25% of B 64's at B {B}",
            f"N_fail({B}) / N_fail(64)", b.ratio("failure", B, 64, 0.02), ("within", 0.75, 1.25),
            b.path)
    add("bandit, sqrt rule: the failure clock is flat within 5% over 16x",
        "N_fail(1024) / N_fail(64)", b.ratio("failure", 1024, 64, 0.02), ("within", 0.95, 1.05),
        b.path)
    add("bandit, sqrt rule: progress slows at least 1.5x over 16x", "N_prog(1024) / N_prog(64)",
        b.ratio("progress", 1024, 64, 0.02), ("above", 1.5), b.path)
    for B in (128, 1024):
        add(f"bandit, sqrt rule: the emergent collapse comes earlier at B {B}",
            f"N_collapse({B}) / N_collapse(64)", b.ratio("collapse", B, 64, 0.02), ("below", 1),
            b.path)
    sig = Source("bandit_signal")
    add("bandit, signal-dominated drift: the failure clock grows over 16x (as sqrt(B): 4)",
        "N_fail(1024) / N_fail(64)", sig.ratio("failure", 1024, 64, 0.02), ("above", 1), sig.path)
    return rows


def _base(src: Source, clock: str, b: int, lr0: float, b_seen: int) -> float:
    """The no-theory baseline: the seen batch's measured median, scaled by the stated lr rule's
    obvious rule: under the sqrt rule the samples held (its premise: drift per sample constant
    when the step is noise-dominated); under a fixed lr the updates held (samples x B ratio)."""
    seen = np.median(clocks.censored(src.seeds(clock, b_seen, lr0)))
    return float(seen * (b / b_seen if src.d["lr_rule"] == "fixed" else 1.0))


def batch_scores(src: Source, clock: str, theory_key: str) -> dict:
    """Over every unseen (batch, lr0): how many predictions lie inside the measured median's
    95% CI, and the largest |prediction / median - 1|, for the theory and the baseline."""
    b_seen = src.d["batches"][0]
    out = {"theory": [0, 0, 0.0], "baseline": [0, 0, 0.0]}
    for i, b in enumerate(src.d["batches"][1:], 1):
        for j, lr0 in enumerate(src.d["lr0s"]):
            m = src.median_ci(clock, b, lr0)
            if m["median"] is None:
                continue
            _tally(out, m["ci"], m["median"], (("theory", src.d["theory"][theory_key][i][j]),
                                               ("baseline", _base(src, clock, b, lr0, b_seen))))
    return out


def _tally(out: dict, ci, measured: float, predictions) -> None:
    """Each (predictor, value) into out[predictor] = [inside the measured 95% CI (an open end
    unbounded), scored, largest |value / measured - 1|]."""
    lo, hi = (-np.inf if ci[0] is None else ci[0], np.inf if ci[1] is None else ci[1])
    for k, g in predictions:
        t = out[k]
        t[0] += bool(lo <= g <= hi)
        t[1] += 1
        t[2] = max(t[2], abs(g / measured - 1))


def critical_scores(src: Source) -> dict:
    """The critical batch at each lr0 but the seen (the middle) one: the model's prediction and
    the baseline (the seen lr0's measured critical batch held), each [inside the measured
    95% CI, scored, largest |prediction / measured - 1|]."""
    lr0s = src.d["lr0s"]
    seen = lr0s[len(lr0s) // 2]

    def measured(lr0):
        x = [src.seeds("progress", b, lr0) for b in src.d["batches"]]
        return clocks.critical_batch(src.d["batches"], np.stack(x), idx=src.idx)

    base = measured(seen)["batch"]
    out = {"theory": [0, 0, 0.0], "baseline": [0, 0, 0.0], "seen": seen}
    for j, lr0 in enumerate(lr0s):
        m = measured(lr0)
        if lr0 == seen or m["batch"] is None or base is None:
            continue
        _tally(out, m["ci"], m["batch"],
               (("theory", src.d["theory_critical_batch"][j]), ("baseline", base)))
    return out


def policy_cell(name: str, source: str = "policy_study") -> tuple:
    """(per_seed {batch: {clock: [S]}}, bootstrap indices, path) of a policy study cell."""
    path = f"{SOURCES}/{source}.json"
    per = load(path)["cells"][name]["per_seed"]
    return per, clocks.bootstrap_indices(len(per[min(per, key=int)]["progress"])), path


def margin_share(eps: dict, none: dict, clock: str, b: str, idx) -> dict:
    """How much of clipping's delay of a drift clock reaches the margin a trainer has before
    it: ln[margin(eps) / margin(none)] / ln[N(eps) / N(none)] at batch b, margin = N_clock /
    N_prog, paired (1: the margin moves as much as the clock; 0: progress is delayed as much)."""
    x = [clocks.censored(p[b][k]) for p in (eps, none) for k in (clock, "progress")]

    def share(ce, pe, cn, pn):
        m = paired.med
        return np.log((m(ce) / m(pe)) / (m(cn) / m(pn))) / np.log(m(ce) / m(cn))
    return paired.paired_ci(share, *x, idx=idx, undefined=np.nan)


def policy_rows(add) -> None:
    """The policy study's contrasts (16 seeds, B 64-1024): the sqrt rule's progress gap and
    exponents, and clipping's delay against the margin, in the study's cells and variants."""
    per, idx, path = policy_cell("sqrt")
    add("policy, sqrt rule: progress slows over 16x", "N_prog(1024) / N_prog(64)",
        paired.ratio_ci(per["1024"]["progress"], per["64"]["progress"], idx), ("above", 1),
        path)
    for clock, what in (("null", "the end-token drift clock"), ("kl", "the KL clock"),
                        ("entropy", "the entropy clock")):
        add(f"policy, sqrt rule: {what} grows with B", f"batch exponent of N_{clock}",
            paired.exponent_ci(per, clock, idx), ("above", 0), path, digits=3)
    cells = [("the study's cells", "clip_eps0.2_fixed_size", "clip_none_fixed_size",
              "policy_study")] + [
        (v, f"variant_{v}_eps0.2", f"variant_{v}_none", "policy_variants")
        for v in ("warmup_seed1", "lr_x4")]
    for what, eps, none, src in cells:
        (pe, idx, path), (pn, _, _) = policy_cell(eps, src), policy_cell(none, src)
        for clock in ("kl", "entropy"):
            add(f"policy, clipping eps 0.2 against none at B 1024 ({what}): the margin "
                f"N_{clock} / N_prog moves less than the {clock} clock",
                f"ln(margin ratio) / ln(N_{clock} ratio)",
                margin_share(pe, pn, clock, "1024", idx), ("within", -1, 1), path)


def damage_rows(add) -> None:
    """The damage study's contrasts (16 seeds, B 64 / 256 / 1024, both rules): the RMS
    end-token shift's slope on log B at fixed responses, the damaged share, and the drift at
    each harm clock's crossing against B 64's."""
    path = f"{SOURCES}/damage_study.json"
    d = load(path)
    for rule in ("sqrt", "fixed"):
        per = d["cells"][rule]["per_seed"]
        bs = sorted(per, key=int)
        idx = clocks.bootstrap_indices(len(per[bs[0]]["progress"]))
        for r in d["study"]["fixed_responses"]:
            est = paired.rms_slope_ci(per, f"shift_at_{r}", idx)
            rel, word = (("above", 0), "grows") if rule == "sqrt" else (("below", 0), "falls")
            add(f"policy damage, {rule} rule: the RMS end-token shift at {r} responses {word} "
                "with B", f"slope of log RMS shift on log B, B {bs[0]}-{bs[-1]}", est, rel,
                path, digits=3)
        lo, hi = bs[0], bs[-1]
        est = paired.paired_ci(lambda x, y: np.mean(reached(x), axis=-1) -
                               np.mean(reached(y), axis=-1), per[hi]["damage"],
                               per[lo]["damage"], idx=idx)
        add(f"policy damage, {rule} rule: the damage clock reaches fewer seeds at B {hi}",
            f"damaged share at {hi} minus at {lo}", est, ("below", 0), path, digits=3)
        for harm in ("damage", "deficit"):
            for b in bs[1:]:
                est = paired.paired_ci(lambda x, y: paired.nanmed(x) / paired.nanmed(y),
                                       per[b][f"shift_at_{harm}"], per[lo][f"shift_at_{harm}"],
                                       idx=idx, undefined=np.nan)
                if est["median"] is None:  # no seed crossed at b: no drift at the crossing
                    continue
                add(f"policy damage, {rule} rule: the drift at the {harm} crossing is larger "
                    f"at B {b} than at {lo}", f"drift at {harm}, {b} over {lo}", est,
                    ("above", 1), path)


def slow_contrasts() -> list:
    """[claim, contrast, estimate text, verdict, source] rows from the slow studies' committed
    per-seed numbers (their runs take 6-40 min on 2 cores: docs/claim_sources/)."""
    rows = []

    def add(claim, contrast, est, rule, src, digits=2):
        rows.append([claim, contrast, _ci_text(est, digits), verdict(est["ci"], rule), src])

    policy_rows(add)
    r = load(f"{SOURCES}/bandit_regimes.json")["cases"][EMERGENT]
    g = lambda b, k: np.asarray(next(x for x in r if x["batch"] == b)["per_seed"][k],  # noqa
                                np.float64)
    for B in (512, 1024):
        add(f"bandit, emergent drift unclipped (sqrt rule): the failure clock grows at B {B}",
            f"N_fail({B}) / N_fail(64)", paired.ratio_ci(g(B, "failure"), g(64, "failure"),
                                                          clocks.bootstrap_indices(16)),
            ("above", 1), f"{SOURCES}/bandit_regimes.json")
    damage_rows(add)
    for me in ("4x1", "4x2"):
        path = f"{SOURCES}/clipping_{me}.json"
        c = load(path)
        f = lambda b, clip: np.asarray(fail_n(c, b, clip), np.float64)  # noqa: E731
        idx = clocks.bootstrap_indices(len(f(64, None)))
        add(f"bandit: clipping (eps 0.2) delays the failure clock more at B 1024 than at 64 "
            f"(M x E = {me.replace('x', ' x ')})", "[N_fail(eps 0.2) / N_fail(none)] at 1024 over "
            "at 64", paired.ratio_of_ratios_ci(f(1024, 0.2), f(1024, None), f(64, 0.2),
                                               f(64, None), idx, undefined=np.nan),
            ("above", 1), path)
    updates_rows(add)
    return rows


def updates_rows(add) -> None:
    """What K updates per rollout batch cost on the bandit at a fixed lr, clipped and not, at
    K = 4 and 32 (updates_cost: N(K m, K) / N(m, 1) against the planner's m = B / K)."""
    path = f"{SOURCES}/updates_cost.json"
    src = load(path)
    idx = clocks.bootstrap_indices(src["config"]["seeds"])
    for c in src["cells"]:
        if c["updates"] not in (4, 32):
            continue
        clip = "unclipped" if c["clip"] is None else f"clip eps {c['clip']:g}"
        ps = {k: np.asarray(v, np.float64) for k, v in c["per_seed"].items()}
        add(f"bandit, fixed lr {c['lr0']:g}, {clip}: {c['updates']} updates per rollout batch "
            f"cost more samples than m = B / K", f"N({c['batch']}, K {c['updates']}) / "
            f"N({src['config']['per_update']}, K 1)",
            paired.ratio_ci(ps["k_updates"], ps["one_update_at_m"], idx), ("above", 1), path)
    k = lambda lr0, clip: np.asarray(next(  # noqa: E731
        c for c in src["cells"] if c["lr0"] == lr0 and c["clip"] == clip
        and c["updates"] == 32)["per_seed"]["k_updates"], np.float64)
    for lr0 in src["config"]["lr0s"]:
        add(f"bandit, fixed lr {lr0:g}, 32 updates per rollout batch: the clip (eps 0.2) is what "
            "costs", "N(2048, K 32, eps 0.2) / N(2048, K 32, unclipped)",
            paired.ratio_ci(k(lr0, 0.2), k(lr0, None), idx), ("above", 1), path)


def fail_n(c: dict, b: int, clip) -> list:
    """A clipping source's per-seed failure clocks at batch b and clip (None: unclipped)."""
    return next(r["fail_n"] for r in c["runs"] if r["batch"] == b and r["clip"] == clip)


EMERGENT = "emergent drift, unclipped, sqrt rule"  # bandit_regimes' case of the claim


def within_scores(rows) -> dict:
    """Over (predicted, answer, baseline) triples: each predictor's [within 15% of the answer,
    scored, largest miss, nearer of the two]; a row without an answer is not scored, a
    baseline that never crossed (None) misses."""
    out = {"theory": [0, 0, 0.0, 0], "baseline": [0, 0, 0.0, 0]}
    for pred, answer, base in rows:
        if answer is None or pred is None:
            continue
        err = {"theory": abs(pred / answer - 1),
               "baseline": np.inf if base is None else abs(base / answer - 1)}
        for k, e in err.items():
            t = out[k]
            t[0] += bool(e <= 0.15)
            t[1] += 1
            t[2] = max(t[2], e)
            t[3] += bool(e < err["baseline" if k == "theory" else "theory"])
    return out


def plan_scores(model: str) -> dict:
    """The planner from logs (plan_check --logs) at the held-out batches: its predictions and
    the baseline (the largest pilot batch's median clock held in samples, the sqrt rule's
    premise), each [within 15% of the 64-seed answer, scored, largest miss, nearer]."""
    d = load(f"{SOURCES}/plan_check_{model}.json")
    top = str(max(map(int, d["pilot_clocks"])))
    return within_scores(
        (h["predicted"], h["answer"],
         float(np.median(clocks.censored([0 if v is None else v
                                          for v in d["pilot_clocks"][top][h["clock"]]]))))
        for h in d["heldout"])


def calibration_scores(kind: str | None = None) -> dict:
    """The planner's calibration (plan_calibration, its default design): within_scores over
    its rows (of one kind, progress or failure, if given), and the 95% bands' coverage."""
    rows = [r for r in load(f"{SOURCES}/plan_calibration.json")["rows"]
            if kind is None or r["kind"] == kind]
    out = within_scores((r["predicted"], r["answer"], r["baseline"]) for r in rows)
    scored = [r for r in rows if r["answer"] is not None and r["predicted"] is not None]
    out["covered"] = [sum((r["band"][0] or 0) <= r["answer"] <=
                          (np.inf if r["band"][1] is None else r["band"][1]) for r in scored),
                      len(scored)]
    return out


def policy_scores() -> dict:
    """The policy study's pre-registered test: {(predictor, group, kind): [hits, total]},
    predictor 'theory' (calibrated on the seen cell) or 'baseline' (the seen cell's clocks x the
    lr0 ratio; its exponents are the seen cell's), group 'lr and group cells', 'second warm-up'
    or 'null clock', kind 'clocks within 20%' or 'exponents inside the CI'."""
    pred, meas = load(f"{PREREG}/policy_predictions.json"), load(f"{PREREG}/policy_measured.json")
    seen, seen_raw, lr_seen = (pred["seen"]["measured_median"], pred["seen"]["raw"],
                               pred["design"]["lr0"])
    out = {}
    for cell, cv in pred["cells"].items():
        for c in ("progress", "null", "kl", "entropy"):
            group = ("null clock" if c == "null" else
                     "second warm-up" if cell == "warmup_seed1" else "lr and group cells")
            raw = cv["clocks"][c]["raw"]
            guess = {"theory": {b: raw[b] * seen[c][b] / seen_raw[c][b] for b in raw},
                     "baseline": {b: seen[c][b] * lr_seen / cv["lr0"] for b in raw}}
            for b, per in meas["cells"][cell]["per_seed"].items():
                med = np.median(clocks.censored(per[c]))
                if np.isfinite(med):
                    for k, g in guess.items():
                        t = out.setdefault((k, group, "clocks within 20%"), [0, 0])
                        t[0] += bool(abs(med / g[b] - 1) <= WITHIN)
                        t[1] += 1
            e = meas["comparison"]["cells"][cell][c]["exponent"]
            if e["median"] is None:
                continue
            lo = -np.inf if e["ci"][0] is None else e["ci"][0]
            hi = np.inf if e["ci"][1] is None else e["ci"][1]
            logb = np.log(np.asarray(e["batches"], np.float64))
            for k, g in guess.items():
                y = np.log([g[str(b)] for b in e["batches"]])[None]
                t = out.setdefault((k, group, "exponents inside the CI"), [0, 0])
                t[0] += bool(lo <= paired.log_slope(logb, y)[0] <= hi)
                t[1] += 1
    return out


def adam_exponent_scores() -> tuple:
    """The policy study's sqrt-rule exponents: Adam's per-coordinate prediction (over the
    batches the measured slope used) and the baseline 0, each [inside the measured CI, scored]."""
    d = load(f"{SOURCES}/policy_study.json")
    per, idx, _ = policy_cell("sqrt")
    t, b = [0, 0], [0, 0]
    for clock, v in d["answers"]["2_exponents"]["sqrt"].items():
        e = paired.exponent_ci(per, clock, idx)
        if e["median"] is None or v.get("adam_predicted_same_batches") is None:
            continue
        lo = -np.inf if e["ci"][0] is None else e["ci"][0]
        hi = np.inf if e["ci"][1] is None else e["ci"][1]
        for score, g in ((t, v["adam_predicted_same_batches"]), (b, 0.0)):
            score[0] += bool(lo <= g <= hi)
            score[1] += 1
    return t, b


def theory_rows() -> list:
    """[theory, cells scored, measure, theory's score, baseline's score, which is better,
    source] rows."""
    rows = []

    def better(t, b, t_miss=None, b_miss=None):
        if t != b:
            return "theory" if t > b else "baseline"
        if t_miss is None or t_miss == b_miss:
            return "tie"
        return f"tie; {'theory' if t_miss < b_miss else 'baseline'} nearer"

    def add_batch(name, src, clock, key, what):
        s = batch_scores(src, clock, key)
        t, b = s["theory"], s["baseline"]
        cells = (f"B {', '.join(map(str, src.d['batches'][1:]))} x lr0 "
                 f"{', '.join(f'{v:g}' for v in src.d['lr0s'])} (seen: B {src.d['batches'][0]})")
        rows.append([name, cells, f"{what}: inside the measured median's 95% CI; largest miss",
                     f"{t[0]} of {t[1]}; {100 * t[2]:.1f}%", f"{b[0]} of {b[1]}; {100 * b[2]:.1f}%",
                     better(t[0], b[0], round(t[2], 3), round(b[2], 3)), src.path])

    q, qf = Source("quadratic_sqrt"), Source("quadratic_fixed")
    add_batch("quadratic: mean-field Adam (sqrt rule)", q, "progress", "progress_samples", "N_prog")
    add_batch("quadratic: Adam's first passage (sqrt rule)", q, "failure", "failure_samples",
              "N_fail")
    add_batch("quadratic: mean-field Adam (fixed lr)", qf, "progress", "progress_samples",
              "N_prog")
    add_batch("quadratic: Adam's first passage (fixed lr)", qf, "failure", "failure_samples",
              "N_fail")
    for src, rule in ((q, "sqrt rule"), (qf, "fixed lr")):
        s = critical_scores(src)
        t, b = s["theory"], s["baseline"]
        others = [f"{v:g}" for v in src.d["lr0s"] if v != s["seen"]]
        rows.append([f"quadratic: mean-field critical batch ({rule})",
                     f"lr0 {', '.join(others)} (seen: lr0 {s['seen']:g})",
                     "inside the measured critical batch's 95% CI; largest miss",
                     f"{t[0]} of {t[1]}; {100 * t[2]:.1f}%", f"{b[0]} of {b[1]}; {100 * b[2]:.1f}%",
                     better(t[0], b[0], round(t[2], 3), round(b[2], 3)), src.path])
    add_batch("bandit: smooth Adam failure clock (sqrt rule)", Source("bandit_sqrt"), "failure",
              "failure_samples", "N_fail")
    add_batch("bandit: smooth Adam failure clock, signal-dominated drift",
              Source("bandit_signal"), "failure", "failure_samples", "N_fail")
    for model in ("quadratic", "bandit", "policy"):
        s = plan_scores(model)
        t, b = s["theory"], s["baseline"]
        d = load(f"{SOURCES}/plan_check_{model}.json")
        batches = sorted({h["batch"] for h in d["heldout"]})
        rows.append([f"planner from logs ({model}): each clock's fitted form",
                     f"B {', '.join(map(str, batches))} (pilots: B "
                     f"{', '.join(map(str, d['pilot_batches']))})",
                     "within 15% of the 64-seed answer; largest miss; nearer of the two",
                     f"{t[0]} of {t[1]}; {100 * t[2]:.1f}%; {t[3]}",
                     f"{b[0]} of {b[1]}; {100 * b[2]:.1f}%; {b[3]}",
                     better(t[0], b[0], round(t[2], 3), round(b[2], 3)),
                     f"{SOURCES}/plan_check_{model}.json"])
    for kind in ("progress", "failure"):
        s = calibration_scores(kind)
        t, b = s["theory"], s["baseline"]
        rows.append([f"planner's calibration: each {kind} clock's fitted form (95% bands cover "
                     f"{s['covered'][0]} of {s['covered'][1]})",
                     "4x and 8x the largest pilot; 3 models x 6 designs",
                     "within 15% of the 64-seed answer; largest miss; nearer of the two",
                     f"{t[0]} of {t[1]}; {100 * t[2]:.1f}%; {t[3]}",
                     f"{b[0]} of {b[1]}; {100 * b[2]:.1f}%; {b[3]}",
                     better(t[0], b[0], round(t[2], 3), round(b[2], 3)),
                     f"{SOURCES}/plan_calibration.json"])
    t, b = adam_exponent_scores()
    rows.append(["policy: Adam's per-coordinate noise, the sqrt rule's batch exponents",
                 "progress, end-token drift, KL, entropy; B 64-1024",
                 "prediction inside the measured exponent's 95% CI (baseline: 0, the rule's "
                 "premise)", f"{t[0]} of {t[1]}", f"{b[0]} of {b[1]}", better(t[0], b[0]),
                 f"{SOURCES}/policy_study.json"])
    s = policy_scores()
    for group in ("lr and group cells", "second warm-up", "null clock"):
        for kind in ("clocks within 20%", "exponents inside the CI"):
            t, b = s[("theory", group, kind)], s[("baseline", group, kind)]
            rows.append(["policy: Adam's per-coordinate noise, calibrated on the seen cell",
                         group, kind, f"{t[0]} of {t[1]}", f"{b[0]} of {b[1]}",
                         better(t[0], b[0]), f"{PREREG}/policy_measured.json"])
    return rows


HEAD = """# Claims and their evidence

Generated by `python -m twoclock.analysis.claims` from the result files under `docs/claim_sources/`
(the per-seed clocks of each run a claim rests on, written by `python tools/claims_sources.py
--only NAME`: seconds for the default sweeps, 1 to 25 min on 2 cores for each slow study) and
`docs/preregistered/`; do not edit by hand (`tests/test_claims_table.py`
recomputes every number and fails where this file is stale).

Each contrast is a ratio of medians over seeds with its paired 95% bootstrap CI (the same
resampled seeds at both batches; 2000 resamples; a run that never crossed counts as later
than every run that did). Verdicts: **holds** where the CI lies on the claimed side of the
bound (or inside the claimed band), **fails** where it lies wholly on the other side (or outside
the band), **not established** otherwise.
"""

SLOW_HEAD = """Each from one run of the command its source names (1 to 25 min on 2 cores), whose
per-seed numbers are committed. Besides ratios: a batch exponent is the least-squares slope of
log median clock on log B over the batches whose median was reached, with the same paired
bootstrap; the margin's share is ln[margin(eps) / margin(none)] / ln[N(eps) / N(none)], margin
= N_clock / N_prog (0: clipping delays progress as much as the clock, 1: it moves the margin as
much as the clock; "moves less" is the share inside (-1, 1)).
"""

THEORY_HEAD = """## Theory scores beside the no-theory baseline

A theory's predictions at cells it did not see, against the measured medians, beside the
no-theory baseline: the seen cell's measured clock scaled by the obvious rule. For batches:
under the sqrt rule the samples held (the rule's premise, drift per sample constant); under a
fixed lr the updates held (samples x the batch ratio). For the policy's new lr0 and group size:
the seen cell's clocks x the lr0 ratio, whose exponents are the seen cell's. For the critical
batch: the seen lr0's measured critical batch held. For the planner: the largest pilot batch's
median clock held in samples (the pilots' sqrt rule). "better" is the predictor with more hits;
at a tie, the one with the smaller largest miss is "nearer".
"""


def table(header: list, rows: list) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] +
                     ["| " + " | ".join(map(str, r)) + " |" for r in rows])


def render() -> str:
    return "\n".join([
        HEAD, "## Contrasts\n",
        table(["claim", "contrast", "estimate [95% CI]", "verdict", "source"], contrasts()),
        "", "## Contrasts from the slow studies\n", SLOW_HEAD,
        table(["claim", "contrast", "estimate [95% CI]", "verdict", "source"], slow_contrasts()),
        "", THEORY_HEAD,
        table(["theory", "unseen cells", "score", "theory", "baseline", "better", "source"],
              theory_rows()), ""])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help=f"exit 1 where {OUT} is not what this command writes now")
    a = p.parse_args(argv)
    text, path = render(), os.path.join(ROOT, OUT)
    if a.check:
        with open(path) as f:
            same = f.read() == text
        print(f"{OUT} is {'current' if same else 'stale: run python -m twoclock.analysis.claims'}")
        return 0 if same else 1
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
