"""The claims table's contrasts from the slow studies (docs/claims.md, "Contrasts from the slow
studies"): the policy, damage, bandit regimes, clipping and updates-cost studies' committed
per-seed numbers (their runs take 6-40 min on 2 cores: docs/claim_sources/). NumPy only."""
import numpy as np

from twoclock.analysis import clocks, paired
from twoclock.analysis.claims_base import SOURCES, ci_text, load, policy_cell, verdict
from twoclock.clock import reached


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
        rows.append([claim, contrast, ci_text(est, digits), verdict(est["ci"], rule), src])

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
