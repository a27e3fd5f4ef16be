"""Several targets of one metric at once (`--progress "acc>=0.45 acc>=0.5 acc>=0.55"`): each
run's curve gives its crossing at every level, and the levels are fitted jointly with a noise
scale that moves with the target (numpy only; docs/plan.md, "Several targets at once").

Model. Adam's form (pilot/adam.py) at every level l, with its own scale A_l and a noise scale
smooth in the level:

    log N_rl = a_l + 1/2 log(m_r (m_r + B_n(l))) - log lr_r,   log B_n(l) = c0 + c1 (x_l - x_mean)

(m = B / K; McCandlish: the noise scale grows as the gradient shrinks, so B_n moves with the
target, monotone in it by construction; the data say which way through c1's interval). Least
squares in log N over every (run, level): a_l in closed form (each level's mean), (c0, c1) on
a grid; the noise is pooled over the levels (dof = runs x levels - levels - 2). Bands: the
profile-likelihood region over (c0, c1) with SSE <= SSE_min (1 + t^2 / dof), the intercept's
freedom sqrt((threshold - SSE) / n_l), each widened by that target's own plan's form error
(forms.sigma, the single-target plan's leave-one-end-out curvature). Where the plans were made
with --eval-items, the threshold is SSE_min + t^2 max(SSE_min / dof, v), v the clocks' mean
crossing variance (pilot/evalnoise.py), as a single target's band takes it.

The single-target plans are made first, one per condition, as one `--progress` would make
them (their clocks, failure clocks and recommendation unchanged); this module reads their
runs' clocks and adds the joint fit. Runs with an `updates` key in a plan's runs carry K.
"""
import math

import numpy as np

from twoclock.config import scaled_lr
from twoclock.pilot import adam, bands, envelope, fit as pf, forms, predict as pp, report
from twoclock.pilot.conditions import parse_condition
from twoclock.pilot.logs import notes
from twoclock.pilot.plan import PilotError
from twoclock.pilot.result import TARGETS_SCHEMA

_GRID = 161  # grid points per parameter (c0, c1)


def split_targets(text: str) -> list:
    """'acc>=0.45 acc>=0.5' -> the conditions' texts; PilotError (one line) unless they share
    a metric and a direction and their levels differ."""
    items = text.split()
    conds = [parse_condition(t, "--progress") for t in items]
    kinds = {(c.metric, c.op, c.ref) for c in conds}
    if len(kinds) > 1:
        raise PilotError(f"--progress {text!r}: several targets must share one metric and "
                         "direction (e.g. 'acc>=0.45 acc>=0.5')")
    if len({c.threshold for c in conds}) < len(conds):
        raise PilotError(f"--progress {text!r}: a level appears twice")
    return items


def _shape(m, c0, c1, x, s=None):
    """1/2 log(m (m + B_n)) with log B_n = c0 + c1 x, broadcast over the grid's axes; with a
    knee's sharpness s (not None), fit.py's saturation shape in m with a = 1/2 and the
    critical batch SQRT_C B_n, 1/2 log m + 1/(2 s) log(1 + c_s (m / (SQRT_C B_n))^s), c_s =
    1.2^(2 s) - 1: at s = 1 the same curve but for - 1/2 log B_n, a constant of the level that
    its intercept takes."""
    if s is None:
        return 0.5 * np.log(m) + 0.5 * np.logaddexp(np.log(m), c0 + c1 * x)
    c = 1.2 ** (2.0 * s) - 1.0
    z = s * (np.log(m) - math.log(adam.SQRT_C) - (c0 + c1 * x))
    return 0.5 * np.log(m) + 0.5 / s * np.log1p(c * np.exp(z))


class JointFit:
    """The joint fit over levels: data (m, lr, y, level index), the grid and its region; with
    sharp, the knee's sharpness s fitted too, over fit.SHARPNESS (one s for every level: the
    levels repeat the knee's shape, as repeated runs of a batch do for one target)."""

    def __init__(self, m, lr, y, li, x, sharp: bool = False, floor: float = 0.0):
        self.m, self.lr, self.y, self.li = m, lr, y, li
        self.floor = float(floor)  # a per-clock variance the band takes at least (evalnoise)
        self.x = np.asarray(x, np.float64)  # each level's centred value
        self.L, self.n = self.x.size, y.size
        self.n_l = np.bincount(li, minlength=self.L).astype(np.float64)
        sharps = pf.SHARPNESS if sharp and pf.FIT_SHARPNESS else (1.0,)
        self.sharp = len(sharps) > 1  # else the form's own knee (s None in `_shape`)
        self.dof = self.n - self.L - 2 - self.sharp
        if self.dof < 1:
            raise PilotError(f"--progress: {self.n} clocks over {self.L} targets leave no "
                             "degrees of freedom for the joint fit"
                             + (" with the knee's sharpness" if self.sharp else ""))
        lm = np.log(m)
        span = max(float(np.ptp(self.x)), 1e-12)
        self.c0 = np.linspace(lm.min() - 4.0, lm.max() + 8.0, _GRID)
        self.c1 = np.linspace(-12.0 / span, 12.0 / span, _GRID)
        C0, C1 = np.meshgrid(self.c0, self.c1, indexing="ij")
        self.C0 = np.tile(C0.ravel(), len(sharps))
        self.C1 = np.tile(C1.ravel(), len(sharps))
        self.S = np.repeat(np.asarray(sharps, np.float64), C0.size)
        self.onehot = np.eye(self.L)[li]  # [n, L]
        self.icpt, self.sse = self._eval(self.C0, self.C1, self.S)  # [grid, L], [grid]
        i = int(np.argmin(self.sse))
        d0, d1 = self.c0[1] - self.c0[0], self.c1[1] - self.c1[0]
        for _ in range(6):  # zoom on the optimum: the grid's step is ~0.07 in log B_n
            z0, z1 = np.meshgrid(np.linspace(self.C0[i] - 2 * d0, self.C0[i] + 2 * d0, 21),
                                 np.linspace(self.C1[i] - 2 * d1, self.C1[i] + 2 * d1, 21),
                                 indexing="ij")
            zs = np.full(z0.size, self.S[i])
            a, e = self._eval(z0.ravel(), z1.ravel(), zs)
            k = int(np.argmin(e))
            if e[k] < self.sse[i]:  # appended: the region's points and the optimum
                self.C0, self.C1 = np.append(self.C0, z0.ravel()[k]), np.append(self.C1,
                                                                                z1.ravel()[k])
                self.S = np.append(self.S, zs[k])
                self.icpt, self.sse = np.vstack([self.icpt, a[k]]), np.append(self.sse, e[k])
                i = self.sse.size - 1
            d0, d1 = d0 / 5, d1 / 5
        self.best = i

    @property
    def sharpness(self) -> float:
        return float(self.S[self.best])

    def _eval(self, C0, C1, S):
        """(each level's intercept [G, L], SSE [G]) at the grid points (C0, C1, S)."""
        icpt, sse = [], []
        for k in range(0, C0.size, _GRID):  # a row of the grid at a time: bounded memory
            c0, c1 = C0[k:k + _GRID, None], C1[k:k + _GRID, None]
            s = S[k:k + _GRID, None] if self.sharp else None
            r = self.y + np.log(self.lr) - _shape(self.m, c0, c1, self.x[self.li], s)
            a = (r @ self.onehot) / self.n_l  # each level's mean
            icpt.append(a)
            sse.append(np.sum((r - a[:, self.li]) ** 2, axis=1))
        return np.concatenate(icpt), np.concatenate(sse)

    def region(self, level: float):
        thr = pf.region_threshold(self.sse[self.best], self.dof, level, self.floor)
        return self.sse <= thr, thr

    def log_noise_scale(self, l: int) -> float:
        return float(self.C0[self.best] + self.C1[self.best] * self.x[l])

    def log_noise_scale_band(self, l: int, level: float) -> list:
        """[low, high] of log B_n at level l over the profile region; an end is None (open)
        where the region's extreme there lies on the grid's edge in a direction that moves it
        further (c0's edge, or c1's where level l is off the levels' mean)."""
        ok, _ = self.region(level)
        c0, c1, x = self.C0[ok], self.C1[ok], self.x[l]
        v = c0 + c1 * x
        lo, hi, tol = float(v.min()), float(v.max()), 1e-9
        c1_down = (c1 <= self.c1[0]) if x > 0 else (c1 >= self.c1[-1]) if x < 0 else False
        c1_up = (c1 >= self.c1[-1]) if x > 0 else (c1 <= self.c1[0]) if x < 0 else False
        open_lo = np.any((v <= lo + tol) & ((c0 <= self.c0[0]) | c1_down))
        open_hi = np.any((v >= hi - tol) & ((c0 >= self.c0[-1]) | c1_up))
        return [None if open_lo else lo, None if open_hi else hi]

    def slope(self, level: float) -> dict:
        ok, _ = self.region(level)
        lo, hi = self.C1[ok].min(), self.C1[ok].max()
        edge = (lo <= self.c1[0], hi >= self.c1[-1])
        return {"value": float(self.C1[self.best]),
                "ci": [None if edge[0] else float(lo), None if edge[1] else float(hi)]}

    def log_band(self, l: int, m, lr, level: float):
        """(median, lo, hi) of log N at level l for updates of m samples at lr."""
        ok, thr = self.region(level)
        s = _shape(np.asarray(m)[None, :], self.C0[ok][:, None], self.C1[ok][:, None],
                   self.x[l], self.S[ok][:, None] if self.sharp else None)
        pred = self.icpt[ok, l][:, None] + s - np.log(lr)[None, :]
        w = np.sqrt(np.maximum(thr - self.sse[ok], 0.0) / self.n_l[l])[:, None]
        med = (self.icpt[self.best, l] + _shape(np.asarray(m), self.C0[self.best],
                                                 self.C1[self.best], self.x[l],
                                                 self.S[self.best] if self.sharp else None)
               - np.log(lr))
        return med, (pred - w).min(axis=0), (pred + w).max(axis=0)


def crossing_floor(plans: list) -> float:
    """The mean crossing variance in log samples over every (run, level) clock of the plans
    made with --eval-items (logs.eval_noise: each target's root mean variance over its runs,
    pilot/evalnoise.py), weighted by the target's runs; 0 where no plan was."""
    got = [(len(p["runs"]), p["logs"]["eval_noise"]["crossing_sd"]) for p in plans
           if p.get("logs", {}).get("eval_noise")]
    n = sum(k for k, _ in got)
    return sum(k * sd * sd for k, sd in got) / n if n else 0.0


def joint_plan(texts: list, plans: list, predict=None, level: float = 0.95,
               sharp: bool = False) -> dict:
    """The several-target document: each target's own plan and its row of the joint fit;
    sharp: the knee's sharpness fitted jointly too (`JointFit`)."""
    conds = [parse_condition(t, "--progress") for t in texts]
    vals = np.array([c.threshold for c in conds])
    m, lr, y, li = [], [], [], []
    for l, p in enumerate(plans):
        for r in p["runs"]:
            m.append(r["batch"] / r.get("updates", 1.0))
            lr.append(r["lr"])
            y.append(math.log(r["progress_samples"]))
            li.append(l)
    fit = JointFit(np.array(m), np.array(lr), np.array(y), np.array(li), vals - vals.mean(),
                   sharp, crossing_floor(plans))
    rule = plans[0]["fit"]["rule"]
    # the points, (B, K) (pilot/predict.py): those asked, else the pilot batches, B alone at
    # the plans' default K (1 with the Adam form, else the pilots' one K)
    ks = {r.get("updates", 1.0) for p in plans for r in p["runs"]}
    k0 = (1.0 if plans[0]["fit"].get("progress", {}).get("form") == adam.FORM or len(ks) != 1
          else float(ks.pop()))
    points = (pp.resolve(pp.parse(predict), k0) if predict else
              sorted({(float(r["batch"]), k0) for p in plans for r in p["runs"]}))
    batches = [b for b, _ in points]
    B = np.array(batches)
    m_B = B / np.array([k for _, k in points])  # samples per update, m = B / K
    lr_B = scaled_lr(rule["lr0"], B, rule["b0"], rule["p"])
    lo_B, hi_B = min(r["batch"] for p in plans for r in p["runs"]), max(
        r["batch"] for p in plans for r in p["runs"])
    rows = []
    for l, (t, p) in enumerate(zip(texts, plans)):
        med, lo, hi = fit.log_band(l, m_B, lr_B, level)
        band = [{"median": math.exp(a), "ci": [pf.exp_or_none(b), pf.exp_or_none(c)]}
                for a, b, c in zip(med, lo, hi)]
        rate = {"rate": p["fit"]["progress_form_error"]["curvature"]}
        band = forms.widen(band, forms.sigma(rate, B, lo_B, hi_B), level)
        own = {(q["batch"], q.get("updates", 1.0)): q["progress_samples"].get("envelope")
               for q in p.get("predictions", ())}  # each point's own envelope, at its K (a
        # plan given without predictions has none: its joint band is left as fitted)
        band = [_enveloped(x, b, own.get((b, k)), rule["p"]) for x, (b, k) in zip(band, points)]
        bn = math.exp(fit.log_noise_scale(l))
        crit = {"ci": [None if v is None else adam.SQRT_C * math.exp(v)
                       for v in fit.log_noise_scale_band(l, level)]}
        est, pilots = _joint_estimates(fit, l, p, level)
        rows.append({"condition": t, "level": float(vals[l]), "noise_scale": bn,
                     "critical_batch": adam.SQRT_C * bn, "critical_batch_ci": crit["ci"],
                     "predictions": [{"batch": b, "updates": k, "lr": float(x),
                                      "progress_samples": s,
                                      "band_width": bands.width_json(s),
                                      "band_why": bands.why(s, b, t, crit, est, pilots)}
                                     for (b, k), x, s in zip(points, lr_B, band)],
                     "plan": p})
    sl = fit.slope(level)
    lo, hi = sl["ci"]
    reading = ("the noise scale grows with the level" if lo is not None and lo > 0 else
               "the noise scale falls with the level" if hi is not None and hi < 0 else
               "a trend of the noise scale with the level is not established")
    return {"schema": TARGETS_SCHEMA, "targets": rows,
            "joint": {"form": "adam: log B_n linear in the level" + (
                          ", the knee's sharpness fitted" if sharp else ""), "rule": rule,
                      "knee_sharpness": fit.sharpness, "knee_sharpness_fitted": bool(sharp),
                      "log_noise_scale_slope": {**sl, "reading": reading},
                      "dof": fit.dof, "sigma": math.sqrt(fit.sse[fit.best] / fit.dof),
                      "crossing_sd": math.sqrt(fit.floor) if fit.floor else None,
                      "level": level, "clocks": fit.n},
            "source": plans[0]["source"]}


def _joint_estimates(fit: JointFit, l: int, plan: dict, level: float) -> tuple:
    """(the target's per-batch estimates with the joint fit's clock as each pilot batch's
    fitted one, the pilot batches): what `bands.why` reads of a plan, for the joint row."""
    runs = {}
    for r in plan["runs"]:  # a batch's first run gives its lr and K
        runs.setdefault(float(r["batch"]), r)
    got = [e for e in plan.get("estimates", ()) if e["progress"] is not None
           and e["batch"] in runs]
    if not got:
        return [], set(runs)
    b = np.array([e["batch"] for e in got])
    k = np.array([runs[x].get("updates", 1.0) for x in b])
    lr = np.array([runs[x]["lr"] for x in b])
    med = np.exp(fit.log_band(l, b / k, lr, level)[0])
    return [{**e, "progress_fit": float(f)} for e, f in zip(got, med)], set(runs)


def _enveloped(band: dict, b: float, own: dict | None, p: float) -> dict:
    """The joint band at b clipped to the exponent envelope (pilot/envelope.py) anchored where
    the target's own plan anchored it (its largest pilot's clock interval), with the Adam
    form's exponents under lr ~ B^p; unchanged where the own plan has no envelope at b."""
    if own is None or not envelope.ON:
        return band
    lo, hi = envelope.exponents("adam", p)
    env = envelope.ends(b, own["batch_top"], own["anchor"], lo, hi)
    new, set_ = envelope.clip(band, env)
    return {**new, "envelope": {**own, "exponents": [lo, hi], "ci": env, "set": set_}}


def table(out: dict) -> str:
    """The several-target document as printed text: a row per target and predicted batch."""
    j, lvl = out["joint"], round(100 * out["joint"]["level"])
    s = j["log_noise_scale_slope"]
    show = any(pp.shows_k(list(r["predictions"]) + list(r["plan"]["runs"]))
               for r in out["targets"])  # B:K where any K != 1
    ci = ", ".join("unbounded" if v is None else f"{v:.3g}" for v in s["ci"])
    knee = f" {j['knee_sharpness']:.3g}" if j.get("knee_sharpness_fitted") else ""
    w = max([22] + [len(row["condition"]) for row in out["targets"]])  # the target column
    # each target's own plan's notes (what was read, the runs left out, the notes that qualify
    # every band), a line once however many targets share it
    head = [] if "logs" not in out["targets"][0]["plan"] else list(dict.fromkeys(
        ln for row in out["targets"] for ln in notes(row["plan"])))
    lines = head + [
             f"targets: {len(out['targets'])}, fitted jointly ({j['form']}{knee}; {j['clocks']} "
             f"clocks, residual sd {j['sigma']:.3g} in log N, {j['dof']} dof)",
             f"log B_n slope per unit of the level {s['value']:.3g} [{ci}] ({lvl}% CI): "
             f"{s['reading']}", "",
             f"{'target':>{w}} {'B_n':>10} {'batch:K' if show else 'batch':>9}  joint "
             f"[{lvl}% CI]"
             f"{'':18}one target's plan"]
    for row in out["targets"]:
        own = {(p["batch"], p.get("updates", 1.0)): p["progress_samples"]
               for p in row["plan"]["predictions"]}
        for i, p in enumerate(row["predictions"]):
            ps, o = p["progress_samples"], own.get((p["batch"], p.get("updates", 1.0)))
            lead = (f"{row['condition']:>{w}} {row['noise_scale']:>10.4g}" if i == 0 else
                    " " * (w + 11))
            b = pp.label(p["batch"], p.get("updates", 1.0), show)
            lines.append(f"{lead} {b:>9}  {_band(ps):<36}" + ("-" if o is None else _band(o)))
    lines += ["  " + p["band_why"] for row in out["targets"] for p in row["predictions"]
              if p.get("band_why")]
    lines += ["  " + ln for ln in dict.fromkeys(  # each B:K envelope's anchor, once
        ln for row in out["targets"] for ln in report.envelope_note(
            row["predictions"], row["plan"].get("fit", {}).get("progress", {}).get("form")))]
    lines += [f"  left out: {x['why']}" for x in out.get("left_out", ())]
    recs = [row["plan"].get("recommendation") for row in out["targets"]]
    if None in recs:  # plans given without their recommendation (a joint fit alone)
        return "\n".join(lines)
    lines += ["", "recommendation: the joint fit makes none; each target's own plan's (least "
              f"{recs[0]['objective']} to it):"]
    for row, rec in zip(out["targets"], recs):
        c = rec["constant"]
        lines.append(f"  {row['condition']}: " + ("no constant batch is safe" if c is None else
                     f"constant batch {c['batch']:g}, {c['progress_samples']:.4g} samples "
                     f"(from the {c['source']})"))
    return "\n".join(lines)


def _band(b: dict) -> str:
    g = lambda v: "inf" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.4g}"
    return f"{g(b['median'])} [{g(b['ci'][0])}, {g(b['ci'][1])}]"


__all__ = ["split_targets", "JointFit", "joint_plan", "table"]
