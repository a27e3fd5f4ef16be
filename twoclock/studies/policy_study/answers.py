"""The policy study's answers, each worked out from the cells' per-seed clocks (as kept in the
JSON) with a paired bootstrap 95% CI over seeds. The JSON keys are numbered as the questions
in docs/policy.md: 1_progress_gap, 2_exponents, 3_clipping, 4_collapse, 5_variants."""
import numpy as np

from twoclock.analysis.clocks import bootstrap_indices, censored, median_ci
from twoclock.analysis.paired import diff_ci, exponent_ci, finite_or_none, ratio_ci, \
    ratio_of_ratios_ci
from twoclock.atomic import one_line
from twoclock.config import require, require_int
from twoclock.models.policy.predict import measured_exponent
from twoclock.studies.policy_study import cliptime
from twoclock.studies.policy_study.cells import CLIPS, CLOCK_KEYS, DRIFT, VARIANTS

# each clock of the exponents and the direction whose noise scale decides it (Adam's
# per-coordinate measurement names its statistics the same)
DIRECTION = {"progress": "acc", "null": "null", "kl": "kl", "entropy": "entropy"}


def progress_gap(cell: dict, b0: str, idx) -> dict:
    """1: N_prog(B) / N_prog(B_min) per batch, and the critical batch, of one rule's cell."""
    per = cell["per_seed"]
    return {"gap_by_batch": {b: ratio_ci(per[b]["progress"], per[b0]["progress"], idx)
                             for b in per if b != b0},
            "critical_batch": cell["critical_batch"][0]}


def exponents(cell: dict, idx, adam_rule: dict | None) -> dict:
    """2: each clock's measured batch exponent against the theory's per batch (its regime and
    noise scale) and, given, Adam's per-coordinate prediction for the rule."""
    per, runs = cell["per_seed"], cell["runs"]
    out = {clock: {"measured": exponent_ci(per, clock, idx),
                   "predicted_by_batch": {str(r["batch"]): r["theory"]["exponent"][clock]
                                          for r in runs},
                   "regime_by_batch": {str(r["batch"]): r["regime"][d] for r in runs},
                   "noise_scale_by_batch": {str(r["batch"]): r["noise_scale"][d] for r in runs}}
           for clock, d in DIRECTION.items()}
    if adam_rule is not None:
        for clock, v in out.items():
            v["adam_predicted"] = adam_rule["exponent"][DIRECTION[clock]]["both"]
            v["adam_predicted_by_batch"] = by_b = adam_rule["clocks"][DIRECTION[clock]]["both"]
            # over the batches the measured slope used, for a like-for-like comparison
            v["adam_predicted_same_batches"] = measured_exponent(
                v["measured"]["batches"], [by_b.get(str(b)) for b in v["measured"]["batches"]])
    return out


def eps_over_none(ps, eps: str, none: str, b0: str, b1: str, idx) -> dict:
    """A clipped cell against its unclipped twin: the delay N_eps / N_none of every clock per
    batch (progress first: a delay of the drift clocks that comes with as much delay of
    progress buys no room), the delay at b1 over that at b0, and the margin N_fail / N_prog's
    ratio eps over none."""
    return {"delay": {b: {k: ratio_ci(ps(eps, b, k), ps(none, b, k), idx)
                          for k in ("progress",) + DRIFT} for b in (b0, b1)},
            "more_at_larger_batch": {k: ratio_of_ratios_ci(
                ps(eps, b1, k), ps(none, b1, k), ps(eps, b0, k), ps(none, b0, k), idx)
                for k in DRIFT},
            "margin_eps_over_none": {b: {k: ratio_of_ratios_ci(
                ps(eps, b, k), ps(eps, b, "progress"), ps(none, b, k), ps(none, b, "progress"),
                idx) for k in DRIFT} for b in (b0, b1)}}


def clipping_at(ps, conv: str, b0: str, b1: str, idx) -> dict:
    """3: the clipping claims of one minibatch convention's cells (M x E = 4 x 2)."""
    n = lambda name: f"clip_{name}_{conv}"
    row = {"median": {name: {b: {k: finite_or_none(np.median(censored(ps(n(name), b, k))))
                                 for k in ("progress",) + DRIFT} for b in (b0, b1)}
                      for name in CLIPS},
           "clip_frac": {name: {b: float(np.median(ps(n(name), b, "clip_frac")))
                                for b in (b0, b1)} for name in CLIPS}}
    # (a) clipping delays each drift clock, and more at the larger batch; the margin
    row.update({f"a_{k}": v for k, v in eps_over_none(ps, n("eps0.2"), n("none"), b0, b1,
                                                      idx).items()})
    # the margin N_fail / N_prog of each cell
    row["margin"] = {name: {b: {k: ratio_ci(ps(n(name), b, k), ps(n(name), b, "progress"), idx)
                                for k in DRIFT} for b in (b0, b1)} for name in CLIPS}
    # (b) the progress gap remains with and without clipping, and the contrast of the two gaps
    row["b_progress_gap"] = {name: ratio_ci(ps(n(name), b1, "progress"),
                                            ps(n(name), b0, "progress"), idx) for name in CLIPS}
    row["b_gap_eps_over_none"] = ratio_of_ratios_ci(
        ps(n("eps0.2"), b1, "progress"), ps(n("eps0.2"), b0, "progress"),
        ps(n("none"), b1, "progress"), ps(n("none"), b0, "progress"), idx)
    # (c) clip-higher learns faster early and fails earlier than eps 0.2
    row["c_early_acc_higher_minus_eps"] = {b: diff_ci(
        ps(n("higher"), b, "early_acc"), ps(n("eps0.2"), b, "early_acc"), idx) for b in (b0, b1)}
    row["c_fail_higher_over_eps"] = {b: {k: ratio_ci(
        ps(n("higher"), b, k), ps(n("eps0.2"), b, k), idx) for k in DRIFT} for b in (b0, b1)}
    return row


def clipping(c: dict, ps, conventions, b0: str, b1: str, idx) -> dict:
    """3: at M = E = 1 (clipping cannot bind: the clocks must be identical), then per
    convention."""
    clip = {}
    if "clip_none_M1E1" in c and "sqrt" in c:  # the sqrt cell is eps 0.2 at M = E = 1
        # the control runs the sqrt cell's first n seeds (its keys are theirs): paired on them
        none = lambda b, k: ps("clip_none_M1E1", b, k)
        n = len(none(b0, "progress"))
        eps = lambda b, k: ps("sqrt", b, k)[:n]
        cidx = idx if idx.shape[1] == n else bootstrap_indices(n)
        clip["M1xE1"] = {"delay": {b: {k: ratio_ci(eps(b, k), none(b, k), cidx)
                                       for k in ("progress",) + DRIFT} for b in (b0, b1)},
                         "seeds": n,
                         "identical_clocks": all(np.array_equal(eps(b, k), none(b, k))
                                                 for b in (b0, b1) for k in CLOCK_KEYS)}
    for conv in conventions:
        if all(f"clip_{name}_{conv}" in c for name in CLIPS):
            clip[conv] = clipping_at(ps, conv, b0, b1, idx)
    return clip


def variants(c: dict, ps, b0: str, b1: str, idx) -> dict:
    """5: per variant (another warm-up, another lr) of the fixed_size clipping cells, the
    delay eps 0.2 / none of every clock per batch, its ratio at b1 over b0, the margin's
    ratio, and the clipped share of tokens."""
    out = {}
    for v in VARIANTS:
        eps, none = f"variant_{v}_eps0.2", f"variant_{v}_none"
        if eps not in c or none not in c:
            continue
        out[v] = {**eps_over_none(ps, eps, none, b0, b1, idx),
                  "clip_frac": {b: float(np.median(ps(eps, b, "clip_frac"))) for b in (b0, b1)}}
    return out


def collapse(c: dict, ps, b0: str, b1: str, idx) -> dict:
    """4: the collapse clock at the unstable lr, with and without clipping, and their
    difference."""
    coll = {}
    for name in ("eps0.2", "none"):
        cell = f"collapse_{name}"
        if cell not in c:
            continue
        coll[name] = {b: {"collapsed_seeds": int((ps(cell, b, "collapse") > 0).sum()),
                          "stayed_down_seeds": int(ps(cell, b, "stayed_down").sum()),
                          "collapse_samples": median_ci(censored(ps(cell, b, "collapse")),
                                                        idx=idx),
                          "final_acc": median_ci(ps(cell, b, "final_acc"), idx=idx),
                          "peak_acc": median_ci(ps(cell, b, "peak_acc"), idx=idx),
                          "clip_frac_median": float(np.median(ps(cell, b, "clip_frac")))}
                      for b in (b0, b1)}
    if len(coll) == 2:
        coll["clip_effect"] = {b: {
            "collapse_delay": ratio_ci(ps("collapse_eps0.2", b, "collapse"),
                                       ps("collapse_none", b, "collapse"), idx),
            "final_acc_clip_minus_none": diff_ci(ps("collapse_eps0.2", b, "final_acc"),
                                                 ps("collapse_none", b, "final_acc"), idx)}
            for b in (b0, b1)}
        # does clipping delay collapse more at the larger batch? the contrast itself
        coll["clip_effect_larger_over_smaller"] = ratio_of_ratios_ci(
            ps("collapse_eps0.2", b1, "collapse"), ps("collapse_none", b1, "collapse"),
            ps("collapse_eps0.2", b0, "collapse"), ps("collapse_none", b0, "collapse"), idx)
    return coll


def answers(st: dict, c: dict, adam: dict | None = None) -> dict:
    """Every answer from the cells' per-seed clocks (st: the study as a dict, as in the JSON)
    and, given, the per-coordinate Adam measurement's predictions."""
    require_int("the study's seeds", st["seeds"], lo=2)
    require(len(st["batches"]) >= 2, "the study's batches", "at least two", st["batches"])
    idx = bootstrap_indices(st["seeds"])
    b0, b1 = str(min(st["batches"])), str(max(st["batches"]))
    ps = lambda cell, b, k: np.asarray(c[cell]["per_seed"][b][k])
    rules = [r for r in ("sqrt", "fixed") if r in c]
    adam_rule = lambda r: adam["rules"][r] if adam is not None and r in adam["rules"] else None
    out = {"1_progress_gap": {r: progress_gap(c[r], b0, idx) for r in rules},
           "2_exponents": {r: exponents(c[r], idx, adam_rule(r)) for r in rules},
           "3_clipping": clipping(c, ps, st["conventions"], b0, b1, idx),
           "4_collapse": collapse(c, ps, b0, b1, idx),
           "5_variants": variants(c, ps, b0, b1, idx)}
    later = cliptime.answers(st, c)  # only where its parts ran: the default JSON keeps its keys
    return {**out, "6_cliptime": later} if later else out


def reanswer(out: dict) -> dict:
    """A study's JSON with its answers worked out again from its per-seed clocks; a ValueError
    in one line for a result that is not a policy study's."""
    require(isinstance(out, dict) and isinstance(out.get("study"), dict)
            and isinstance(out.get("cells"), dict), "the result",
            "a policy study's JSON (with 'study' and 'cells')", type(out).__name__)
    try:
        return {**out, "answers": answers(out["study"], out["cells"], out.get("adam_noise"))}
    except (KeyError, IndexError, TypeError, AttributeError) as e:
        raise ValueError(f"the result must be a policy study's JSON with every cell's per-seed "
                         f"clocks (missing or malformed: {one_line(e)})") from None
    except ValueError as e:  # a bad value the answers' checks name: also as one line
        raise ValueError(f"the result must be a policy study's JSON: {one_line(e)}") from None
