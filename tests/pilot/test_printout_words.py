"""Words of the plan's printout that a reader takes at face value: a form that "fits better"
differs in the digits printed, forms within 0.1% are said to fit alike, and a count of one
takes the singular (twoclock/pilot/fit.py, logs.py, clocks.py)."""
import re

import numpy as np
import pytest

from twoclock.pilot import fit as pf, report
from twoclock.pilot.plan import PilotError


def _errors(why):
    return re.search(r"squared log error (\S+) vs (\S+?)[ ,]", why).groups()


def test_forms_within_a_tenth_of_a_percent_fit_alike():
    # a flat clock (1000 +- 1%): by hand both forms put their knee beyond the pilots and fit
    # the same constant, so their squared errors agree (to 0.05% here)
    B = np.array([8, 16, 32, 64] * 2, np.float64)
    N = 1000 * np.where(np.arange(8) % 2, 1.01, 0.99)
    why = pf.choose_progress(B, N, 0.5)[3]
    a, b = _errors(why)
    assert "fit alike" in why and "fits better" not in why and a != b


def test_a_form_that_fits_better_shows_it_in_the_digits():
    # the published table: 0.05379 against 0.05639 (docs/plan.md's printout)
    why = report.plan_file().to_json()["fit"]["progress"]["why"]
    a, b = _errors(why)
    assert why.startswith("saturation fits better") and float(a) < float(b) and a != b


def test_one_run_and_one_batch_take_the_singular(tmp_path, capsys):
    from tests.helpers import plan_main
    args = ["--logs", "twoclock/data/example_pilot_logs.csv", "--progress",
            "heldout_acc>=0.75", "--failure", "heldout_acc<=peak-0.1", "--predict", "512",
            "--no-figure", "--out", str(tmp_path)]
    assert plan_main("plan_words")(args) == 0
    # one of the 12 pilots drops 0.1 below its peak (docs/plan.md, "No failure seen")
    assert "  heldout_acc<=peak-0.1: 1 run crossed; " in capsys.readouterr().out
    # one of the 19 runs of the real sweep never reaches a return of 300 (B 300)
    assert plan_main("plan_words")(["--logs", "twoclock/data/real/invpend_pg_b100_10000/"
                                    "curves.csv", "--progress", "Eval_AverageReturn>=300",
                                    "--no-figure", "--out", str(tmp_path)]) == 0
    assert "  1 run never reached Eval_AverageReturn>=300 (left out of the fits): " in \
        capsys.readouterr().out
    from tests.pilot.test_logs_minority import _log
    from twoclock.pilot import logs as pl
    runs = [("a8", 8, 500.0), ("b8", 8, 9e9), ("r16", 16, 900.0), ("n16", 16, 9e9),
            ("n32", 32, 9e9), ("r64", 64, 3000.0)]
    with pytest.raises(PilotError, match=r"crossed between logged points at 1 pilot batch "
                                         r"\(B 64\), the progress fit needs 3"):
        pl.plan_logs(_log(tmp_path / "l.csv", runs), "acc>=1", [], predict=[128])


def _runs_csv(tmp_path, rows, spu=False) -> str:
    """A runs CSV of (batch, lr, progress_samples[, seconds_per_update]), no run failed."""
    p = tmp_path / "runs.csv"
    head = "batch,lr,progress_samples,failure_samples" + (",seconds_per_update" if spu else "")
    p.write_text("\n".join([head] + [",".join(str(x) for x in r[:3]) + ","
                                     + "".join(f",{x}" for x in r[3:]) for r in rows]) + "\n")
    return str(p)


def _line(text, start):
    got = [ln for ln in text.splitlines() if ln.startswith(start)]
    assert len(got) == 1, text
    return got[0]


def test_the_constant_batch_names_samples_once_when_samples_are_minimised(tmp_path):
    # no step times: samples are minimised; by hand the fewest samples are B 8's median of
    # 990 and 1010, 1000 (the clocks grow with B), read from the runs; the cost is those same
    # samples, so the line says them once
    rows = [(8, 0.01, 990), (8, 0.01, 1010), (16, 0.01, 1400), (16, 0.01, 1420),
            (32, 0.01, 2000), (32, 0.01, 2080)]
    text = report.table(report.plan_file(_runs_csv(tmp_path, rows)).to_json())
    assert _line(text, "  constant batch ") == "  constant batch 8: 1000 samples (from the runs)"
    # with step times the cost is seconds, another quantity, and is printed: 1 s an update at
    # every batch, so by hand B 32's 2040 samples take 2040 / 32 = 63.75 s (B 16's 88.1 s,
    # B 8's 125 s)
    rows = [r + (1.0,) for r in rows]
    text = report.table(report.plan_file(_runs_csv(tmp_path, rows, spu=True)).to_json())
    assert _line(text, "  constant batch ") == ("  constant batch 32: 2040 samples (from the "
                                                "runs), 63.75 s")


def test_the_headline_gives_the_chosen_failure_forms_own_parameters():
    import math
    from twoclock.pilot import plan as pilot
    from twoclock.pilot.runs import PilotRuns
    # the knee: every pilot fails at N_fail = 2000 (1 + 0.2 B / 40), the curvature form (its
    # exponent 1, N_fail(B_crit) = 1.2 N_min) with critical batch 40; under the sqrt rule the
    # saturation form's exponent is 1/2, so the knee fitted to it is the curvature shape at 40
    B = np.array([8.0, 16, 32, 64, 128, 256])
    n = B.size
    runs = PilotRuns(B, 0.01 * np.sqrt(B / 8), 1000 * np.sqrt(1 + B / 64),
                     2000 * (1 + 0.2 * B / 40), np.full(n, np.inf), np.full(n, np.nan),
                     ("",) * n)
    head = _line(report.table(pilot.plan(runs, failure_form="knee").to_json()),
                 "failure clock: ")
    got = re.match(r"failure clock: knee form \(curvature shape\), critical batch (\S+); "
                   r"the power law, not chosen, q = ", head)
    assert got, head
    assert float(got.group(1)) == pytest.approx(40, rel=0.02)
    # coupled: N_fail = 3 N_prog at every pilot, so k = 3
    runs = PilotRuns(B, 0.01 * np.sqrt(B / 8), 1000 * np.sqrt(1 + B / 64),
                     3000 * np.sqrt(1 + B / 64), np.full(n, np.inf), np.full(n, np.nan),
                     ("",) * n)
    head = _line(report.table(pilot.plan(runs, failure_form="coupled").to_json()),
                 "failure clock: ")
    assert head.startswith("failure clock: coupled form, N_fail = 3 N_prog; the power law, "
                           "not chosen, q = "), head
    # from logs, the per-condition line too: TRL's fixture, acc = s / P and kl = s / F linear
    # (tests/pilot/test_trainer_logs.py), P = 500 (1 + b / 256), F = 2000 (b / 64)^(1/4); the
    # pilots keep the ratio F / P (coupled, chosen by the tests): k is its geometric mean
    from twoclock.pilot import api, logs as pl
    k = math.exp(np.mean([math.log(2000 * (b / 64) ** 0.25 / (500 * (1 + b / 256)))
                          for b in (64, 128, 256)]))
    out = api.plan_logs("tests/data/trainer_logs/trl", "acc>=0.5", ["kl>=1"],
                        preset="trl").to_json()
    assert out["failures"][0]["form"]["chosen"] == "coupled"
    text = pl.table(out)
    assert _line(text, "failure clock: ").startswith(
        f"failure clock: coupled form, N_fail = {k:.3g} N_prog; the power law, not chosen, ")
    assert _line(text, "  kl>=1: ").startswith(
        f"  kl>=1: 3 runs crossed; coupled form, N_fail = {k:.3g} N_prog; the power law, not "
        "chosen, q = ")


def test_the_form_error_is_not_named_by_a_progress_forms_name():
    # the published table's progress clock is the saturation form; its form error, the bend of
    # log N in log B its left-out end batches imply, was printed as "curvature 0.145", which
    # reads as the other progress form ("curvature", fit.FORMS)
    out = report.plan_file().to_json()
    assert out["fit"]["progress"]["form"] == "saturation"
    line = _line(report.table(out), "form error: ")
    assert "curvature" not in line, line
    got = re.search(r"the form misses a bend of log N in log B of (\S+) per \(log B\)\^2\)$", line)
    assert got and float(got.group(1)) == pytest.approx(
        out["fit"]["progress_form_error"]["curvature"], rel=1e-2), line
    # a failure clock's form choice lists the same rate for each failure form (TRL's fixture:
    # power, coupled, knee), and not as "curvature errors" either
    from twoclock.pilot import api
    why = api.plan_logs("tests/data/trainer_logs/trl", "acc>=0.5", ["kl>=1"],
                        preset="trl").to_json()["failures"][0]["form"]["why"]
    assert "curvature" not in why and "(the bend each form misses with an end batch left " \
        "out, per (log B)^2: power " in why, why


def test_a_band_of_zero_width_from_exact_pilots_is_said_to_be_so(tmp_path):
    from twoclock.pilot import api, logs as pl
    # TRL's noise-free fixture: acc = s / P with P = 500 (1 + b / 256), linear in B, which is
    # the curvature form exactly (exponent 1): no residual, so each pilot batch's band is its
    # clock alone, 625 [625, 625], 750 [750, 750], 1000 [1000, 1000]
    text = pl.table(api.plan_logs("tests/data/trainer_logs/trl", "acc>=0.5", ["kl>=1"],
                                  preset="trl").to_json())
    assert "     64     1e-06  625 [625, 625] " in text
    assert _line(text, "band of zero width").startswith(
        "band of zero width at B 64, 128, 256: the pilots' clocks fit the curvature form "
        "exactly (squared log error "), text
    assert _line(text, "band of zero width").endswith("; real logs have scatter")
    # pilots with scatter (1000 +- 1% about a flat clock): bands with width, and no such line
    rows = [(b, 0.01, 1000 * (1.01 if i % 2 else 0.99)) for i, b in enumerate([8, 16, 32] * 2)]
    text = report.table(report.plan_file(_runs_csv(tmp_path, rows)).to_json())
    assert "zero width" not in text
