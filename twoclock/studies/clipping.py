"""The clipping study on the bandit: what PPO/GRPO ratio clipping does to the two clocks.

Three claims of the article "大batch反而学得慢？RLVR「双时钟」框架揭示批大小与学习率缩放真相"
("Larger batches learn slower? The RLVR two-clock framework on batch size and learning-rate
scaling"): (a) clipping delays the failure clock, more at the largest batch; (b) without
clipping the progress gap remains; (c) a wider clip buys faster early progress and fails
earlier. The default regime (the bandit's `emergent` preset) is one where clipping binds on the drift: the drift is
emergent (a style reward through the advantage, drift features on train prompts) and each
rollout batch is used for M = 4 minibatches x E = 2 epochs.
"""
import dataclasses
import time

import numpy as np

from twoclock.analysis import results
from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci, summarize
from twoclock.analysis.paired import at_samples, finite_or_none, ratio_ci, ratio_of_ratios_ci
from twoclock.config import (NUMBER_OR_NONE, OptimConfig, SweepConfig, finite, option, param,
                             require, require_int)
from twoclock.engine.sweep import run_sweep
from twoclock.models.bandit import BanditConfig
from twoclock.models.bandit.theory import (clipped_move_per_batch, drift_logratio_per_batch,
                                           drift_move_per_batch, noise_scale, predicted_delay)
from twoclock.studies.protocol import Engine, Study, StudyDefaults, nested

MODELS = ("bandit",)  # the study's model: its theory of the clipped drift is the bandit's
CLIPS = (0.1, 0.2, 0.3, 0.5, None)
REF_CLIP = 0.2  # the clip of claims (a) and (b): GRPO's usual eps
# the grid: batches x one lr0 x seeds, 128 checkpoints per run
SWEEP = SweepConfig(batches=(64, 1024), lr0s=(0.02,), seeds=16, budget=40_000, seed=0,
                    n_ckpt=128)


def defaults(model) -> StudyDefaults:
    """The emergent-drift regime, where clipping binds (the bandit's `emergent` preset)."""
    return StudyDefaults(model=model.presets["emergent"])


@dataclasses.dataclass(frozen=True)
class Config:
    """The study's own parameters (the model's are a BanditConfig, the optimizer's OptimConfig)."""
    SCRIPT = "clipping.py"
    DEFAULTS = staticmethod(defaults)
    SKIP_MODEL = ("clip_low", "clip_high")  # each clip sets them
    clips: tuple = option(CLIPS, "symmetric clip eps values and 'none', the unclipped "
                                 "reference every claim compares with (give it too)",
                          type=NUMBER_OR_NONE, nargs="+")
    regime_map: bool = param(False, "instead: the delay over (batch, eps) and (lr0, eps), "
                                    "batches 64, 256, 1024 x lr0 0.01, 0.02, 0.04 x the clips "
                                    "(writes clipping_regime_map)")
    early_samples: int = param(4096, "responses after which early held-out accuracy is read")
    sweep: SweepConfig = nested(SWEEP, "study", rename={"lr0s": "lr0"}, skip=("n_ckpt",),
                                scalar=("lr0s",), help={
                                    "batches": "batches in responses; the claims use the "
                                               "smallest and the largest",
                                    "lr0s": "base learning rate at --b0",
                                    "seeds": "seeds per (batch, clip)", "seed": "the first seed",
                                    "budget": "responses per run"})

    def __post_init__(self):
        require_int("early_samples", self.early_samples)

    def check(self, model, base: BanditConfig, opt=None) -> None:
        """ValueError naming the parameter, before anything runs (the sweep's own values are
        checked by SweepConfig)."""
        del model, opt
        batches, budget = self.sweep.batches, self.sweep.budget
        for b in batches:
            base.prompts(b)
        require(len(batches) >= 2, "batches", "at least two distinct values", batches)
        eps = [c for c in self.clips if c is not None]
        require(None in self.clips and eps, "clips",
                "one or more eps values and 'none' (the unclipped reference)", self.clips)
        require(len(set(self.clips)) == len(self.clips), "clips", "distinct values",
                self.clips)
        require(all(finite(c) and c > 0 for c in eps), "clips",
                "eps values > 0 (and 'none')", self.clips)
        for c in self.clips:  # each eps through the config's own check
            dataclasses.replace(base, clip_low=c, clip_high=None)
        require(min(batches) <= self.early_samples <= budget, "early_samples",
                f"in [{min(batches)}, budget = {budget}]", self.early_samples)

    def as_dict(self) -> dict:
        """The study's fields as its JSON's config has them, flat (the choice of output
        aside)."""
        s = self.sweep
        return {"batches": s.batches, "clips": self.clips, "lr0": s.lr0s[0], "seeds": s.seeds,
                "seed": s.seed, "budget": s.budget, "early_samples": self.early_samples}

    def output_name(self, model, given) -> str:
        del model, given
        return "clipping_regime_map" if self.regime_map else "clipping"


def early_accuracy(ckpt_b: dict, n_early: int, j: int = 0) -> np.ndarray:
    """[S] held-out accuracy at the first checkpoint with samples >= n_early (lr0 index j)."""
    return at_samples(ckpt_b, "heldout_acc", n_early, j)


def delay_ci(with_S, without_S, idx) -> dict:
    """Median N_fail(clip) / median N_fail(none) with a paired bootstrap CI over seeds (a
    resample with both medians censored leaves its bound undefined)."""
    return ratio_ci(with_S, without_S, idx, undefined=np.nan)


def delay_contrast(hi_with, hi_without, lo_with, lo_without, idx) -> dict:
    """The delay at one batch over the delay at another, [N_fail(clip) / N_fail(none)](hi) /
    [...](lo), with a bootstrap CI that resamples the seeds of all four arrays together."""
    return ratio_of_ratios_ci(hi_with, hi_without, lo_with, lo_without, idx, undefined=np.nan)


def sweep_clips(model, base, opt, sweep: SweepConfig, clips, quiet=True, keep=None) -> dict:
    """{clip: SweepResult} of the sweep (its batches sorted) for each clip (None: unclipped)."""
    sweep = dataclasses.replace(sweep, batches=tuple(sorted(sweep.batches)))
    return {c: run_sweep(model, dataclasses.replace(base, clip_low=c, clip_high=None),
                         opt, sweep, quiet=quiet, keep=keep) for c in clips}


def run(model, base: BanditConfig, opt: OptimConfig, study: Config, *, keep=None,
        quiet: bool = True, engine: Engine = Engine()) -> dict:
    """Every (batch, clip) entry, the claims, and the theory of the drift's move per batch (or,
    with study.regime_map, the regime map)."""
    del engine  # (no store)
    study.check(model, base)
    if study.regime_map:
        return regime_map(model, base, opt, clips=[c for c in study.clips if c is not None],
                          seeds=study.sweep.seeds, seed=study.sweep.seed,
                          budget=study.sweep.budget, quiet=quiet, keep=keep)
    t0 = time.perf_counter()
    batches = tuple(sorted(study.sweep.batches))
    res = sweep_clips(model, base, opt, study.sweep, study.clips, quiet, keep)
    idx = bootstrap_indices(study.sweep.seeds)
    runs = []
    for c, r in res.items():
        at_c = dataclasses.replace(base, clip_low=c, clip_high=None)  # the theory's config
        for i, B in enumerate(batches):
            ck = {k: v[0] for k, v in r.ckpt[i].items()}  # [S, C]
            lr = float(r.lrs_BxL[i, 0])
            runs.append({
                "batch": int(B), "clip": c, "lr": lr, **model.describe_batch(base, B),
                "progress_samples": summarize(r.prog_n[i, 0], idx=idx),
                "failure_samples": summarize(r.fail_n[i, 0], idx=idx),
                "collapse_samples": summarize(r.extra["collapse_n"][i, 0], idx=idx),
                "early_accuracy": median_ci(early_accuracy(r.ckpt[i], study.early_samples),
                                            idx=idx),
                "peak_accuracy": median_ci(np.max(ck["heldout_acc"], axis=-1), idx=idx),
                **{k: float(np.mean(ck[k])) for k in (
                    "clip_frac", "clip_frac_active", "outside_frac", "move_drift",
                    "move_skill", "logratio_drift", "logratio_skill")},
                "noise_scale_drift": finite_or_none(noise_scale(ck["noise_drift"], ck["signal_drift"])),
                "theory": {"move_drift": clipped_move_per_batch(at_c, opt, lr),
                           "move_drift_unclipped": drift_move_per_batch(base, opt, lr),
                           "logratio_drift": drift_logratio_per_batch(base, opt, lr),
                           "delay": predicted_delay(at_c, opt, lr)},
                "fail_n": r.fail_n[i, 0].tolist(),
            })
    out = {"schema": results.SCHEMA, "model": model.name, "unit": model.unit, "runs": runs,
           "config": {"model": dataclasses.asdict(base), "optimizer": dataclasses.asdict(opt),
                      **study.as_dict()},
           "versions": results.versions()}
    out["config"]["clips"] = list(study.clips)
    out["claims"] = claims(runs, batches, idx)
    out["seconds"] = time.perf_counter() - t0
    return out


def claims(runs, batches, idx) -> dict:
    """(a) the delay N_fail(0.2) / N_fail(none) at every batch, and the delay at the largest
    batch over the delay at the smallest (> 1: more delay at the larger batch), (b) the
    progress gap N_prog(B_max) / N_prog(B_min) without (and with) clipping, (c) early accuracy
    and N_fail against eps at the largest batch; plus the unclipped collapse clock's reach."""
    get = {(r["batch"], r["clip"]): r for r in runs}
    eps = sorted(c for c in {r["clip"] for r in runs} if c is not None)
    ref = REF_CLIP if REF_CLIP in eps else eps[len(eps) // 2]
    b_lo, b_hi = min(batches), max(batches)
    prog = lambda b, c: get[(b, c)]["progress_samples"]["median"]
    gap = lambda c: None if None in (prog(b_hi, c), prog(b_lo, c)) else prog(b_hi, c) / prog(
        b_lo, c)
    return {
        "a_failure_delay": {str(b): {"clip": ref, **delay_ci(get[(b, ref)]["fail_n"],
                                                              get[(b, None)]["fail_n"], idx)}
                            for b in sorted(batches)},
        "a_more_at_larger_batch": delay_contrast(
            get[(b_hi, ref)]["fail_n"], get[(b_hi, None)]["fail_n"],
            get[(b_lo, ref)]["fail_n"], get[(b_lo, None)]["fail_n"], idx),
        "b_progress_gap": {"clip": ref, "none": gap(None), "with": gap(ref)},
        "c_wider_clipping": [{"clip": c, "early_accuracy": get[(b_hi, c)]["early_accuracy"],
                              "failure": get[(b_hi, c)]["failure_samples"]}
                             for c in eps + [None]],
        # one eps value: no narrower and wider to compare (None)
        "c_earlier_failure": None if len(eps) < 2 else {
            "narrowest": eps[0], "widest": eps[-1], **delay_ci(
                get[(b_hi, eps[-1])]["fail_n"], get[(b_hi, eps[0])]["fail_n"], idx)},
        "collapse_unclipped": {str(b): {k: get[(b, None)]["collapse_samples"][k]
                                        for k in ("reached", "seeds", "median")}
                               for b in batches},
    }


def _fmt(s) -> str:
    if s["median"] is None:
        return f">budget ({s['reached']}/{s['seeds']})"
    lo, hi = s["ci"]
    return f"{s['median']:.0f} [{lo:.0f}, {'>' if hi is None else f'{hi:.0f}'}]"


def _ratio(d) -> str:
    if d["median"] is None:
        return "n/a (censored)"
    lo, hi = d["ci"]
    return f"{d['median']:.2f} [{'n/a' if lo is None else f'{lo:.2f}'}, " \
           f"{'>' if hi is None else f'{hi:.2f}'}]"


def report(out: dict) -> str:
    """The claims' report, or the regime map's (a result with no runs)."""
    if "runs" not in out:
        return regime_report(out)
    return f"{claims_report(out)}\n\n{len(out['runs']) * out['config']['seeds']} runs in " \
           f"{out['seconds']:.1f} s"


def figure(out: dict):
    """The claims' figure, or the regime map's."""
    from twoclock.figures.clipping import claims_figure, regime_map_figure
    return claims_figure(out) if "runs" in out else regime_map_figure(out)


def claims_report(out: dict) -> str:
    """The table of every (batch, clip) entry and the three claims, as printed."""
    cfg = out["config"]
    m = cfg["model"]
    lines = [f"clipping on the bandit, {m['drift_source']} drift (M = {m['minibatches']}, "
             f"E = {m['epochs']}, lr0 {cfg['lr0']} at b0 {cfg['optimizer']['b0']}, "
             f"{cfg['optimizer']['lr_rule']} rule, {cfg['seeds']} seeds); clocks in responses, "
             f"median [95% CI]; early acc = held-out accuracy after {cfg['early_samples']}",
             f"{'batch':>5} {'clip':>5} | {'N_prog':>20} | {'N_fail':>20} | {'collapse':>20} | "
             f"{'early acc':>19} | clip% all/active | move_d pred/meas"]
    lines.append("-" * len(lines[-1]))
    for r in out["runs"]:
        ea = r["early_accuracy"]
        lines.append(
            f"{r['batch']:>5} {'none' if r['clip'] is None else r['clip']:>5} | "
            f"{_fmt(r['progress_samples']):>20} | {_fmt(r['failure_samples']):>20} | "
            f"{_fmt(r['collapse_samples']):>20} | "
            f"{ea['median']:.3f} [{ea['ci'][0]:.3f}, {ea['ci'][1]:.3f}] | "
            f"{100 * r['clip_frac']:5.1f} / {100 * r['clip_frac_active']:5.1f} | "
            f"{r['theory']['move_drift']:.3f} / {r['move_drift']:.3f}")
    c = out["claims"]
    lines.append("")
    pred = {(r["batch"], r["clip"]): r["theory"]["delay"] for r in out["runs"]}
    for b, d in c["a_failure_delay"].items():
        lines.append(f"(a) B = {b}: N_fail(eps {d['clip']}) / N_fail(none) = {_ratio(d)} "
                     f"(cap theory {pred[(int(b), d['clip'])]:.2f})")
    if "a_more_at_larger_batch" in c:
        b_lo, b_hi = min(cfg["batches"]), max(cfg["batches"])
        lines.append(f"(a) delay at B = {b_hi} / delay at B = {b_lo} = "
                     f"{_ratio(c['a_more_at_larger_batch'])} (> 1: more delay at the larger batch)")
    g = c["b_progress_gap"]
    f2 = lambda v: "n/a" if v is None else f"{v:.2f}"
    lines.append(f"(b) N_prog(B_max) / N_prog(B_min): unclipped {f2(g['none'])}, "
                 f"eps {g['clip']}: {f2(g['with'])}")
    e = c["c_earlier_failure"]
    med = lambda s: ">budget" if s["median"] is None else f"{s['median']:.0f}"
    lines.append(f"(c) B = {max(cfg['batches'])}: " + ", ".join(
        f"eps {'none' if r['clip'] is None else r['clip']}: acc "
        f"{r['early_accuracy']['median']:.3f} fail {med(r['failure'])}"
        for r in c["c_wider_clipping"]))
    if e is not None:
        lines.append(f"    N_fail(eps {e['widest']}) / N_fail(eps {e['narrowest']}) = "
                     f"{_ratio(e)}")
    lines.append("collapse clock, unclipped: " + ", ".join(
        f"B = {b}: {d['reached']}/{d['seeds']} seeds" for b, d in c["collapse_unclipped"].items()))
    return "\n".join(lines)


def regime_map(model, base: BanditConfig, opt: OptimConfig, batches=(64, 256, 1024),
               lr0s=(0.01, 0.02, 0.04), clips=(0.1, 0.2, 0.5), seeds: int = 8, seed: int = 0,
               budget: int = 40_000, quiet: bool = True, keep=None) -> dict:
    """The clipping regime map: the delay N_fail(eps) / N_fail(none) (medians over seeds) on
    the grid batch x lr0 x eps, and the predicted boundary eps*(lr(B)) =
    drift_logratio_per_batch, above which (eps > eps*) clipping should not bind."""
    t0 = time.perf_counter()
    sweep = SweepConfig(batches=tuple(batches), lr0s=tuple(lr0s), seeds=seeds, budget=budget,
                        seed=seed, n_ckpt=128)
    res = sweep_clips(model, base, opt, sweep, tuple(clips) + (None,), quiet, keep)
    free = np.median(censored(res[None].fail_n), axis=-1)  # [B, L]
    with np.errstate(invalid="ignore"):
        delay = {str(c): (np.median(censored(res[c].fail_n), axis=-1) / free) for c in clips}
    lr_BxL = np.array(opt.lr_grid(sorted(batches), lr0s))
    eps_star = np.vectorize(lambda lr: drift_logratio_per_batch(base, opt, float(lr)))(lr_BxL)
    f = lambda a: [[None if not np.isfinite(v) else float(v) for v in row] for row in a]
    return {"batches": sorted(int(b) for b in batches), "lr0s": [float(l) for l in lr0s],
            "clips": [float(c) for c in clips], "seeds": seeds, "budget": budget,
            "delay": {c: f(d) for c, d in delay.items()}, "eps_star": f(eps_star),
            "failure_unclipped": f(free), "model": dataclasses.asdict(base),
            "optimizer": dataclasses.asdict(opt), "unit": model.unit,
            "seconds": time.perf_counter() - t0}


def regime_report(m: dict) -> str:
    """The regime map as text: one block per eps, rows batch, columns lr0; * = binds (eps <
    eps*, predicted)."""
    lines = [f"delay N_fail(eps) / N_fail(none), medians over {m['seeds']} seeds; "
             f"* where clipping is predicted to bind (eps < eps*)"]
    for c in m["clips"]:
        lines.append(f"eps {c:g}: " + " " * 3 + "".join(f"{'lr0 ' + format(l, 'g'):>12}"
                                                     for l in m["lr0s"]))
        for i, b in enumerate(m["batches"]):
            cells = []
            for j in range(len(m["lr0s"])):
                v, star = m["delay"][str(c)][i][j], m["eps_star"][i][j]
                cells.append(f"{'>budget' if v is None else format(v, '.2f')}"
                             f"{'*' if c < star else ' '} (eps* {star:.2f})")
            lines.append(f"  B = {b:>5}: " + "  ".join(cells))
    lines.append(f"{m['seconds']:.0f} s")
    return "\n".join(lines)


STUDY = Study("clipping", Config, run, report, figure, models=MODELS)
