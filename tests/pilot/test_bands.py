"""Bands that say why (issue 50 item 5): the width factor max(median / low, high / median) and,
above x2 either side, one line naming the pilot and the target. Expected values by hand."""
import math

import pytest
from hypothesis import example, given, strategies as st

from twoclock.pilot import bands, logs as pl

EST = [{"batch": 64.0, "progress": 1000.0, "progress_fit": 1000.0},
       {"batch": 128.0, "progress": 1200.0, "progress_fit": 1150.0},
       {"batch": 256.0, "progress": 1100.0, "progress_fit": 1320.0},
       {"batch": 2048.0, "progress": None, "progress_fit": 4000.0}]  # predicted, not a pilot
PILOTS = (64.0, 128.0, 256.0)


def test_width_by_hand():
    assert bands.width({"median": 100.0, "ci": [40.0, 300.0]}) == pytest.approx(3.0)
    assert bands.width({"median": 100.0, "ci": [20.0, 150.0]}) == pytest.approx(5.0)
    assert bands.width({"median": 100.0, "ci": [50.0, 200.0]}) == pytest.approx(2.0)
    assert bands.width({"median": 100.0, "ci": [None, 200.0]}) == math.inf
    assert bands.width({"median": 100.0, "ci": [0.0, 200.0]}) == math.inf
    assert bands.width({"median": None, "ci": [None, None]}) is None
    # as plan.json holds it (strict JSON): the factor, or null where open or without a median
    assert bands.width_json({"median": 100.0, "ci": [40.0, 300.0]}) == pytest.approx(3.0)
    assert bands.width_json({"median": 100.0, "ci": [None, 200.0]}) is None
    assert bands.width_json({"median": None, "ci": [None, None]}) is None


def test_score_by_hand():
    """Median 120, band [90, 180], truth 100: error 120 / 100 - 1 = +20% (not 100 / 120 - 1),
    covered, width max(120 / 90, 180 / 120) = 1.5, half-width share (180 - 90) / 2 / 120 =
    0.375 (not over the truth: 0.45). The band's ends count as in; past them, out."""
    band = {"median": 120.0, "ci": [90.0, 180.0]}
    got = bands.score(band, 100.0)
    assert (got["predicted"], got["ci"], got["covered"]) == (120.0, [90.0, 180.0], True)
    assert (got["rel_error"], got["width"]) == pytest.approx((0.2, 1.5))
    half = bands.score(band, 100.0, "half_width", bands.half_share)
    assert list(half) == ["predicted", "ci", "rel_error", "covered", "half_width"]
    assert half["half_width"] == pytest.approx(0.375)
    assert [bands.score(band, t)["covered"] for t in (89.9, 90.0, 180.0, 180.1)] == \
        [False, True, True, False]
    assert bands.score(band, 150.0)["rel_error"] == pytest.approx(-0.2)


def test_score_with_no_truth_or_an_open_end():
    """No truth (the held-out run never reached): only the prediction. An open low end is 0,
    an open high end unbounded: covered however far the truth; the width is infinite and the
    half-width share None."""
    band = {"median": 120.0, "ci": [90.0, 180.0]}
    assert bands.score(band, None) == {"predicted": 120.0, "ci": [90.0, 180.0],
                                       "rel_error": None, "covered": None, "width": None}
    assert bands.score({"median": None, "ci": [None, None]}, 100.0, "half_width",
                       bands.half_share)["half_width"] is None
    low = bands.score({"median": 120.0, "ci": [None, 180.0]}, 1e-6)
    assert (low["covered"], low["width"]) == (True, math.inf)
    assert low["rel_error"] == pytest.approx(120.0 / 1e-6 - 1)
    high = {"median": 120.0, "ci": [90.0, None]}
    assert bands.score(high, 1e12)["covered"] and not bands.score(high, 89.0)["covered"]
    assert bands.score(high, 1e12, "half_width", bands.half_share)["half_width"] is None
    assert not bands.score({"median": 120.0, "ci": [None, 180.0]}, 181.0)["covered"]


@given(st.floats(1.0, 10.0), st.floats(1.0, 10.0))
@example(2.0, 2.0)  # exactly x2 either side: not wide
@example(1.0, 2.0000001)
def test_a_band_says_why_only_above_x2_either_side(down, up):
    band = {"median": 100.0, "ci": [100.0 / down, 100.0 * up]}
    line = bands.why(band, 512.0, "acc>=0.5", {"batch": 100.0, "ci": [90.0, 110.0]}, EST,
                     PILOTS)
    assert (line is None) == (max(down, up) <= 2.0)


def test_a_band_is_named_as_the_table_prints_its_batch():
    # a prediction at 512:4 is the row "512:4", not "512" (which is 512:1 beside it)
    band = {"median": 1000.0, "ci": [100.0, 3000.0]}
    line = bands.why(band, 512.0, "acc>=0.5", {"batch": 300.0, "ci": [80.0, 900.0]}, EST,
                     PILOTS, "512:4")
    assert line.startswith("band at B 512:4 for acc>=0.5 is x10 either side: ")


def test_the_reasons_name_the_pilot_and_the_critical_batch():
    band = {"median": 1000.0, "ci": [100.0, 3000.0]}
    line = bands.why(band, 512.0, "acc>=0.5", {"batch": 300.0, "ci": [80.0, 900.0]}, EST,
                     PILOTS)
    # 256 reached the target in fewer samples than 128: named first; B_crit [80, 900] spans 512
    assert line == ("band at B 512 for acc>=0.5 is x10 either side: pilot B 256 reached it in "
                    "fewer samples (1100) than pilot B 128 (1200), so the pilots do not say how "
                    "the clock grows with the batch; the pilots' critical batch is not pinned: "
                    "B_crit band [80, 900] spans the predicted batch")
    monotone = [dict(e, progress=p) for e, p in zip(EST, (1000.0, 1200.0, 1500.0, None))]
    rs = bands.reasons(2048.0, {"batch": 300.0, "ci": [None, 900.0]}, monotone, set(PILOTS))
    assert rs[0] == "the pilots' critical batch is not pinned: B_crit band [-, 900] is open"
    assert rs[1] == "B 2048 is 8x the largest pilot (B 256)"
    # the pilot farthest from the fit: |log(1500 / 1320)| > |log(1200 / 1150)|: +14%
    assert rs[2] == "pilot B 256's clock (1500 samples) lies +14% off the fitted curve"


def test_pilots_growing_faster_than_the_theory_allows_are_named():
    fast = [dict(e, progress=p) for e, p in zip(EST, (1000.0, 1100.0, 3300.0, None))]
    crit = {"batch": 300.0, "ci": [10.0, 20.0]}
    # 128 -> 256: 3300 / 1100 = 3x at 2x the batch, B^log2(3) = B^1.58 > B^1 (a fixed lr)
    rs = bands.reasons(512.0, crit, fast, set(PILOTS), top=1.0)
    assert rs[0] == ("pilot B 256 took 3x the samples of pilot B 128 (3300 against 1100), as "
                     "B^1.58 where the theory allows at most B^1, so one of the two lies off "
                     "the curve")
    # under the sqrt rule's B^0.5 the first pair (1000 -> 1100, B^0.138) is within it
    assert bands.reasons(512.0, crit, fast, set(PILOTS), top=0.5)[0].startswith(
        "pilot B 256 took 3x")
    # no bound known: not named; a bound above the pair's B^1.585 (1.59): within it
    assert not any("took" in r for r in bands.reasons(512.0, crit, fast, set(PILOTS)))
    assert not any("took" in r for r in bands.reasons(512.0, crit, fast, set(PILOTS),
                                                      top=1.59))
    # a fall and a jump: one reason, the fall first
    both = [dict(e, progress=p) for e, p in zip(EST, (1000.0, 900.0, 2700.0, None))]
    r = bands.reasons(512.0, crit, both, set(PILOTS), top=1.0)[0]
    assert r == ("pilot B 128 reached it in fewer samples (900) than pilot B 64 (1000), so "
                 "the pilots do not say how the clock grows with the batch, and pilot B 256 "
                 "took 3x the samples of pilot B 128 (2700 against 900), as B^1.58 where the "
                 "theory allows at most B^1, so one of the two lies off the curve")
    # why() reads the bound from the band's envelope
    band = {"median": 1000.0, "ci": [100.0, 3000.0],
            "envelope": {"batch_top": 256.0, "anchor": [3000.0, 3600.0],
                         "exponents": [0.5, 1.0], "ci": [3000.0, 3600.0], "set": []}}
    assert "took 3x the samples" in bands.why(band, 512.0, "acc>=0.5", crit, fast, PILOTS)
    # ... its largest exponent, not its smallest: B^0.8 lies within [0.5, 1]
    mid = [dict(e, progress=p) for e, p in zip(EST, (1000.0, 1100.0, 1100.0 * 2 ** 0.8, None))]
    line = bands.why(band, 512.0, "acc>=0.5", crit, mid, PILOTS)
    assert line.startswith("band at B 512") and "took" not in line


def _log(path, clocks):
    """One run per batch, acc rising linearly to cross 0.5 at clocks[b] samples, 10 points."""
    lines = ["run,batch,lr,samples,acc"]
    for b, c in clocks.items():
        for t in range(1, 11):
            s = t * c / 5
            lines.append(f"b{b},{b},0.001,{s:g},{s / (2 * c):.9g}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_plan_json_carries_the_width_and_the_printout_the_why(tmp_path):
    """A non-monotone single-seed sweep: every prediction's band_width is its band's factor,
    and the wide ones say why, naming the pilot (B 256 faster than B 128) and the target."""
    out = pl.plan_logs(_log(tmp_path / "a.csv", {64: 1000, 128: 1600, 256: 1300}), "acc>=0.5",
                       [], predict=[512, 2048])
    text = pl.table(out)
    for p in out["predictions"]:
        m, (lo, hi) = p["progress_samples"]["median"], p["progress_samples"]["ci"]
        want = max(m / lo, hi / m) if lo and hi else None
        assert p["band_width"] == pytest.approx(want) if want else p["band_width"] is None
        if want is None or want > 2:
            assert p["band_why"].startswith(f"band at B {p['batch']:g} for acc>=0.5 is ")
            assert "pilot B 256 reached it in fewer samples (1300) than pilot B 128 (1600)" \
                in p["band_why"]
            assert "  " + p["band_why"] in text.splitlines()
        else:
            assert p["band_why"] is None
    assert any(p["band_why"] for p in out["predictions"])


def test_a_sweep_of_one_run_a_batch_is_told_its_bands_are_the_medians(tmp_path):
    one = pl.plan_logs(_log(tmp_path / "a.csv", {64: 1000, 128: 1500, 256: 2600}), "acc>=0.5",
                       [], predict=[512])
    assert "  " + pl.ONE_RUN in pl.table(one).splitlines()
    # two runs at B 64 (its rows appended as run b64x): not one run a batch, no such line
    path = tmp_path / "b.csv"
    path.write_text((tmp_path / "a.csv").read_text() + "\n".join(
        f"b64x,64,0.001,{t * 1100 / 5:g},{t * 1100 / 5 / 2200:.9g}" for t in range(1, 11)) + "\n")
    two = pl.plan_logs(str(path), "acc>=0.5", [], predict=[512])
    assert pl.ONE_RUN not in pl.table(two)
    assert pl.one_run_a_batch([{"batch": 64.0}, {"batch": 128.0}])
    assert not pl.one_run_a_batch([{"batch": 64.0}, {"batch": 64.0}]) and \
        not pl.one_run_a_batch([])
