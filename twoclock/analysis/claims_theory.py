"""The claims table's theory scores (docs/claims.md, "Theory scores beside the no-theory
baseline"): each theory's predictions at cells it did not see against the measured medians,
beside the no-theory baseline (the seen cell scaled by the obvious rule). NumPy only."""
import numpy as np

from twoclock.analysis import clocks, paired
from twoclock.analysis.claims_base import PREREG, SOURCES, Source, load, policy_cell

WITHIN = 0.2  # the policy pre-registration's goal: a clock within 20% of its prediction


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
