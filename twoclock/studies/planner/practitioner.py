"""The planner calibrated on a practitioner's sweep (issue 50 item 6; docs/plan.md, "A
practitioner's sweep"): one seed per batch, a fixed lr and the sqrt rule, an evaluation on
EVAL_ITEMS items every EVAL_EVERY updates and none at step 0, pilots at a model's three smallest
plan-check batches, held out at 2x and 8x the largest.

Per model and rule: SEEDS seeds at each pilot batch, each seed one design (seed s at every
pilot batch, planned progress-only from its log alone), and HELDOUT_SEEDS seeds at each
held-out batch, whose answer is the median of the engine's own per-update progress clocks
(noise-free). The logged progress metric carries an evaluation's binomial noise: an accuracy
(the policy model's heldout_acc) is Binomial(n, acc) / n; the bandit's progress_frac (its
held-out error over the initial one) is recomputed from its heldout_acc drawn so; the quadratic
model has no accuracy, and its progress_frac (loss over the initial loss, in [0, 1]) is drawn
as if it were one, Binomial(n, frac) / n."""
import csv
import math
import os
import time
from dataclasses import replace

import numpy as np

from twoclock.atomic import atomic_write
from twoclock.pilot import bands, logs as pl
from twoclock.pilot.plan import PilotError
from twoclock.pilot.report import GOAL
from twoclock.studies.planner import logs_check, whole_curve
from twoclock.studies.planner.paired import contrast, contrast_table  # noqa: F401 (re-exported)

RULES = ("fixed", "sqrt")
EVAL_EVERY, EVAL_ITEMS = 25, 1000
SEEDS, HELDOUT_SEEDS = 16, 16
NOISE_SEED = 20250
WIDE = 2.0  # a band wider than this factor either side of its median is flagged
# issue 50's goal per model: median |error| <= report.GOAL at 2x and 8x, 95% coverage >= 90%
# over >= 40 predictions, median band <= WIDE either side
COVER, AT_LEAST = 0.9, 40


def batches(model) -> tuple:
    """(three pilot batches, held-out batches at 2x and 8x the largest)."""
    from twoclock.studies.plan_check import entry  # noqa: PLC0415 (the studies import this)
    p3 = tuple(sorted(entry(model).pilots)[:3])
    return p3, (2 * p3[-1], 8 * p3[-1])


def design_path(folder: str, model: str, rule: str, seed) -> str:
    """The CSV a design's pilot logs are written to (and read back from by the tools)."""
    return os.path.join(folder, f"plan_calibration_practitioner_{model}_{rule}_s{seed}.csv")


def heldout_budget(budget: int, batch: int, top: int, rule: str) -> int:
    """The samples a held-out run at `batch` is given: the pilots' budget times the most the
    theory lets a progress clock grow from the largest pilot `top`, (batch / top)^(1 - p) under
    lr ~ B^p (pilot/envelope.py: a fixed lr at most B^1, the sqrt rule B^(1/2)), so that a
    held-out run is not left without an answer where the pilots' own budget reached. Rounded
    up to whole updates."""
    p = {"fixed": 0.0, "sqrt": 0.5}[rule]
    want = budget * max(1.0, batch / top) ** (1.0 - p)
    return int(batch * math.ceil(want / batch))


def heldout_budgets(model) -> dict:
    """{rule: [heldout_budget at each held-out batch]} of a model (its plan-check budget)."""
    from twoclock.studies.plan_check import entry  # noqa: PLC0415 (the studies import this)
    pilots, held = batches(model)
    return {r: [heldout_budget(int(entry(model).budget), b, pilots[-1], r) for b in held]
            for r in RULES}


def evaluation_grid(budget: int, batch: int, every: int) -> tuple:
    """(budget, n_ckpt) of a run evaluated every `every` updates: budget // batch updates
    rounded up to a whole number of evaluations (at least 2), so that n_ckpt = updates / every
    makes the engine's checkpoint_every exactly `every` (for 256 updates no n_ckpt does:
    ceil(256 / 10) = 26, ceil(256 / 11) = 24)."""
    n = every * max(2, -(-(budget // batch) // every))
    return n * batch, n // every


def simulate(model, cfg, opt, batch: int, lr0: float, seeds: int, budget: int, keep=None,
             quiet: bool = True, every: int | None = EVAL_EVERY, seed: int = 0):
    """One batch's sweep with a checkpoint every `every` updates: the run is lengthened to a
    whole number of evaluations (budget // batch rounded up to a multiple of `every`), and
    n_ckpt = the updates over `every`, so that the engine's checkpoint_every is `every` (else
    refused); every None: two checkpoints (the held-out runs, whose answer is the engine's
    per-update clock); seed: the sweep's seed (the runs' random streams)."""
    if every is not None:
        budget, n_ckpt = evaluation_grid(budget, batch, every)
    res = logs_check.simulate(model, cfg, opt, (batch,), lr0, seeds, budget,
                              2 if every is None else n_ckpt, seed=seed, keep=keep, quiet=quiet)
    if every is None:
        return res
    upd = res.ckpt[0]["samples"][0, 0][:-1] / batch  # the last: the run's end
    if not np.allclose(upd, every * np.arange(1, upd.size + 1)):
        raise ValueError(f"B {batch}: checkpoints at updates {upd[:3]} are not every {every}")
    return res


def noise(metric: str, logged) -> str:
    """What the evaluation's binomial noise is drawn on, for a progress metric among the
    logged ones (`noisy`)."""
    if metric.endswith("acc"):
        return f"Binomial({EVAL_ITEMS}, {metric}) / {EVAL_ITEMS}"
    if "heldout_acc" in logged:
        return (f"progress_frac x (1 - acc') / (1 - heldout_acc), acc' = Binomial({EVAL_ITEMS}, "
                f"heldout_acc) / {EVAL_ITEMS}")
    return f"Binomial({EVAL_ITEMS}, {metric}) / {EVAL_ITEMS} (no accuracy: the share itself)"


def noisy(ck: dict, metric: str, seed: int, rng) -> np.ndarray:
    """A seed's logged progress metric with an evaluation's binomial noise (`noise`)."""
    v = np.asarray(ck[metric][0, seed], np.float64)
    draw = lambda p: rng.binomial(EVAL_ITEMS, np.clip(p, 0.0, 1.0)) / EVAL_ITEMS
    if metric.endswith("acc") or "heldout_acc" not in ck:
        return draw(v)
    acc = np.asarray(ck["heldout_acc"][0, seed], np.float64)
    err = np.maximum(1.0 - acc, 1e-12)
    return v * (1.0 - draw(acc)) / err


def write_design(path: str, sims: dict, pilots, seed: int, metric: str, rng,
                 every: int = EVAL_EVERY) -> None:
    """Seed `seed` at every pilot batch as a log CSV: run, batch, lr, samples, the metric (the
    sims checkpointed every `every` updates)."""
    def write(f):
        w = csv.writer(f)
        w.writerow(["run", "batch", "lr", "samples", metric])
        for b in pilots:
            res = sims[b]
            ck, lr = res.ckpt[0], float(res.lrs_BxL[0, 0])
            vals = noisy(ck, metric, seed, rng)
            for smp, v in zip(ck["samples"][0, seed], vals):
                if round(smp / b) % every:  # a run's end between evaluations
                    continue
                w.writerow([f"B{b}", f"{b:g}", f"{lr:.8g}", f"{int(smp)}", f"{v:.6g}"])
    atomic_write(path, write)


def pilot_sims(model, cfg, opt, seeds: int = SEEDS, keep=None, quiet: bool = True,
               every: int = EVAL_EVERY, design_seed: int = 0) -> dict:
    """{pilot batch: its sweep} of a model's designs under opt's rule (`simulate`)."""
    from twoclock.studies.plan_check import entry  # noqa: PLC0415
    e = entry(model)
    return {b: simulate(model, cfg, opt, b, e.lr0, seeds, int(e.budget), keep, quiet, every,
                        design_seed) for b in batches(model)[0]}


def heldout_answers(model, cfg, opt, seeds: int = HELDOUT_SEEDS, keep=None,
                    quiet: bool = True) -> dict:
    """{held-out batch: its answer (`truth`)} under opt's rule, each run given its
    `heldout_budget`."""
    from twoclock.studies.plan_check import entry  # noqa: PLC0415
    lr0, held = entry(model).lr0, batches(model)[1]
    return {b: truth(simulate(model, cfg, opt, b, lr0, seeds, budget, keep, quiet, every=None))
            for b, budget in zip(held, heldout_budgets(model)[opt.lr_rule])}


def noise_rng(rule: str, design_seed: int = 0):
    """The evaluation noise's stream of a rule's designs, drawn seed after seed (seed 0 of
    design seed 0: the stream's first draws)."""
    return np.random.default_rng([NOISE_SEED, RULES.index(rule)]
                                 + ([design_seed] if design_seed else []))


def truth(res) -> float | None:
    """The median of the held-out seeds' engine clocks (a seed that never reached: later)."""
    p = np.asarray(res.prog_n[0, 0], np.float64)
    m = float(np.median(np.where(p > 0, p, math.inf)))
    return m if math.isfinite(m) else None


def model_rows(model, cfg, opt, folder: str, keep=None, quiet: bool = True,
               seeds: int = SEEDS, heldout_seeds: int = HELDOUT_SEEDS,
               progress_form: str | None = None, floor_out: bool = False,
               every: int = EVAL_EVERY, compare: bool = False, design_seed: int = 0,
               smoothing: str | None = None, eval_noise: bool = False) -> tuple:
    """(rows, simulation seconds, the noise drawn) of one model: every rule, seed and held-out
    batch; progress_form: the planner's (None: its default); floor_out: each row also scores
    the same log planned with --floor-out (row["floor_out"], `floor_out_plan`); every: the
    pilots' evaluation every that many updates; compare: each row also scores the same log
    planned with the Adam form (row["adam"]) and with its whole curve, the target and two
    more levels with one knee's sharpness fitted jointly (row["knee"], `whole_curve`);
    design_seed: the pilots' sweep seed and a key of their evaluation noise (0: the designs
    of every earlier run; another: fresh designs, the same answers); smoothing: the planner's
    --smooth for every plan of a log (the erosion test of auto reads the logged points);
    eval_noise: every plan of a log is told the evaluation's size (--eval-items EVAL_ITEMS)."""
    pilots, held = batches(model)
    progress, _, conds, _ = logs_check.conditions(model, cfg)
    metric = conds[0].metric
    rows, secs, how = [], 0.0, ""
    reading = {"smoothing": smoothing, "eval_items": EVAL_ITEMS if eval_noise else None}
    for rule in RULES:
        o = replace(opt, lr_rule=rule)
        t0 = time.perf_counter()
        sims = pilot_sims(model, cfg, o, seeds, keep, quiet, every, design_seed)
        answers = heldout_answers(model, cfg, o, heldout_seeds, keep, quiet)
        secs += time.perf_counter() - t0
        how = noise(metric, sims[pilots[0]].ckpt[0])
        rng = noise_rng(rule, design_seed)
        for s in range(seeds):
            path = design_path(folder, model.name, rule, s)
            write_design(path, sims, pilots, s, metric, rng, every)
            try:
                plan, refused = pl.plan_logs(path, progress, [], predict=list(held),
                                             progress_form=progress_form, **reading), None
            except PilotError as err:
                plan, refused = None, str(err)
            fo = floor_out_plan(path, progress, conds[0], held,
                                **reading) if floor_out else None
            # the Adam form's plan of the target and its whole curve's, made once
            adam, knee = whole_curve.plan_both(path, progress, whole_curve.FRACTIONS, held,
                                               sharp=True, **reading) \
                if compare else (None, None)
            back = whole_curve.turns_back(path, progress) if compare else False
            for b in held:
                row = {"model": model.name, "rule": rule, "seed": s, "pilots": list(pilots),
                       "batch": b, "times_largest_pilot": b // pilots[-1],
                       "measured": answers[b], "refused": refused}
                if plan is not None:
                    p = next(p for p in plan["predictions"] if p["batch"] == b)
                    row.update(bands.score(p["progress_samples"], answers[b]),
                               form=plan["fit"]["progress"]["form"],
                               why=p.get("band_why"))
                if fo is not None:
                    row["floor_out"] = scored(fo, b, answers[b])
                if compare:
                    row["adam"] = banded(adam, b, answers[b], "adam")
                    row["knee"] = banded(knee, b, answers[b], "knee")
                    # --progress-form auto: the knee, or where the metric turns back the
                    # default forms' plan of the target alone (whole_curve.turns_back)
                    row["auto"] = scored(plan if refused is None else refused, b,
                                         answers[b]) if back else row["knee"]
                    row["turns_back"] = back
                rows.append(row)
    return rows, secs, how


def plan_or_refusal(path: str, progress: str, held, **how):
    """The design's log planned progress-only at the held-out batches with the planner's
    options `how`, or the refusal's line."""
    try:
        return pl.plan_logs(path, progress, [], predict=list(held), **how)
    except PilotError as err:
        return str(err)


def floor_out_plan(path: str, progress: str, cond, held, **reading):
    """The design's log planned with the Adam form and --floor-out at the metric's optimum (0
    for a share that falls to its target, 1 for one that rises), or the refusal's line;
    reading: plan_logs' smoothing and eval_items."""
    return plan_or_refusal(path, progress, held, progress_form="adam",
                           floor_out=0.0 if cond.op in ("<=", "<") else 1.0, **reading)


def banded(got, b, true, form: str | None) -> dict:
    """A second plan of a row's log, its progress bands {batch: band} or its refusal's line,
    scored at batch b: {refused: the line} or {refused: None, bands.score at b, form}."""
    if isinstance(got, str):
        return {"refused": got}
    return {"refused": None, **bands.score(got[b], true), "form": form}


def scored(plan, b, true) -> dict:
    """A second plan of a row's log (`plan_or_refusal`: a plan or its refusal's line) scored
    at batch b (`banded`)."""
    if isinstance(plan, str):
        return banded(plan, b, true, None)
    return banded({p["batch"]: p["progress_samples"] for p in plan["predictions"]}, b, true,
                  plan["fit"]["progress"]["form"])


def as_rows(rows, key: str) -> list:
    """The rows as the second plan under `key` scored them (row[key]): each row's design and
    answer with that plan's score, for `summary` and `contrast`."""
    keep = ("model", "rule", "seed", "pilots", "batch", "times_largest_pilot", "measured")
    return [{**{k: r[k] for k in keep}, **r[key]} for r in rows]


def _never_as_miss(rs, sc) -> float | None:
    """The 95% coverage with every planned prediction whose held-out runs never reached the
    target counted too: a miss, unless its band is open above (an infinite clock is inside)."""
    never = [r for r in rs if r["measured"] is None and r.get("refused") is None]
    open_above = sum(r["ci"][1] is None or math.isinf(r["ci"][1]) for r in never)
    n = len(sc) + len(never)
    return (sum(r["covered"] for r in sc) + open_above) / n if n else None


def median_signed(rows, times: int) -> float | None:
    """The median signed error of the scored rows at `times` x the largest pilot (None: none
    scored there)."""
    e = [r["rel_error"] for r in rows
         if r["times_largest_pilot"] == times and r.get("rel_error") is not None]
    return float(np.median(e)) if e else None


def median_ci(rows, times: int, resamples: int = 2000, seed: int = 0,
              signed: bool = False) -> list | None:
    """The 95% percentile bootstrap CI of the median |error| (signed: of the signed error) at
    `times` x the largest pilot over the scored rows, designs (model, rule, seed) resampled
    whole: how far sixteen designs pin the goal's statistic (None: under two designs)."""
    e = [r["rel_error"] if signed else abs(r["rel_error"]) for r in rows
         if r["times_largest_pilot"] == times and r.get("rel_error") is not None]
    if len(e) < 2:
        return None
    draws = np.random.default_rng(seed).choice(np.asarray(e), (resamples, len(e)))
    return [float(x) for x in np.percentile(np.median(draws, axis=1), [2.5, 97.5])]


def summary(rows) -> list:
    """Per model and rule, per model, and in all: predictions scored, refused, the median
    |error| at 2x and 8x, the 95% coverage, the median width factor, the share wider than x2."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    keys = [(m, rule) for m in models for rule in RULES + ("both",)] + [("all", "both")]
    out = []
    for model, rule in keys:
        rs = [r for r in rows if model in ("all", r["model"]) and rule in ("both", r["rule"])]
        sc = [r for r in rs if r.get("rel_error") is not None]
        err = lambda t: [abs(r["rel_error"]) for r in sc if r["times_largest_pilot"] == t]
        med = lambda x: float(np.median(x)) if x else None
        w = [r["width"] for r in sc]
        out.append({"model": model, "rule": rule, "predictions": len(rs), "scored": len(sc),
                    "refused": sum(r["refused"] is not None for r in rs),
                    "unanswered": sum(r["measured"] is None for r in rs),
                    "median_abs_error_2x": med(err(2)), "median_abs_error_8x": med(err(8)),
                    "median_abs_error_2x_ci": median_ci(sc, 2),
                    "median_abs_error_8x_ci": median_ci(sc, 8),
                    "coverage_95": (sum(r["covered"] for r in sc) / len(sc)) if sc else None,
                    # a held-out run that never reached the target: a plan gave it a finite
                    # band, which cannot cover it (docs/plan.md, "A practitioner's sweep")
                    "coverage_95_never_as_miss": _never_as_miss(rs, sc),
                    "median_width": med(w),
                    "wider_than_2x": (sum(x > WIDE for x in w) / len(w)) if w else None})
        out[-1]["goal_missed"] = missed(out[-1])
    return out


def misses(s: dict) -> list:
    """What a summary row misses of the goal (COVER, AT_LEAST, WIDE, report.GOAL), each as
    (criterion, words): criterion "2x" or "8x" (the median |error|), "coverage", "never" (the
    coverage with never-reached predictions as misses), "scored" or "width"."""
    if not s["scored"]:
        return [("scored", f"0 scored < {AT_LEAST}")]
    ci = lambda k: "" if s.get(k + "_ci") is None else \
        f" [95% CI {s[k + '_ci'][0]:.1%}, {s[k + '_ci'][1]:.1%}]"
    bad = [(t, f"|err| {t} {s[k]:.1%}{ci(k)} > {GOAL:.0%}") for t, k in (
        ("2x", "median_abs_error_2x"), ("8x", "median_abs_error_8x"))
        if s[k] is not None and s[k] > GOAL]
    bad += [("coverage", f"coverage {s['coverage_95']:.1%} < {COVER:.0%}")] \
        if s["coverage_95"] < COVER else []
    nev = s["coverage_95_never_as_miss"]
    bad += [("never", f"coverage counting never-reached as misses {nev:.1%} < {COVER:.0%}")] if (
        nev is not None and nev < COVER <= s["coverage_95"]) else []
    bad += [("scored", f"{s['scored']} scored < {AT_LEAST}")] if s["scored"] < AT_LEAST else []
    return bad + ([("width", f"median width x{s['median_width']:.2f} > x{WIDE:g}")]
                  if s["median_width"] > WIDE else [])


def missed(s: dict) -> list:
    """What a summary row misses of the goal, in words (`misses`)."""
    return [words for _, words in misses(s)]


def calibrate(panels, opt, folder: str, keep=None, quiet: bool = False, seeds: int = SEEDS,
              heldout_seeds: int = HELDOUT_SEEDS, progress_form: str | None = None,
              floor_out: bool = False, every: int = EVAL_EVERY, compare: bool = False,
              design_seed: int = 0, smoothing: str | None = None,
              eval_noise: bool = False) -> dict:
    """The practitioner design over panels (model, model config): rows and summary; seeds:
    the designs (per pilot batch), heldout_seeds: behind each answer; progress_form: the
    planner's (None: its default); floor_out: also each log planned with --floor-out, and
    its summary beside the plan's (`floor_out_summary`); every: the pilots' evaluation every
    that many updates (EVAL_EVERY, the design's); compare: also each log planned with the
    Adam form and with its whole curve's knee, their summaries and the paired contrasts with
    the plan's and the Adam form's (out["adam"], out["knee"]);
    design_seed, smoothing, eval_noise: `model_rows`'."""
    rows, sims = [], {}
    for m, cfg in panels:
        got, secs, how = model_rows(m, cfg, opt, folder, keep, quiet, seeds, heldout_seeds,
                                    progress_form, floor_out, every, compare, design_seed,
                                    smoothing, eval_noise)
        from twoclock.studies.plan_check import entry  # noqa: PLC0415
        pilots, held = batches(m)
        sims[m.name] = {"seconds": secs, "pilots": list(pilots), "heldout": list(held),
                        "noise": how, "budget": int(entry(m).budget),
                        "heldout_budgets": heldout_budgets(m)}
        rows += got
    return {"calibration": True, "design": "practitioner", "rules": list(RULES),
            "eval_every_updates": every, "eval_items": EVAL_ITEMS, "seeds": seeds,
            "heldout_seeds": heldout_seeds, "design_seed": design_seed, "smoothing": smoothing,
            "eval_noise": eval_noise,
            "simulations": sims,
            "rows": rows,
            "summary": summary(rows),
            **({} if progress_form is None else {"progress_form": progress_form}),
            **({"floor_out": floor_out_summary(rows)} if floor_out else {}),
            **({"adam": {"summary": summary(as_rows(rows, "adam")),
                         "contrast": contrast(rows, as_rows(rows, "adam"))},
                "knee": {"summary": summary(as_rows(rows, "knee")),
                         "contrast": contrast(as_rows(rows, "adam"), as_rows(rows, "knee"))},
                "auto": {"summary": summary(as_rows(rows, "auto")),
                         "contrast": contrast(as_rows(rows, "knee"), as_rows(rows, "auto")),
                         "turns_back": turned_back(rows)}}
               if compare else {})}


def turned_back(rows) -> dict:
    """{model: {rule: designs whose log turns back (row auto planned with the default forms)}}
    of compared rows."""
    out = {}
    for r in rows:
        if r["times_largest_pilot"] == 8:
            by = out.setdefault(r["model"], {})
            by[r["rule"]] = by.get(r["rule"], 0) + bool(r["turns_back"])
    return out


REFUSALS = {"still moves": "tail still moving", "do not close": "plateaus not closing on the "
             "optimum", "disagree": "plateaus off the floor law", "came back": "a trough past the "
             "target", "both sides": "plateaus on both sides of the optimum", "every batch":
             "every predicted plateau past the target"}


def _refusal(line: str) -> str:
    """A --floor-out refusal's reason, short (REFUSALS), or 'other'."""
    return next((v for k, v in REFUSALS.items() if k in line), "other")


def floor_out_summary(rows) -> list:
    """Per model and rule: the designs whose --floor-out plans were refused and why, the
    predictions scored, their median |error| at 2x and 8x, 95% coverage and median width, and
    at 8x the paired contrast |floor-out error| - |plan's error| over the rows both scored
    (mean, t 95% CI; None under two pairs)."""
    from twoclock.pilot.fit import t_quantile  # noqa: PLC0415
    out = []
    for model in dict.fromkeys(r["model"] for r in rows):
        for rule in RULES:
            rs = [r for r in rows if r["model"] == model and r["rule"] == rule]
            fo = [r["floor_out"] for r in rs]
            designs = {r["seed"]: r["floor_out"]["refused"] for r in rs}
            why = [_refusal(v) for v in designs.values() if v is not None]
            sc = [f for f in fo if f.get("rel_error") is not None]
            err = lambda t: [abs(f["rel_error"]) for r, f in zip(rs, fo)
                             if f.get("rel_error") is not None and r["times_largest_pilot"] == t]
            med = lambda x: float(np.median(x)) if x else None
            d = np.array([abs(f["rel_error"]) - abs(r["rel_error"]) for r, f in zip(rs, fo)
                          if r["times_largest_pilot"] == 8 and f.get("rel_error") is not None
                          and r.get("rel_error") is not None])
            half = (t_quantile(0.975, d.size - 1) * float(d.std(ddof=1)) / math.sqrt(d.size)
                    if d.size >= 2 else None)
            out.append({"model": model, "rule": rule, "designs": len(designs),
                        "refused": len(why), "refused_why": {w: why.count(w) for w in
                                                             dict.fromkeys(why)},
                        "scored": len(sc), "median_abs_error_2x": med(err(2)),
                        "median_abs_error_8x": med(err(8)),
                        "coverage_95": (sum(f["covered"] for f in sc) / len(sc)) if sc else None,
                        "median_width": med([f["width"] for f in sc]),
                        "contrast_8x": None if half is None else {
                            "pairs": int(d.size), "mean": float(d.mean()),
                            "ci": [float(d.mean() - half), float(d.mean() + half)]}})
    return out


def table(out: dict) -> str:
    """The summary table (docs/plan.md), then the models' noise and simulation time."""
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"
    f = lambda v: "-" if v is None else ("inf" if math.isinf(v) else f"x{v:.2f}")
    lines = [f"planner calibration, practitioner design: 1 seed per batch, evaluation on "
             f"{out['eval_items']} items every {out['eval_every_updates']} updates (none at "
             f"step 0), pilots at 3 batches, held out at 2x and 8x; {out['seeds']} designs per "
             f"model and rule; answers: medians of {out['heldout_seeds']} seeds' engine clocks"
             + (f"; progress form {out['progress_form']}" if out.get("progress_form") else "")
             + (f"; read after --smooth {out['smoothing']}" if out.get("smoothing") else "")
             + (f"; planned with --eval-items {out['eval_items']}" if out.get("eval_noise")
                else ""),
             f"{'model':<10} {'rule':<6} {'preds':>5} {'scored':>6} {'refused':>7} "
             f"{'|err| 2x':>9} {'|err| 8x':>9} {'cov 95%':>8} {'med width':>10} {'>x2':>6}"]
    for s in out["summary"]:
        lines.append(f"{s['model']:<10} {s['rule']:<6} {s['predictions']:>5} {s['scored']:>6} "
                     f"{s['refused']:>7} {pct(s['median_abs_error_2x']):>9} "
                     f"{pct(s['median_abs_error_8x']):>9} {pct(s['coverage_95']):>8} "
                     f"{f(s['median_width']):>10} {pct(s['wider_than_2x']):>6}")
    for s in out["summary"]:
        if s["rule"] == "both" and "goal_missed" in s:
            lines.append(f"goal, {s['model']}: " + ("; ".join(s["goal_missed"]) or "met"))
    for s in out["summary"]:
        if s["unanswered"]:
            n = s["unanswered"]
            lines.append(f"{s['model']}, {s['rule']}: {n} prediction{'s' * (n != 1)} at "
                         f"held-out batches whose runs never reached the target; counted as "
                         f"misses, 95% "
                         f"coverage {pct(s['coverage_95_never_as_miss'])}")
    for s in out.get("floor_out", []):
        c = s["contrast_8x"]
        why = ", ".join(f"{n} {w}" for w, n in s["refused_why"].items())
        lines.append(f"{s['model']}, {s['rule']}, --floor-out: {s['refused']} of {s['designs']} "
                     f"designs refused" + (f" ({why})" if why else "") + f", {s['scored']} "
                     f"predictions scored; |err| 2x {pct(s['median_abs_error_2x'])}, "
                     f"8x {pct(s['median_abs_error_8x'])}, 95% coverage {pct(s['coverage_95'])}"
                     f", median width {f(s['median_width'])}" + ("" if c is None else
                     f"; |floor-out error| - |error| at 8x {c['mean']:+.4f} [{c['ci'][0]:+.4f}, "
                     f"{c['ci'][1]:+.4f}] over {c['pairs']} pairs"))
    if "adam" in out:
        lines += ["", forms_table(out["summary"], out["adam"]["summary"],
                                  out.get("knee", {}).get("summary"),
                                  out.get("auto", {}).get("summary"))]
        for key in ("adam", "knee", "auto"):
            lines += [f"goal, {s['model']}, {key}: " + ("; ".join(s["goal_missed"]) or "met")
                      for s in out.get(key, {}).get("summary", ()) if s["rule"] == "both"]
        lines += [contrast_table(out["adam"]["contrast"], "default", "adam")]
        if "knee" in out:
            lines += [contrast_table(out["knee"]["contrast"], "adam", "knee")]
        if "auto" in out:
            lines += [contrast_table(out["auto"]["contrast"], "knee", "auto"),
                      "auto: designs whose metric turns back (planned with the default forms): "
                      + "; ".join(f"{m} {r} {n} of {out['seeds']}"
                                  for m, by in out["auto"]["turns_back"].items()
                                  for r, n in by.items())]
        lines += [""]
    for name, sim in out["simulations"].items():
        hb = "; ".join(f"{r} {v}" for r, v in sim.get("heldout_budgets", {}).items())
        lines.append(f"{name}: pilots {sim['pilots']}, held out {sim['heldout']}; noise "
                     f"{sim['noise']}; simulation {sim['seconds']:.0f} s"
                     + (f"; budget {sim['budget']}, held out {hb} samples" if hb else ""))
    refusals = {}
    for r in out["rows"]:
        if r["refused"]:
            refusals.setdefault((r["model"], r["rule"], r["refused"][:90]), []).append(r["seed"])
    for (m, rule, why), seeds in refusals.items():
        lines.append(f"refused ({m}, {rule}, seeds {sorted(set(seeds))}): {why}")
    return "\n".join(lines)


def forms_table(base: list, adam: list, knee: list | None = None,
                auto: list | None = None) -> str:
    """Two to four summaries of the same designs, the planner's default form, the Adam form,
    the whole curve's knee and --progress-form auto's choice between the knee and the default
    forms, as the markdown table of docs/plan.md ("A practitioner's sweep"): each cell
    "default, adam", "default, adam, knee" or "default, adam, knee, auto"."""
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"
    wid = lambda v: "-" if v is None else ("inf" if math.isinf(v) else f"x{v:.2f}")
    cols = [("abs. error 2x", "median_abs_error_2x", pct), ("8x", "median_abs_error_8x", pct),
            ("95% coverage", "coverage_95", pct),
            ("never reached as misses", "coverage_95_never_as_miss", pct),
            ("median width", "median_width", wid), ("wider than x2", "wider_than_2x", pct)]
    sums = [base, adam] + [x for x in (knee, auto) if x is not None]
    names = ", ".join(("default", "adam", "knee", "auto")[:len(sums)])
    lines = ["| model | rule | scored | " + " | ".join(f"{c}: {names}" for c, *_ in cols)
             + " |", "|---" * (3 + len(cols)) + "|"]
    for row in zip(*sums):
        a = row[0]
        n = ", ".join(f"{r['scored']}" for r in row) if \
            len({r["scored"] for r in row}) > 1 else f"{a['scored']}"
        lines.append(f"| {a['model']} | {a['rule']} | {n} | " + " | ".join(
            ", ".join(fmt(r[k]) for r in row) for _, k, fmt in cols) + " |")
    return "\n".join(lines)


__all__ = ["RULES", "EVAL_EVERY", "EVAL_ITEMS", "batches", "heldout_budget", "heldout_budgets",
           "simulate", "noise", "noisy", "write_design", "truth", "model_rows", "median_signed",
           "median_ci", "summary", "calibrate", "turned_back", "table", "forms_table",
           "plan_or_refusal", "banded", "scored", "as_rows", "contrast", "contrast_table"]
