"""docs/claims.md (issue 53): every number in it is recomputed here from the committed result
files with an oracle written in this file (NumPy only: its own paired bootstrap, medians,
baselines and slopes; twoclock is called only to render the file, for the staleness check),
each verdict is re-derived from the claim's own words, and the docs' prose quotes the table.
A stale docs/claims.md fails: regenerate it with `python -m twoclock.analysis.claims`."""
import json
import math
import os
import re

import numpy as np
import pytest

from twoclock.analysis import claims

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_BOOT = 2000  # resamples; drawn as rows of default_rng(0).integers(0, S, (N_BOOT, S))
CLOCK = {"N_prog": "progress", "N_fail": "failure", "U_prog": "progress_updates",
         "N_collapse": "collapse"}


def _load(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def _tables():
    """{section heading: [row cells]} of docs/claims.md's tables."""
    with open(os.path.join(ROOT, "docs", "claims.md")) as f:
        text = f.read()
    out = {}
    for sec in re.split(r"^## ", text, flags=re.M)[1:]:
        head, *lines = sec.splitlines()
        rows = [ln for ln in lines if ln.startswith("| ")]
        out[head] = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows[1:]]
    return out


def _seeds(src, clock, b, lr0):
    x = np.asarray(src["per_seed"][clock][src["batches"].index(b)][src["lr0s"].index(lr0)],
                   float)
    return np.where(x > 0, x, np.inf)  # 0: never crossed, later than every crossing


def _ratio(x, y):
    """median(x) / median(y) and its paired percentile 95% CI (inf / inf counted as inf)."""
    idx = np.random.default_rng(0).integers(0, x.size, size=(N_BOOT, x.size))
    with np.errstate(invalid="ignore"):
        boot = np.median(x[idx], -1) / np.median(y[idx], -1)
    boot = np.where(np.isnan(boot), np.inf, boot)
    lo, hi = np.sort(boot)[[int(np.floor(0.025 * (N_BOOT - 1))),
                            int(np.floor(0.975 * (N_BOOT - 1)))]]
    return np.median(x) / np.median(y), lo, hi


def _median_ci(x):
    idx = np.random.default_rng(0).integers(0, x.size, size=(N_BOOT, x.size))
    boot = np.sort(np.median(x[idx], -1))
    return (np.median(x), boot[int(np.floor(0.025 * (N_BOOT - 1)))],
            boot[int(np.floor(0.975 * (N_BOOT - 1)))])


def _rule(claim):
    """The claim's words as a rule on the CI: (lo_ok, hi_ok) bounds of the claimed region."""
    m = re.search(r"within (\d+)%", claim) or re.search(r"within \+-(\d+)%", claim)
    if m:
        w = int(m.group(1)) / 100
        return (1 - w, 1 + w)
    m = re.search(r"at least ([\d.]+)x", claim)
    if m:
        return (float(m.group(1)), math.inf)
    if re.search(r"\b(slows|rises|grows)\b", claim):
        return (1.0, math.inf)
    if re.search(r"\b(fall|earlier)\b", claim):
        return (-math.inf, 1.0)
    raise AssertionError(f"no rule in the words: {claim}")


def _verdict(lo, hi, region):
    a, b = region
    open_side = math.isinf(a) or math.isinf(b)  # "above" / "below": the bound is excluded
    inside = (a < lo and hi < b) if open_side else (a <= lo and hi <= b)
    outside = hi < a or lo > b if not open_side else (hi < a if math.isinf(b) else lo > b)
    return "holds" if inside else "fails" if outside else "not established"


def test_the_table_is_what_the_command_writes_now():
    with open(os.path.join(ROOT, "docs", "claims.md")) as f:
        assert f.read() == claims.render(), "stale: run python -m twoclock.analysis.claims"


def test_every_contrast_recomputes_from_its_committed_source():
    rows = _tables()["Contrasts"]
    assert len(rows) >= 20
    for claim, contrast, estimate, verdict, source in rows:
        src = _load(source)
        m = re.fullmatch(r"(\w+)\((\d+)\) / (\w+)\((\d+)\)", contrast)
        assert m and m.group(1) == m.group(3), contrast
        clock, b, b_ref = CLOCK[m.group(1)], int(m.group(2)), int(m.group(4))
        lr = re.search(r"lr0 ([\d.]+)", claim)
        lr0 = float(lr.group(1)) if lr else src["lr0s"][0]
        if not lr:
            assert len(src["lr0s"]) == 1, claim
        r = _ratio(_seeds(src, clock, b, lr0), _seeds(src, clock, b_ref, lr0))
        assert estimate == "{:.2f} [{:.2f}, {:.2f}]".format(*r), claim
        assert verdict == _verdict(r[1], r[2], _rule(claim)), claim


def _slope(batches, values):
    return np.polyfit(np.log(np.asarray(batches, float)), np.log(np.asarray(values, float)), 1)[0]


def _batch_score(src, clock, key):
    """[theory hits, n, theory's largest miss, baseline hits, baseline's largest miss]."""
    b0 = src["batches"][0]
    t_hits = b_hits = n = 0
    t_miss = b_miss = 0.0
    for i, b in enumerate(src["batches"][1:], 1):
        for j, lr0 in enumerate(src["lr0s"]):
            med, lo, hi = _median_ci(_seeds(src, clock, b, lr0))
            if not np.isfinite(med):
                continue
            seen = np.median(_seeds(src, clock, b0, lr0))
            base = seen * (b / b0) if src["lr_rule"] == "fixed" else seen
            theory = src["theory"][key][i][j]
            n += 1
            t_hits += lo <= theory <= hi
            b_hits += lo <= base <= hi
            t_miss = max(t_miss, abs(theory / med - 1))
            b_miss = max(b_miss, abs(base / med - 1))
    return t_hits, n, t_miss, b_hits, b_miss


def test_every_theory_score_and_its_baseline_recompute():
    rows = _tables()["Theory scores beside the no-theory baseline"]
    batch_rows = [r for r in rows if r[-1].startswith("docs/claim_sources/")
                  and not r[0].startswith(("planner", "policy")) and "critical batch" not in r[0]]
    assert len(batch_rows) == 6
    for name, _, score, theory, base, better, source in batch_rows:
        src = _load(source)
        clock = {"N_prog": "progress", "N_fail": "failure"}[score.split(":")[0]]
        t_hits, n, t_miss, b_hits, b_miss = _batch_score(src, clock, clock + "_samples")
        assert theory == f"{t_hits} of {n}; {100 * t_miss:.1f}%", name
        assert base == f"{b_hits} of {n}; {100 * b_miss:.1f}%", name
        want = ("theory" if t_hits > b_hits else "baseline" if b_hits > t_hits else
                "tie; theory nearer" if round(t_miss, 3) < round(b_miss, 3) else
                "tie; baseline nearer")
        assert better == want, name
    # the policy's pre-registered test, against tests/test_claims.py's own tallies
    from tests import test_claims as policy_oracle
    s = policy_oracle._scores()
    groups = {"lr and group cells": "lrgroup", "second warm-up": "warm", "null clock": "null"}
    kinds = {"clocks within 20%": "clocks", "exponents inside the CI": "exponents"}
    policy_rows = [r for r in rows if r[-1] == "docs/preregistered/policy_measured.json"]
    assert len(policy_rows) == 6
    for _, group, kind, theory, base, better, _src in policy_rows:
        t = s[("theory", groups[group], kinds[kind])]
        b = s[("base", groups[group], kinds[kind])]
        assert [theory, base] == [f"{t[0]} of {t[1]}", f"{b[0]} of {b[1]}"], (group, kind)
        assert better == ("theory" if t[0] > b[0] else "baseline" if b[0] > t[0] else "tie")


@pytest.mark.parametrize("ci, region, want", [
    ((1.01, 2.0), (1.0, math.inf), "holds"), ((1.0, 2.0), (1.0, math.inf), "not established"),
    ((0.5, 0.99), (1.0, math.inf), "fails"), ((0.95, 1.05), (0.95, 1.05), "holds"),
    ((0.94, 1.05), (0.95, 1.05), "not established"), ((1.06, 1.2), (0.95, 1.05), "fails"),
    ((0.5, 0.99), (-math.inf, 1.0), "holds"), ((None, 0.9), (-math.inf, 1.0), "holds"),
    ((1.1, None), (1.0, math.inf), "holds"), ((None, None), (0.75, 1.25), "not established"),
])
def test_verdicts_at_their_boundaries(ci, region, want):
    rule = (("above", region[0]) if math.isinf(region[1]) else
            ("below", region[1]) if math.isinf(region[0]) else ("within", *region))
    assert claims.verdict(list(ci), rule) == want


def _text(doc):
    with open(os.path.join(ROOT, doc)) as f:
        return re.sub(r"\s+", " ", f.read())


def test_the_prose_quotes_the_table():
    rows = {(r[0], r[1]): r[2] for r in _tables()["Contrasts"]}
    get = lambda words, contrast: next(v for (c, k), v in rows.items()  # noqa: E731
                                       if k == contrast and all(w in c for w in words))
    readme, bandit = _text("README.md"), _text("docs/bandit.md")
    q256 = "N_prog(256) / N_prog(8)"
    assert (f"progress slows {get(('lr0 0.01', 'quadratic', 'progress'), q256)}x "
            f"({get(('lr0 0.005', 'quadratic', 'progress'), q256)}x at lr0 = 5e-3)") in readme
    for words, after in ((("lr0 0.01", "sqrt", "rises"), "at lr0 = 1e-2"),
                         (("lr0 0.02", "sqrt", "rises"), "at 2e-2"),
                         (("lr0 0.005", "sqrt", "rises"), "at 5e-3")):
        assert f"{get(words, 'N_fail(256) / N_fail(8)')} {after}" in readme
    b1024 = "N_fail(1024) / N_fail(64)"
    assert f"{b1024} {get(('bandit, sqrt', '1024'), b1024)}" in readme
    for B in (128, 256, 512, 1024):
        assert f"{get(('bandit, sqrt', f'B {B}'), f'N_fail({B}) / N_fail(64)')} at {B}" in bandit
    assert get(("bandit", "progress"), "N_prog(1024) / N_prog(64)") in readme
    for B in (128, 1024):
        assert f"{B} / 64 is {get(('collapse', f'B {B}'), f'N_collapse({B}) / N_collapse(64)')}" \
            in bandit


def test_the_prose_quotes_the_policy_rows():
    """README and docs/policy.md quote the policy study's rows verbatim (issue 53), and every
    sentence quoting the end-token exponent says "not established" exactly when the table does."""
    rows = {r[1]: (r[2], r[3]) for r in _tables()["Contrasts from the slow studies"]
            if r[0].startswith("policy, sqrt rule")}
    gap = rows["N_prog(1024) / N_prog(64)"][0]
    null, kl, ent = (rows[f"batch exponent of N_{c}"] for c in ("null", "kl", "entropy"))
    readme, policy = _text("README.md"), _text("docs/policy.md")
    assert f"N_prog x{gap}," in readme
    assert f"slows {gap} times over 16x in batch" in policy
    assert f"falls {gap} times over 16x in batch" in policy
    assert f"exponents {kl[0]}, {ent[0]};" in readme
    assert f"exponents {kl[0]} and {ent[0]})" in policy
    for clock, (est, _) in (("null", null), ("KL", kl), ("entropy", ent)):
        assert f"| sqrt | {clock} | {est} |" in policy, clock  # the exponents table
    quoted = 0
    for doc in (readme, policy):
        for m in re.finditer(re.escape(null[0]), doc):
            if doc[max(0, m.start() - 2):m.start()] == "| ":
                continue  # the exponents table's cell
            near = doc[max(0, m.start() - 400):m.end() + 400]
            assert ("not established" in near) == (null[1] == "not established"), near
            assert "not flat" not in near or null[1] == "holds", near
            quoted += 1
    assert quoted >= 4  # README twice, the lead, section 2 (and section 5)
    score = next(r for r in _tables()["Theory scores beside the no-theory baseline"]
                 if r[0] == "policy: Adam's per-coordinate noise, the sqrt rule's batch exponents")
    assert f"it lies inside {score[3]} CIs, against {score[4]} for the no-theory baseline 0" \
        in policy
    # the margin's share of clipping's delay, per cell: quoted, and "not established" said
    share = {(re.search(r"B 1024 \((.+?)\)", c).group(1), re.search(r"N_(\w+) / N_prog", c)
              .group(1)): (e, v) for c, k, e, v in (r[:4] for r in
                                                    _tables()["Contrasts from the slow studies"])
             if k.startswith("ln(margin ratio)")}
    cell = share[("the study's cells", "kl")][0], share[("the study's cells", "entropy")][0]
    assert f"that is {cell[0]} for KL and {cell[1]} for entropy (`docs/claims.md`)" in policy
    if ("warmup_seed1", "kl") in share:
        w, x4 = (tuple(share[(v, c)][0] for c in ("kl", "entropy"))
                 for v in ("warmup_seed1", "lr_x4"))
        assert (f"is for KL {w[0]} under the second warm-up and {x4[0]} at 4x the lr, and for "
                f"entropy {w[1]} and {x4[1]} (the study's cell: {cell[0]} and {cell[1]})") in policy
        not_est = [k for k, (_, v) in share.items() if v == "not established"]
        assert not_est == [("warmup_seed1", "entropy")]  # the one exception the prose names
        assert "in every case but entropy under the second warm-up, where that is not " \
               "established" in policy


def test_the_prose_quotes_the_theory_scores_and_baselines():
    rows = {r[0]: r for r in _tables()["Theory scores beside the no-theory baseline"]}
    contrasts = {(r[0], r[1]): r[2] for r in _tables()["Contrasts"]}
    readme = _text("README.md")
    prog, fail = (rows[f"quadratic: {k} (sqrt rule)"] for k in ("mean-field Adam",
                                                                 "Adam's first passage"))
    t_hits, n = re.match(r"(\d+) of (\d+);", fail[3]).groups()
    b_hits, b_miss = re.match(r"(\d+) of \d+; ([\d.]+)%", fail[4]).groups()
    t_miss = re.search(r"; ([\d.]+)%", fail[3]).group(1)
    assert f"({t_hits} of the {n} unseen (B, lr0) cells at all three lr0)" in readme
    assert (f"misses `N_prog` by up to {prog[4].split('; ')[1]} (the theory "
            f"{prog[3].split('; ')[1]}) and puts `N_fail` inside {b_hits} of the {n} CIs (largest "
            f"miss {b_miss}% against the theory's {t_miss}%)") in readme
    assert f"on the failure clock by {t_hits} to {b_hits} of {n}" in readme
    assert prog[5] == fail[5] == "theory"  # "the theory beats it on both clocks"
    fixed = contrasts[("quadratic, fixed lr, lr0 0.01: the failure clock grows (as sqrt(B): "
                       "5.66 over 32x)", "N_fail(256) / N_fail(8)")]
    assert f"x{fixed} over the range, paired" in readme
    upd = {rule: contrasts[(f"quadratic, {rule}, lr0 0.01: updates to target at 2x batch fall",
                            "U_prog(16) / U_prog(8)")] for rule in ("sqrt rule", "fixed lr")}
    assert (f"at 2x batch are {upd['fixed lr']} of those at B = 8, against {upd['sqrt rule']} "
            "under the sqrt rule") in readme


def test_the_planners_score_and_its_baseline_recompute():
    rows = [r for r in _tables()["Theory scores beside the no-theory baseline"]
            if r[0].startswith("planner from logs")]
    assert len(rows) == 3
    for name, _, _, theory, base, better, source in rows:
        d = _load(source)
        top = str(max(int(b) for b in d["pilot_clocks"]))
        hits = {"t": 0, "b": 0}
        miss = {"t": 0.0, "b": 0.0}
        nearer = {"t": 0, "b": 0}
        for h in d["heldout"]:
            pilots = np.array([np.inf if v is None else v
                               for v in d["pilot_clocks"][top][h["clock"]]])
            e = {"t": abs(h["predicted"] - h["answer"]) / h["answer"],
                 "b": abs(np.median(pilots) - h["answer"]) / h["answer"]}
            for k in e:
                hits[k] += e[k] <= 0.15
                miss[k] = max(miss[k], e[k])
            nearer["t"] += e["t"] < e["b"]
            nearer["b"] += e["b"] < e["t"]
        n = len(d["heldout"])
        assert theory == f"{hits['t']} of {n}; {100 * miss['t']:.1f}%; {nearer['t']}", name
        assert base == f"{hits['b']} of {n}; {100 * miss['b']:.1f}%; {nearer['b']}", name
        assert better == ("theory" if hits["t"] > hits["b"] else "baseline" if hits["b"] > hits["t"]
                          else "tie")
    plan = _text("docs/plan.md")
    q, b, p = ([int(v) for v in re.match(r"(\d+) of (\d+)", r[4]).groups()] for r in rows)
    assert (f"pilot's median clock held in samples, the pilots' sqrt rule) is within 15% in "
            f"{q[0]}/{q[1]}, {b[0]}/{b[1]} and {p[0]}/{p[1]}") in " ".join(plan.split())
    nearer = sum(int(r[3].split("; ")[2]) for r in rows)
    assert f"nearer than it at {nearer} of {sum(int(r[3].split(' of ')[1].split(';')[0]) for r in rows)}" \
        in " ".join(plan.split())
    prog = []  # the baseline's misses of the progress clocks
    for r in rows:
        d = _load(r[6])
        top = str(max(int(b) for b in d["pilot_clocks"]))
        for h in d["heldout"]:
            if h["clock"].startswith("progress"):
                prog.append(abs(np.median(d["pilot_clocks"][top][h["clock"]]) / h["answer"] - 1))
    assert f"misses the progress clocks by {100 * min(prog):.1f}%-{100 * max(prog):.1f}%" in plan


def _critical(batches, med):
    """Smallest B with med(B) / med(B_min) >= 1.2, interpolated on log B; None if none."""
    r = med / med[0]
    for j in range(1, len(batches)):
        if r[j] >= 1.2:
            if not np.isfinite(r[j]):
                return float(batches[j])
            f = (1.2 - r[j - 1]) / (r[j] - r[j - 1])
            return math.exp(math.log(batches[j - 1]) + f * math.log(batches[j] / batches[j - 1]))
    return None


def _critical_ci(src, lr0):
    x = np.stack([_seeds(src, "progress", b, lr0) for b in src["batches"]])
    idx = np.random.default_rng(0).integers(0, x.shape[1], size=(N_BOOT, x.shape[1]))
    point = _critical(src["batches"], np.median(x, -1))
    boot = [_critical(src["batches"], np.median(x[:, row], -1)) for row in idx]
    got = [v for v in boot if v is not None]
    lo, hi = np.percentile(got, [2.5, 97.5])
    return point, lo, hi


def test_the_critical_batch_scores_recompute():
    rows = [r for r in _tables()["Theory scores beside the no-theory baseline"]
            if "critical batch" in r[0]]
    assert len(rows) == 2
    for name, cells, _, theory, base, better, source in rows:
        src = _load(source)
        seen = float(re.search(r"seen: lr0 ([\d.]+)", cells).group(1))
        b_seen = _critical_ci(src, seen)[0]
        t = [0, 0, 0.0]
        b = [0, 0, 0.0]
        for j, lr0 in enumerate(src["lr0s"]):
            if lr0 == seen:
                continue
            point, lo, hi = _critical_ci(src, lr0)
            for tally, g in ((t, src["theory_critical_batch"][j]), (b, b_seen)):
                tally[0] += lo <= g <= hi
                tally[1] += 1
                tally[2] = max(tally[2], abs(g / point - 1))
        assert theory == f"{t[0]} of {t[1]}; {100 * t[2]:.1f}%", name
        assert base == f"{b[0]} of {b[1]}; {100 * b[2]:.1f}%", name
        assert better.split(";")[0] == ("theory" if t[0] > b[0] else "baseline" if b[0] > t[0]
                                        else "tie")


def test_theory_md_quotes_the_critical_batches():
    src, t = _load("docs/claim_sources/quadratic_sqrt.json"), _text("docs/theory.md")
    inside = []
    for j, (lr0, tag) in enumerate(zip(src["lr0s"], ("5e-3", "1e-2", "2e-2"))):
        point, lo, hi = _critical_ci(src, lr0)
        pred = src["theory_critical_batch"][j]
        assert f"| {tag} | {point:.1f} [{lo:.1f}, {hi:.1f}] | {pred:.1f} |" in t
        inside.append(lo <= pred <= hi)
    assert all(inside)  # "inside the measured CI at all three lr0"
    row = next(r for r in _tables()["Theory scores beside the no-theory baseline"]
               if r[0] == "quadratic: mean-field critical batch (sqrt rule)")
    assert row[4].startswith("0 of 2")  # "lies inside neither CI"
    assert (f"misses by {row[3].split('; ')[1]} at most, while the no-theory baseline (lr0 1e-2's "
            f"measured critical batch held) lies inside neither CI and misses by up to "
            f"{row[4].split('; ')[1]}") in t


# ------------------------------------------------------------- the slow studies' contrasts

def _boot_ci(fn, *xs, nan_is_inf=False):
    """fn of seed arrays and its paired percentile 95% CI (the rows of default_rng(0)); a
    resample where fn is nan counts as inf (nan_is_inf: beyond every bound) or leaves both
    bounds undefined (None)."""
    S = xs[0].size
    idx = np.random.default_rng(0).integers(0, S, size=(N_BOOT, S))
    with np.errstate(invalid="ignore", divide="ignore"):
        point = fn(*xs)
        boot = np.array([fn(*(x[row] for x in xs)) for row in idx])
    if nan_is_inf:
        boot = np.where(np.isnan(boot), np.inf, boot)
    if np.isnan(boot).any():  # a resample without a value: no bound
        return point, None, None
    srt = np.sort(boot)
    lo, hi = srt[[int(np.floor(0.025 * (N_BOOT - 1))), int(np.floor(0.975 * (N_BOOT - 1)))]]
    f = lambda v: None if not np.isfinite(v) else v  # noqa: E731
    return point, f(lo), f(hi)


def _arr(v):
    x = np.asarray(v, float)
    return np.where(x > 0, x, np.inf)


def _text_ci(point, lo, hi, digits):
    g = lambda v, side: side if v is None else f"{v:.{digits}f}"  # noqa: E731
    return f"{g(point if np.isfinite(point) else None, '>')} [{g(lo, '<')}, {g(hi, '>')}]"


def _exponent(per, clock):
    """Slope of log median N on log B over the batches whose median is finite."""
    bs = [b for b in sorted(per, key=int) if np.isfinite(np.median(_arr(per[b][clock])))]
    logb = np.log([float(b) for b in bs])

    def slope(*xs):
        y = np.log([np.median(x) for x in xs])
        return np.polyfit(logb, y, 1)[0]
    return _boot_ci(slope, *(_arr(per[b][clock]) for b in bs), nan_is_inf=True)


def _share(eps, none, clock, b):
    def f(ce, pe, cn, pn):
        m = np.median
        return np.log((m(ce) / m(pe)) / (m(cn) / m(pn))) / np.log(m(ce) / m(cn))
    return _boot_ci(f, *(_arr(p[b][k]) for p in (eps, none) for k in (clock, "progress")))


def test_the_slow_studies_contrasts_recompute():
    rows = _tables()["Contrasts from the slow studies"]
    seen = 0
    for claim, contrast, estimate, verdict, source in rows:
        src = _load(source)
        if source.endswith(("policy_study.json", "policy_variants.json")):
            if contrast == "N_prog(1024) / N_prog(64)":
                per = src["cells"]["sqrt"]["per_seed"]
                r, digits, region = (_ratio(_arr(per["1024"]["progress"]),
                                            _arr(per["64"]["progress"])), 2, (1.0, math.inf))
            elif contrast.startswith("batch exponent of N_"):
                per = src["cells"]["sqrt"]["per_seed"]
                r, digits, region = _exponent(per, contrast.split("N_")[1]), 3, (0.0, math.inf)
            else:
                clock = re.search(r"N_(\w+) ratio", contrast).group(1)
                what = re.search(r"B 1024 \((.+?)\)", claim).group(1)
                eps, none = (("clip_eps0.2_fixed_size", "clip_none_fixed_size")
                             if what == "the study's cells" else
                             (f"variant_{what}_eps0.2", f"variant_{what}_none"))
                r = _share(src["cells"][eps]["per_seed"], src["cells"][none]["per_seed"],
                           clock, "1024")
                digits, region = 2, (-1.0, 1.0)
        elif "clipping_" in source:
            f = lambda b, c: _arr(next(r["fail_n"] for r in src["runs"]  # noqa: E731
                                       if r["batch"] == b and r["clip"] == c))
            r = _boot_ci(lambda a, b, c, d: (np.median(a) / np.median(b)) /
                         (np.median(c) / np.median(d)), f(1024, 0.2), f(1024, None),
                         f(64, 0.2), f(64, None))
            digits, region = 2, (1.0, math.inf)
        elif source.endswith("updates_cost.json"):
            B, K = map(int, re.search(r"N\((\d+), K (\d+)", contrast).groups())
            lr0 = float(re.search(r"fixed lr ([\d.]+)", claim).group(1))
            cell = lambda clip: next(c for c in src["cells"] if c["lr0"] == lr0  # noqa: E731
                                     and c["clip"] == clip and c["updates"] == K)
            ps = lambda clip, k: _arr(cell(clip)["per_seed"][k])  # noqa: E731
            assert B == K * src["config"]["per_update"]
            if "is what costs" in claim:  # clipped over unclipped, K updates each
                r = _ratio(ps(0.2, "k_updates"), ps(None, "k_updates"))
            else:
                clip = None if "unclipped" in claim else 0.2
                r = _ratio(ps(clip, "k_updates"), ps(clip, "one_update_at_m"))
            digits, region = 2, (1.0, math.inf)
        elif source.endswith("bandit_regimes.json"):
            runs = src["cases"]["emergent drift, unclipped, sqrt rule"]
            b = int(re.search(r"N_fail\((\d+)\)", contrast).group(1))
            g = lambda B: _arr(next(x for x in runs if x["batch"] == B)["per_seed"]["failure"])  # noqa
            r, digits, region = _ratio(g(b), g(64)), 2, (1.0, math.inf)
        else:  # the damage study
            per = src["cells"][re.search(r"(sqrt|fixed) rule", claim).group(1)]["per_seed"]
            bs = sorted(per, key=int)
            if contrast.startswith("slope of log RMS shift"):
                R = re.search(r"at (\d+) responses", claim).group(1)
                logb = np.log([float(b) for b in bs])
                r = _boot_ci(lambda *xs: np.polyfit(logb, np.log(
                    [np.sqrt(np.mean(np.square(x))) for x in xs]), 1)[0],
                    *(np.asarray(per[b][f"shift_at_{R}"], float) for b in bs))
                digits = 3
                region = (0.0, math.inf) if "grows" in claim else (-math.inf, 0.0)
            elif contrast.startswith("damaged share"):
                r = _boot_ci(lambda x, y: np.mean(x > 0) - np.mean(y > 0),
                             np.asarray(per[bs[-1]]["damage"], float),
                             np.asarray(per[bs[0]]["damage"], float))
                digits, region = 3, (-math.inf, 0.0)
            else:
                harm, b, b0 = re.fullmatch(r"drift at (\w+), (\d+) over (\d+)", contrast).groups()
                x, y = (np.asarray(per[k][f"shift_at_{harm}"], float) for k in (b, b0))
                with np.errstate(invalid="ignore"):
                    r = _boot_ci(lambda u, v: np.nanmedian(u) / np.nanmedian(v)
                                 if np.isfinite(u).any() and np.isfinite(v).any() else np.nan,
                                 x, y)
                digits, region = 2, (1.0, math.inf)
        seen += 1
        assert estimate == _text_ci(*r, digits), claim
        lo = -math.inf if r[1] is None else r[1]
        hi = math.inf if r[2] is None else r[2]
        assert verdict == _verdict(lo, hi, region), claim
    assert seen == len(rows) >= 6


def test_adams_exponent_score_and_its_baseline_recompute():
    row = next(r for r in _tables()["Theory scores beside the no-theory baseline"]
               if r[0] == "policy: Adam's per-coordinate noise, the sqrt rule's batch exponents")
    src = _load(row[-1])
    per = src["cells"]["sqrt"]["per_seed"]
    t = b = n = 0
    for clock, v in src["answers"]["2_exponents"]["sqrt"].items():
        _, lo, hi = _exponent(per, clock)
        lo, hi = (-math.inf if lo is None else lo), (math.inf if hi is None else hi)
        n += 1
        t += lo <= v["adam_predicted_same_batches"] <= hi
        b += lo <= 0.0 <= hi
    assert row[3:6] == [f"{t} of {n}", f"{b} of {n}",
                        "theory" if t > b else "baseline" if b > t else "tie"]


def test_the_calibrations_score_and_its_baseline_recompute():
    """The planner's calibration rows: within 15% of the answer, largest miss, nearer of the
    two, and the 95% bands' coverage, counted here from the committed rows (a baseline that
    never crossed misses)."""
    rows = {r[0].split(" (")[0]: r for r in _tables()["Theory scores beside the no-theory baseline"]
            if r[0].startswith("planner's calibration")}
    assert len(rows) == 2
    src = _load("docs/claim_sources/plan_calibration.json")
    for kind in ("progress", "failure"):
        name, _, _, theory, base, better, _ = rows[f"planner's calibration: each {kind} clock's "
                                                     "fitted form"]
        got = [r for r in src["rows"] if r["kind"] == kind and r["answer"] is not None
               and r["predicted"] is not None]
        et = [abs(r["predicted"] - r["answer"]) / r["answer"] for r in got]
        eb = [math.inf if r["baseline"] is None else abs(r["baseline"] - r["answer"]) / r["answer"]
              for r in got]
        n = len(got)
        t_near = sum(a < b for a, b in zip(et, eb))
        b_near = sum(b < a for a, b in zip(et, eb))
        assert theory == (f"{sum(e <= 0.15 for e in et)} of {n}; {100 * max(et):.1f}%; "
                          f"{t_near}"), kind
        assert base == (f"{sum(e <= 0.15 for e in eb)} of {n}; {100 * max(eb):.1f}%; "
                        f"{b_near}"), kind
        cov = sum((r["band"][0] or 0) <= r["answer"] <= (r["band"][1] or math.inf) for r in got)
        assert f"95% bands cover {cov} of {n}" in name
