"""The docs' claims match their evidence (issue 53): each number README.md and docs/policy.md
state about the pre-registered test and the 512-seed drift check is recomputed here, with NumPy
only, from the committed JSON under docs/preregistered/, and each contrast the docs derive from
their own tables is recomputed from those tables. The oracle never calls twoclock: the baseline
(the seen cell's clocks times the lr0 ratio), the calibration and the exponents' slopes are
written out again below."""
import json
import math
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREREG = os.path.join(ROOT, "docs", "preregistered")
CLOCKS = ("progress", "null", "kl", "entropy")
WITHIN = 0.2  # the pre-registered goal: measured / predicted within 1 +- this


def _text(doc: str) -> str:
    """The doc with its line breaks and runs of spaces as one space (claims wrap over lines)."""
    with open(os.path.join(ROOT, doc)) as f:
        return re.sub(r"\s+", " ", f.read())


def _json(name: str) -> dict:
    with open(os.path.join(PREREG, name)) as f:
        return json.load(f)


def _after(text: str, phrase: str, pattern: str, span: int = 400):
    """The first match of `pattern` within `span` characters after the one place `phrase` is."""
    assert text.count(phrase) == 1, (phrase, text.count(phrase))
    i = text.index(phrase) + len(phrase)
    m = re.search(pattern, text[i:i + span])
    assert m, (phrase, pattern)
    return m


# --- the pre-registered test: theory against the no-theory baseline --------------------------

def _slope(batches, values) -> float:
    """Least-squares d log N / d log B."""
    return float(np.polyfit(np.log(np.asarray(batches, float)),
                            np.log(np.asarray(values, float)), 1)[0])


def _scores() -> dict:
    """{(predictor, group, 'clocks' | 'exponents'): [hits, total]}, predictor 'theory'
    (calibrated), 'raw' or 'base', group 'lrgroup' (progress, KL, entropy of the lr and group
    cells), 'warm' (the same of the second warm-up) or 'null' (every cell's null clock), or
    the cell's name (all four clocks of that cell)."""
    pred, meas = _json("policy_predictions.json"), _json("policy_measured.json")
    seen, seen_raw = pred["seen"]["measured_median"], pred["seen"]["raw"]
    lr_seen = pred["design"]["lr0"]
    out = {}

    def tally(key, hit):
        for k in (key, (key[0], cell, key[2])):  # by group, and by cell
            t = out.setdefault(k, [0, 0])
            t[0], t[1] = t[0] + bool(hit), t[1] + 1

    for cell, cv in pred["cells"].items():
        lr_ratio = lr_seen / cv["lr0"]
        for c in CLOCKS:
            group = "null" if c == "null" else ("warm" if cell == "warmup_seed1" else "lrgroup")
            raw = cv["clocks"][c]["raw"]
            guess = {"raw": raw,
                     "theory": {b: raw[b] * seen[c][b] / seen_raw[c][b] for b in raw},
                     "base": {b: seen[c][b] * lr_ratio for b in raw}}
            for b, per in meas["cells"][cell]["per_seed"].items():
                x = np.asarray(per[c], float)
                med = np.median(np.where(x > 0, x, np.inf))  # 0: never reached
                if np.isfinite(med):
                    for k, g in guess.items():
                        tally((k, group, "clocks"), abs(med / g[b] - 1) <= WITHIN)
            e = meas["comparison"]["cells"][cell][c]["exponent"]
            if e["median"] is None:
                continue
            lo = -math.inf if e["ci"][0] is None else e["ci"][0]
            hi = math.inf if e["ci"][1] is None else e["ci"][1]
            for k, g in guess.items():
                tally((k, group, "exponents"),
                      lo <= _slope(e["batches"], [g[str(b)] for b in e["batches"]]) <= hi)
    return out


def _sum(scores, predictor, kind, groups=("lrgroup", "warm", "null")):
    return [sum(scores[(predictor, g, kind)][i] for g in groups) for i in (0, 1)]


def _of(m) -> list:
    return [int(m.group(1)), int(m.group(2))]


def test_the_oracle_reproduces_the_stored_goals():
    # the stored tallies (the study's own code) and this file's recomputation agree
    goals = _json("policy_measured.json")["comparison"]["goals"]
    s = _scores()
    assert _sum(s, "theory", "clocks") == goals["calibrated_clocks_within"]
    assert _sum(s, "theory", "exponents") == goals["calibrated_exponents_inside_ci"]
    assert _sum(s, "raw", "clocks") == goals["raw_clocks_within"]
    assert _sum(s, "raw", "exponents") == goals["raw_exponents_inside_ci"]


def test_the_baseline_scores_the_docs_state():
    s, t = _scores(), _text("docs/policy.md")
    of = r"(\d+) of (\d+)"
    # the lead: exponents 16 of 18 against the baseline's 9 of 18
    lead = "The theory beats the baseline in the exponents:"
    assert _of(_after(t, lead, of)) == _sum(s, "theory", "exponents")
    assert _of(_after(t, lead, r"against the baseline's " + of)) == _sum(s, "base", "exponents")
    # 33 of 33 each: the theory and the baseline alike across the lr and group cells
    m = _after(t, "both put every progress, KL and entropy clock within 20% (", of + " each")
    assert _of(m) == s[("theory", "lrgroup", "clocks")] == s[("base", "lrgroup", "clocks")]
    m = _after(t, "under a second warm-up the baseline gets ", of + r" and the theory " + of)
    assert [int(m.group(1)), int(m.group(2))] == s[("base", "warm", "clocks")]
    assert [int(m.group(3)), int(m.group(4))] == s[("theory", "warm", "clocks")]
    m = _after(t, "The pre-registered goal, every clock within 20%, failed (",
               of + r"; baseline " + of)
    assert [int(m.group(1)), int(m.group(2))] == _sum(s, "theory", "clocks")
    assert [int(m.group(3)), int(m.group(4))] == _sum(s, "base", "clocks")
    # item 1: 10 of 11 exponents against the baseline's 5 of 11
    m = _after(t, "Where the theory beats the baseline is the exponents: ",
               r"(\d+) of these (\d+) inside the measured CI, against the baseline's " + of)
    assert [int(m.group(1)), int(m.group(2))] == s[("theory", "lrgroup", "exponents")]
    assert [int(m.group(3)), int(m.group(4))] == s[("base", "lrgroup", "exponents")]
    # item 2: raw exponents 13 of 18 (baseline 9 of 18), raw clocks 0 of 42 (baseline 42 of 42)
    m = _after(t, "Its exponents lie inside ", of + r" CIs \(baseline " + of)
    assert [int(m.group(1)), int(m.group(2))] == _sum(s, "raw", "exponents")
    assert [int(m.group(3)), int(m.group(4))] == _sum(s, "base", "exponents")
    m = _after(t, "none of its ", r"(\d+) reached progress, KL or entropy clocks is within 20% of "
               r"the measurement \(baseline " + of)
    raw42 = _sum(s, "raw", "clocks", ("lrgroup", "warm"))
    assert raw42[0] == 0 and int(m.group(1)) == raw42[1]
    assert [int(m.group(2)), int(m.group(3))] == _sum(s, "base", "clocks", ("lrgroup", "warm"))
    # item 3: the second warm-up's exponents 4 of 4 (baseline 2 of 4), clocks 0 of 9 / 9
    m = _after(t, "so its exponents still lie inside their CIs (", of + r"; baseline " + of)
    assert [int(m.group(1)), int(m.group(2))] == s[("theory", "warmup_seed1", "exponents")]
    assert [int(m.group(3)), int(m.group(4))] == s[("base", "warmup_seed1", "exponents")]
    m = _after(t, "puts all ", r"(\d+) progress, KL and entropy clocks within 20% \(the theory "
               + of)
    assert [int(m.group(1))] * 2 == s[("base", "warm", "clocks")]  # "all N": N of N
    assert [int(m.group(2)), int(m.group(3))] == s[("theory", "warm", "clocks")]
    # the summary: the baseline 9 of 18 and 45 of 54 (33 of 33, 9 of 9, 3 of 12)
    m = _after(t, "The no-theory baseline: ", r"(\d+) of (\d+) and (\d+) of (\d+) \(" + of +
               ", " + of + ", " + of + r"\)")
    got = [int(g) for g in m.groups()]
    want = (_sum(s, "base", "exponents") + _sum(s, "base", "clocks") +
            s[("base", "lrgroup", "clocks")] + s[("base", "warm", "clocks")] +
            s[("base", "null", "clocks")])
    assert got == want
    m = _after(t, "3 of 12 calibrated null clocks are within 20% (baseline ", of)
    assert _of(m) == s[("base", "null", "clocks")]


def test_at_a_new_lr0_the_calibrated_clock_is_the_baseline():
    pred, t = _json("policy_predictions.json"), _text("docs/policy.md")
    seen, seen_raw = pred["seen"]["measured_median"], pred["seen"]["raw"]
    lr_seen = pred["design"]["lr0"]
    ratios = []
    for cell in ("lr_half", "lr_double"):
        cv = pred["cells"][cell]
        for c in ("progress", "kl", "entropy"):
            for b, raw in cv["clocks"][c]["raw"].items():
                cal = raw * seen[c][b] / seen_raw[c][b]
                ratios.append(cal / (seen[c][b] * lr_seen / cv["lr0"]))
    assert max(abs(r - 1) for r in ratios) <= 0.10  # "within 10%"
    assert max(abs(r - 1) for r in ratios) > 0.05  # and not within 5%: the doc's bound is tight
    cv = pred["cells"]["lr_half"]
    p64 = ("progress", "64")
    cal = cv["clocks"][p64[0]]["raw"][p64[1]] * seen[p64[0]][p64[1]] / seen_raw[p64[0]][p64[1]]
    base = seen["progress"]["64"] * lr_seen / cv["lr0"]
    for phrase in ("is within 10% of the baseline's, ", "the calibrated clock is the baseline's "
                                                       "within 10% (the raw theory's clocks"):
        m = _after(t, phrase, r"(\d+) against (\d+) responses for progress at half the lr and B 64")
        assert [int(m.group(1)), int(m.group(2))] == [round(cal), round(base)]


def test_the_largest_calibrated_misses():
    meas, t = _json("policy_measured.json"), _text("docs/policy.md")
    miss = {}
    for cell in ("lr_half", "lr_double", "group4", "group16"):
        for c in ("progress", "kl", "entropy"):
            for b, m in meas["comparison"]["cells"][cell][c]["by_batch"].items():
                if m["over_calibrated"]["median"] is not None:
                    miss[(cell, c, b)] = m["over_calibrated"]
    ranked = sorted(miss, key=lambda k: -abs(miss[k]["median"] - 1))
    # the two largest, both +16% when rounded: KL at 2x lr and B 64, then progress at B 1024
    assert ranked[:2] == [("lr_double", "kl", "64"), ("lr_double", "progress", "1024")]
    m = _after(t, "the largest misses ", r"\+(\d+)% \[(\d+)%, (\d+)%\], KL at 2x lr and B 64, "
               r"and \+(\d+)% \[(\d+)%, (\d+)%\], progress there at B 1024")
    pct = [round(100 * (v - 1)) for k in ranked[:2] for v in (miss[k]["median"], *miss[k]["ci"])]
    assert [int(g) for g in m.groups()] == pct


def test_the_512_seed_drift_ratio():
    d = _json("plan_check_policy_drift_512_measured.json")
    ratio = d["answers"]["1024"]["median"] / d["answers"]["512"]["median"]
    # the CI is a bootstrap over the runs, which are not committed: the JSON states it
    stated = re.search(r"Drift 1024 / 512 = ([\d.]+) \[([\d.]+), ([\d.]+)\]",
                       " ".join(d["expected_vs_found"]))
    assert f"{ratio:.3f}" == stated.group(1)
    claim = f"{ratio:.3f} [{stated.group(2)}, {stated.group(3)}]"
    # measured on older code and its runs not committed: the reference docs no longer state it,
    # the lab note keeps it (with "later", which its CI's lower bound above 1 supports)
    assert _text("README.md").count(claim) == 0
    assert _text("docs/policy.md").count(claim) == 0
    assert _text("docs/history/policy.md").count(claim) == 1
    assert float(stated.group(2)) > 1


# --- contrasts the docs derive from their own tables (the study JSONs are not committed) -----

NUM = r"(-?\d+(?:\.\d+)?)"
CI = NUM + r" \[" + NUM + ", " + NUM + r"\]"


def _row(doc: str, label: str) -> list:
    """The cells after `label` of the one table row of `doc` that begins with `label` (its
    first cell, or its first cells joined by ' | ')."""
    head = f"| {label} |"
    with open(os.path.join(ROOT, doc)) as f:
        rows = [ln for ln in f if ln.startswith(head)]
    assert len(rows) == 1, (label, len(rows))
    return [c.strip() for c in rows[0][len(head):].strip().strip("|").split("|")]


def test_the_early_walk_is_not_established_flat_and_the_late_one_is_not_flat():
    t = _text("docs/policy.md")
    pred = _json("damage_predictions.json")["predictions"]
    rows = re.findall(r"\| its slope on log B \| (?:\*\*)?" + CI, t)
    early, late = [[float(v) for v in r] for r in rows]  # at 4096, then 16 384 responses
    zero = pred["sqrt"]["rms_slope"]
    assert early[1] <= zero <= early[2]  # flat not rejected early ...
    # ... nor the later slope's CI, up to its estimate: flatness early is not established
    assert late[1] <= early[2] <= late[0]
    assert not late[1] <= zero <= late[2]  # late: not flat
    m = _after(t, "the CI reaches ", NUM + " against the later slope's " + NUM)
    assert [float(v) for v in m.groups()] == [early[2], late[0]]
    m = _after(t, "the sqrt rule's CI ", r"\[" + NUM + ", " + NUM + r"\] reaches up to " + NUM +
               r" against the later slope " + NUM)
    assert [float(v) for v in m.groups()] == early[1:] + early[2:] + late[:1]
    m = _after(t, "the slope on log B of the RMS of the end token's log-odds is ", CI)
    assert [float(v) for v in m.groups()] == early
    m = _after(t, "At 16 384 responses it is ", CI)
    assert [float(v) for v in m.groups()] == late


def test_the_lean_towards_end_b_is_not_established():
    t = _text("docs/policy.md")
    mean = {r: [float(v) for v in re.findall(r"[\d.]+", c)] for r, c in zip(
        ("sqrt", "fixed"), _row("docs/policy.md", "mean shift at 16 384 (towards END_B > 0)")[:2])}
    m = _after(t, "a lean towards END_B is not established: B 256 minus B 64 is ",
               CI + " and B 1024 minus B 64 " + CI + r" \(fixed rule " + CI + " and " + CI)
    got = [[float(v) for v in m.groups()[i:i + 3]] for i in (0, 3, 6, 9)]
    for g, (r, i) in zip(got, (("sqrt", 1), ("sqrt", 2), ("fixed", 1), ("fixed", 2))):
        # the difference of the table's means (each to 3 significant digits) ...
        assert abs(g[0] - (mean[r][i] - mean[r][0])) <= 0.0015, (r, i)
        assert g[1] < 0 < g[2], (r, i)  # ... and "not established": its CI holds 0
    src = os.path.join(ROOT, "docs", "claim_sources", "damage_study.json")
    if not os.path.exists(src):
        return  # the paired bootstrap needs the study's per-seed shifts
    with open(src) as f:
        cells = json.load(f)["cells"]
    idx = np.random.default_rng(0).integers(0, 16, size=(2000, 16))
    for g, (r, b) in zip(got, (("sqrt", "256"), ("sqrt", "1024"), ("fixed", "256"),
                               ("fixed", "1024"))):
        x, y = (np.asarray(cells[r]["per_seed"][k]["shift_at_16384"], float) for k in (b, "64"))
        boot = np.mean(x[idx], -1) - np.mean(y[idx], -1)
        lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")
        assert [float(f"{v:.3g}") for v in (x.mean() - y.mean(), lo, hi)] == g, (r, b)


def test_the_drift_at_the_harm_ratios_are_the_tables():
    t = _text("docs/policy.md")
    deficit = _row("docs/policy.md", "drift at deficit over B 64's")
    sq = re.findall(CI, deficit[0])
    assert len(sq) == 2 and not re.findall(CI, deficit[1])  # the fixed rule's: too few seeds
    m = _after(t, "the drift at its crossing is ", CI + r" times B 64's at B 256 and " + CI +
               " at B 1024: a fixed drift at the harm is not rejected")
    assert m.groups() == sq[0] + sq[1]
    m = _after(t, "and the ratio to B 64 is ", CI + " at B 256 and " + CI + " at B 1024, both "
               "including 1")
    assert m.groups() == sq[0] + sq[1]
    assert all(float(c[1]) <= 1 <= float(c[2]) for c in sq)  # "not rejected", "including 1"
    damage = _row("docs/policy.md", "drift at damage, 256 over 64")[0]
    assert not re.search(CI, damage) and "(no CI)" in damage
    assert "from too few seeds for a CI: whether it grows with B is not established" in t


def _exponents(t: str) -> dict:
    """{(rule, clock): (measured [lo, hi], Adam's per-coordinate prediction)} from the study's
    exponent table; '>' (an open bound) as +inf."""
    out = {}
    for rule, clock, lo_hi, pred in re.findall(
            r"\| (sqrt|fixed) \| (progress|null|KL|entropy) \| "
            r"(-?[\d.]+ \[-?[\d.]+, (?:-?[\d.]+|>)\])"
            r" \| [\d-]+ \| [\d.-]+ \| ([\d.]+) \|", t):
        m, lo, hi = re.match(r"(-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+|>)\]", lo_hi).groups()
        out[(rule, clock)] = ([float(m), float(lo), math.inf if hi == ">" else float(hi)],
                              float(pred))
    assert len(out) == 8
    return out


def test_the_per_coordinate_exponents_inside_and_outside():
    t = _text("docs/policy.md")
    e = _exponents(t)
    sharp = [(r, c) for r in ("sqrt", "fixed") for c in ("progress", "KL", "entropy")]
    inside = [k for k in sharp if e[k][0][1] <= e[k][1] <= e[k][0][2]]
    outside = [k for k in sharp if k not in inside]
    fixed = " / ".join(f"{e[('fixed', c)][0][0]:.3f}" for c in ("progress", "KL", "entropy"))
    m = _after(t, f"{fixed} under the fixed rule: inside the measured CI for ",
               r"(\d+) of (\d+) \(sqrt entropy, fixed progress and KL\)")
    assert _of(m) == [len(inside), len(sharp)]
    assert inside == [("sqrt", "entropy"), ("fixed", "progress"), ("fixed", "KL")]
    m = _after(t, "outside for sqrt progress ", r"\(" + NUM + r" against \[" + NUM + ", " + NUM +
               r"\]\), sqrt KL \(" + NUM + r" against \[" + NUM + ", " + NUM + r"\]\) and fixed "
               r"entropy \(" + NUM + r" against \[" + NUM + ", " + NUM + r"\]\), " + NUM + "-" +
               NUM)
    got = [float(v) for v in m.groups()]
    assert got[:9] == [v for k in outside for v in (e[k][1], *e[k][0][1:])]
    gaps = [abs(e[k][1] - e[k][0][0]) for k in outside]
    assert got[9:] == [round(min(gaps), 3), round(max(gaps), 3)]
    # the README's policy row quotes the same table
    r = _text("README.md")
    kl, ent = e[("sqrt", "KL")], e[("sqrt", "entropy")]
    fmt = lambda x: f"{x[0]:.3f} [{x[1]:.3f}, {x[2]:.3f}]"  # noqa: E731
    m = _after(r, "KL and entropy slow with progress (exponents ",
               r"([^;]+); Adam's per-coordinate noise predicts " + NUM + ", outside the KL CI, and "
               + NUM + r"\)")
    assert m.group(1) == f"{fmt(kl[0])}, {fmt(ent[0])}"
    assert [float(m.group(2)), float(m.group(3))] == [kl[1], ent[1]]
    assert not kl[0][1] <= kl[1] <= kl[0][2] and ent[0][1] <= ent[1] <= ent[0][2]
    null = e[("sqrt", "null")]
    assert null[0][1] <= 0 <= null[0][2]  # the null clock's growth is not established
    m = _after(r, "whether the end-token drift clock grows with B is not established (exponent ",
               NUM + r" \[" + NUM + ", " + NUM + r"\], predicted " + NUM)
    assert [float(v) for v in m.groups()] == [*null[0], null[1]]


def test_the_clipping_margins_are_the_variants_table():
    t = _text("docs/policy.md")
    rows = {k: re.findall(CI, " | ".join(_row("docs/policy.md", k))) for k in
            ("(the study's cell)", "warm-up seed 1 | 0.56% / 4.68%", "4x the lr")}
    # each row: delays progress, KL, entropy, null, then the margins KL, entropy
    (kl, ent), (kl_w, ent_w), (kl4, ent4) = (rows[k][-2:] for k in rows)
    m = _after(t, "N_prog moves less than the drift clock: at B 1024 ",
               CI + r" for KL \(no shift established\) and " + CI + r" for entropy, and " + CI +
               " and " + CI + r" at 4x the lr, where the delays are " + NUM + " and " + NUM)
    assert m.groups() == kl + ent + kl4 + ent4 + (rows["4x the lr"][1][0], rows["4x the lr"][2][0])
    assert float(kl[1]) <= 1 <= float(kl[2]) and float(ent[2]) < 1  # the words above
    m = _after(t, "that the entropy margin moves less than its clock is not established (",
               CI + " against a delay of " + CI)
    assert m.groups() == ent_w + rows["warm-up seed 1 | 0.56% / 4.68%"][2]
    m = _after(t, "For KL the margin's shift is not established at the clipping lr under either "
               "warm-up (", CI + " and " + CI + r"\) and is " + CI + " at 4x the lr")
    assert m.groups() == kl + kl_w + kl4
    assert all(float(c[1]) <= 1 <= float(c[2]) for c in (kl, kl_w)) and float(kl4[1]) > 1
    m = _after(t, "moves less than the clock (entropy under the second warm-up aside): within ",
               NUM + "-" + NUM + r" \(the CIs, both warm-ups\) at the clipping lr, " + NUM + "-" +
               NUM + " at 4x that lr")
    same_lr = [float(v) for c in (kl, ent, kl_w, ent_w) for v in c[1:]]
    at4 = [float(v) for c in (kl4, ent4) for v in c[1:]]
    assert [float(v) for v in m.groups()] == [min(same_lr), max(same_lr), min(at4), max(at4)]


def test_the_collapse_exponent_is_the_tables():
    t = _text("docs/policy.md")
    # the unclipped rows: collapsed, still down, then the collapse clock
    b64, b1024 = (re.fullmatch(CI, _row("docs/policy.md", f"none | {b}")[2]).groups()
                  for b in (64, 1024))
    m = _after(t, "unclipped it moves from ", NUM + " to " + NUM + r" responses \(an exponent of "
               + NUM + r"; that ratio has no paired CI here, but the two medians' CIs, \[" + NUM +
               ", " + NUM + r"\] and \[" + NUM + ", " + NUM + r"\], do not overlap\)")
    g = [float(v) for v in m.groups()]
    lo, hi = [float(v) for v in b64], [float(v) for v in b1024]
    assert g[:2] == [lo[0], hi[0]] and g[3:] == lo[1:] + hi[1:]
    assert g[2] == round(math.log(hi[0] / lo[0]) / math.log(16), 2)
    assert lo[2] < hi[1]  # "do not overlap"
