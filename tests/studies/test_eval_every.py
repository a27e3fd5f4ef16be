"""tools/eval_every.py (the practitioner design at two evaluation grids): where uncovered truths
lie, the signed medians, the shared models and the scoring, on rows built here (the runs behind
docs/plan.md's numbers simulate for minutes)."""
import math

import pytest

from tests.helpers import load_script

ee = load_script("tools/eval_every.py")


def _row(model, rule, seed, times, err, lo=0.8, hi=1.25):
    """A scored study row: truth 1000, predicted 1000 (1 + err), band [lo, hi] x predicted."""
    p = 1000.0 * (1 + err)
    return {"model": model, "rule": rule, "seed": seed, "batch": 64 * times,
            "times_largest_pilot": times, "measured": 1000.0, "refused": None,
            "predicted": p, "rel_error": err, "ci": [lo * p, hi * p],
            "covered": lo * p <= 1000.0 <= hi * p, "width": max(1 / lo, hi)}


def test_uncovered_truths_are_counted_above_and_below_their_bands():
    # err -0.3: band [560, 875] lies below the truth 1000 (truth above); err +0.4: [1120,
    # 1750] above it (truth below); err 0: covered
    rows = [_row("m", "sqrt", 0, 8, -0.3), _row("m", "sqrt", 1, 8, -0.3),
            _row("m", "sqrt", 2, 8, 0.4), _row("m", "sqrt", 3, 8, 0.0),
            _row("m", "fixed", 0, 8, -0.3)]
    assert ee.misses(rows, "m", "sqrt", 8) == {"above": 2, "below": 1}
    assert ee.misses(rows, "m", "fixed", 8) == {"above": 1, "below": 0}
    assert ee.misses(rows, "m", "sqrt", 2) == {"above": 0, "below": 0}
    # signed median of -0.3, -0.3, +0.4, 0 = -0.15
    assert math.isclose(ee.signed_8x(rows, "m", "sqrt"), -0.15)
    assert ee.signed_8x(rows, "m", "sqrt") != ee.signed_8x(rows, "m", "fixed")


def test_only_the_models_both_runs_have_are_compared():
    base = [_row("a", "sqrt", s, 8, 0.2) for s in range(3)] + [_row("b", "sqrt", 0, 8, 0.1)]
    other = [_row("a", "sqrt", s, 8, 0.05) for s in range(3)] + [_row("c", "sqrt", 0, 8, 0.0)]
    doc = ee.measure(base, other)
    assert set(doc["base"]["summary"]) == set(doc["other"]["summary"]) == {
        "a fixed", "a sqrt", "a both"}
    # paired by hand: |log 1.05| - |log 1.2| in every design
    c = next(c for c in doc["contrast"] if c["model"] == "a" and c["times_largest_pilot"] == 8)
    assert math.isclose(c["mean_diff"], math.log(1.05) - math.log(1.2), rel_tol=1e-12)


def test_the_policy_claims_flip_at_their_bounds():
    base = [_row("policy", r, s, t, 0.18) for r in ("fixed", "sqrt") for s in range(16)
            for t in (2, 8)]
    at = lambda e: [_row("policy", r, s, t, e) for r in ("fixed", "sqrt") for s in range(16)
                    for t in (2, 8)]
    held = dict(ee.score("policy", ee.measure(base, at(0.15))))
    # 15% exactly is within the goal (1, 5); every design closer: the contrast's CI below 0
    # (2, and 4 fails: the fixed lr's CI excludes 0 too); +15% above 0 (3); equal widths (6)
    assert held == {1: True, 2: True, 3: True, 4: False, 5: True, 6: True}
    held = dict(ee.score("policy", ee.measure(base, at(-0.151))))
    assert held[1] is False and held[3] is False
    with pytest.raises(ValueError, match="--score"):
        ee.score("other", ee.measure(base, at(0.1)))


def test_the_fresh_claims_flip_at_their_bounds():
    base = [_row("policy", r, s, t, 0.149) for r in ("fixed", "sqrt") for s in range(16)
            for t in (2, 8)]
    at = lambda e: [_row("policy", r, s, t, e) for r in ("fixed", "sqrt") for s in range(16)
                    for t in (2, 8)]
    # +14.9%: within 15% (1), above 0 and at most 15% (2), no closer than the base (3 fails,
    # a mean of exactly 0), the goal met (4), 8x at most the base's (5)
    assert dict(ee.score("fresh", ee.measure(base, at(0.149)))) == {
        1: True, 2: True, 3: False, 4: True, 5: True}
    # +15.1%: past 15% (1, 2, 4) and past the base (5); farther (3)
    assert dict(ee.score("fresh", ee.measure(base, at(0.151)))) == {
        1: False, 2: False, 3: False, 4: False, 5: False}
    # -5%: closer (3) but below 0 (2)
    held = dict(ee.score("fresh", ee.measure(base, at(-0.05))))
    assert held[2] is False and held[3] is True and held[1] is True


def test_designs_before_the_first_are_left_out(tmp_path, capsys):
    import json
    base = [_row("a", "sqrt", s, 8, 0.5 if s < 2 else 0.1) for s in range(4)]
    other = [_row("a", "sqrt", s, 8, 0.0) for s in range(4)]
    paths = []
    for name, rows in (("b", base), ("o", other)):
        paths.append(str(tmp_path / f"{name}.json"))
        with open(paths[-1], "w") as f:
            json.dump({"rows": rows, "eval_every_updates": 25}, f)
    out = str(tmp_path / "out.json")
    ee.main([*paths, "--first-design", "2", "--json", out])
    with open(out) as f:
        doc = json.load(f)
    # from seed 2 on the base errs +10% only: its 8x median |error| 0.1, not 0.3
    assert math.isclose(doc["base"]["summary"]["a sqrt"]["median_abs_error_8x"], 0.1)
    with pytest.raises(SystemExit):
        ee.main([*paths, "--first-design", "4"])
    assert "share no model with designs from 4 on" in capsys.readouterr().err
