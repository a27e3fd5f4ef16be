"""The printed critical batch (twoclock/pilot/report.py, `table`): a knee fitted below every
pilot batch is said to be extrapolated, one inside them is not; Adam's form without a knee
within the pilots says the pilots are noise-dominated, not that progress is flat."""
import math

import pytest

from twoclock.pilot import report


def _plan(tmp_path, b_crit, **kw):
    # the saturation form under the sqrt rule by hand: N = 1000 (1 + 0.44 B / B_crit)^(1/2),
    # +-1% alternating (0.44 = 1.2^2 - 1: N(B_crit) = 1.2 N_min)
    rows = [(b, 0.01 * math.sqrt(b / 8), 1000 * (1 + 0.44 * b / b_crit) ** 0.5
             * (1.01 if i % 2 else 0.99)) for i, b in enumerate([8, 16, 32, 64] * 2)]
    p = tmp_path / f"r{b_crit:g}.csv"
    p.write_text("batch,lr,progress_samples,failure_samples\n"
                 + "".join(f"{b},{lr!r},{n!r},\n" for b, lr, n in rows))
    out = report.plan_file(str(p), **kw).to_json()
    return out, [ln for ln in report.table(out).splitlines() if ln.startswith("critical")][0]


@pytest.mark.parametrize("b_crit", [0.5, 2.0, 24.0, 40.0])
def test_a_knee_below_every_pilot_is_said_to_be_extrapolated(tmp_path, b_crit):
    out, line = _plan(tmp_path, b_crit)
    cb = out["critical_batch"]["batch"]
    assert cb is not None
    assert ("below the smallest pilot batch (8): every pilot is past it" in line) == (cb < 8)
    if b_crit <= 2:  # by hand: a knee at 2 or below lies under the smallest pilot
        assert cb < 8 and "extrapolated" in line


@pytest.mark.parametrize("form,want", [
    ("adam", "critical batch: none within reach (no knee: noise-dominated up to 54.76)"),
    ("saturation", "critical batch: none within reach (progress flat up to 54.76)")])
def test_no_knee_within_reach_is_read_by_the_form(tmp_path, form, want):
    # under Adam's form a clock without a knee is noise-dominated (N ~ B^(1/2 - p)), which
    # under a fixed lr still grows: "flat" only for the sqrt-rule forms
    out, _ = _plan(tmp_path, 24.0)
    out["critical_batch"] = {"batch": None, "ci": [54.7554, None]}
    out["fit"]["progress"]["form"] = form
    line = [ln for ln in report.table(out).splitlines() if ln.startswith("critical")][0]
    assert line == want
