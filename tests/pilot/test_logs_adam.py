"""Adam's progress form (--progress-form adam, --predict-rule) in logs mode, for one target:
from the Python entry (twoclock.plan_logs) and from the command line, on logged curves whose
crossings are placed by hand.

The oracle is the form written out here, N = A sqrt(m (m + B_n)) / lr with m = B / K
(docs/plan.md, "Adam's progress form"); each run's accuracy rises linearly in samples through
the target at exactly its N, so linear interpolation between logged points recovers N exactly,
and the plan's predictions are checked against the formula at the prediction's own lr."""
import json
import math

import numpy as np
import pytest

from twoclock.pilot import api
from twoclock.pilot.plan import PilotError

A, B_N = 1e-3, 100.0


def by_hand(B, lr, K):
    m = B / K
    return A * math.sqrt(m * (m + B_N)) / lr


# batch, lr, K: four batches, most runs at lr 1e-3 (the pilots' rule: fixed), some off it
RUNS = [(64, 1e-3, 1), (64, 2e-3, 1), (128, 1e-3, 1), (128, 5e-4, 2), (256, 1e-3, 1),
        (256, 3e-3, 1), (512, 1e-3, 1), (512, 7e-4, 4)]
WIGGLE = 1e-4  # each clock off the formula by +-WIGGLE in log, alternating (a residual to fit)


def _log(tmp_path, runs=RUNS, target=0.5):
    """One row per logged point: accuracy = target x samples / N, logged at 0.2, 0.6, 1.4 and
    2.0 N (so the crossing of `target` is interpolated between 0.6 N and 1.4 N: exactly N)."""
    rows = ["run,batch,lr,updates,samples,acc"]
    for i, (b, lr, k) in enumerate(runs):
        n = by_hand(b, lr, k) * math.exp(WIGGLE * (-1) ** i)
        rows += [f"r{i},{b},{lr},{k},{f * n!r},{target * f!r}" for f in (0.2, 0.6, 1.4, 2.0)]
    p = tmp_path / "logs.csv"
    p.write_text("\n".join(rows) + "\n")
    return str(p)


def _close(pred, want, tol=2e-3):
    """Median within tol of the formula (the wiggle is 1e-4) and the band around it."""
    got = pred["progress_samples"]
    assert abs(got["median"] / want - 1) < tol, (got["median"], want)
    assert got["ci"][0] < want < got["ci"][1]


def test_the_python_entry_plans_mixed_lrs_and_k_with_the_adam_form(tmp_path):
    path = _log(tmp_path)
    out = api.plan_logs(path, "acc>=0.5", [], predict=[1024, 4096], progress_form="adam",
                        predict_rule="fixed:0.001@64").to_json()
    assert out["fit"]["progress"]["form"] == "adam"
    assert out["fit"]["rule"]["p"] == 0.0 and out["fit"]["rule"]["lr0"] == 1e-3
    assert [r["updates"] for r in out["runs"]] == [k for _, _, k in RUNS]
    for pr in out["predictions"]:  # at lr 1e-3, K = 1: A sqrt(B (B + 100)) / 1e-3
        _close(pr, by_hand(pr["batch"], 1e-3, 1))
    # 1024 by hand: sqrt(1024 * 1124) = 1072.83..., so 1.07283e3 samples
    assert abs(out["predictions"][0]["progress_samples"]["median"] - 1072.83) < 3


def test_a_rule_without_an_anchor_takes_the_pilots_and_a_tuple_works_too(tmp_path):
    path = _log(tmp_path)
    # 'sqrt' alone: anchored at the pilots' rule (lr 1e-3 at the smallest batch, 64), so at
    # B 1024 the lr is 1e-3 sqrt(1024 / 64) = 4e-3
    out = api.plan_logs(path, "acc>=0.5", [], predict=[1024], progress_form="adam",
                        predict_rule="sqrt").to_json()
    assert out["fit"]["rule"]["p"] == 0.5 and out["fit"]["rule"]["b0"] == 64
    _close(out["predictions"][0], by_hand(1024, 4e-3, 1))
    as_tuple = api.plan_logs(path, "acc>=0.5", [], predict=[1024], progress_form="adam",
                             predict_rule=(0.5, 1e-3, 64.0)).to_json()
    # the inferred lr0 is exp(median log lr): 1e-3 to rounding
    assert as_tuple["predictions"][0]["progress_samples"]["median"] == pytest.approx(
        out["predictions"][0]["progress_samples"]["median"], rel=1e-9)


def test_the_command_line_takes_both_flags_in_logs_mode(tmp_path):
    from twoclock.cli.plan import main
    path = _log(tmp_path)
    assert main(["--logs", path, "--progress", "acc>=0.5", "--progress-form", "adam",
                 "--predict-rule", "sqrt:0.002@128", "--predict", "2048", "--no-figure",
                 "--quiet", "--out", str(tmp_path / "o")]) == 0
    out = json.loads((tmp_path / "o" / "plan.json").read_text())
    assert out["fit"]["progress"]["form"] == "adam" and out["fit"]["rule"]["p"] == 0.5
    # lr at 2048 = 0.002 sqrt(2048 / 128) = 0.008
    _close(out["predictions"][0], by_hand(2048, 0.008, 1))


def test_without_the_form_mixed_k_is_refused_and_a_rule_alone_too(tmp_path, capsys):
    from twoclock.cli.plan import main
    path = _log(tmp_path)
    with pytest.raises(PilotError, match="--progress-form adam"):
        api.plan_logs(path, "acc>=0.5", [])  # unequal K: the default forms refuse
    with pytest.raises(PilotError, match="--predict-rule: given with --progress-form adam"):
        api.plan_logs(path, "acc>=0.5", [], predict_rule="fixed")
    with pytest.raises(PilotError, match="--predict-rule"):
        api.plan_logs(path, "acc>=0.5", [], progress_form="adam", predict_rule="9")
    with pytest.raises(SystemExit) as e:
        main(["--logs", path, "--progress", "acc>=0.5", "--predict-rule", "fixed",
              "--no-figure", "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and "\n" not in err and "--predict-rule" in err


def test_equal_k_on_one_rule_the_default_plan_is_unchanged_by_the_move(tmp_path):
    """The flags moved from the RUNS.csv group to the plan's settings: a logs plan without them
    is the plan it was (the default form on the on-rule runs)."""
    runs = [(b, 1e-3, 1) for b in (64, 128, 256, 512)]
    path = _log(tmp_path, runs)
    out = api.plan_logs(path, "acc>=0.5", [], predict=[1024]).to_json()
    assert out["fit"]["progress"]["form"] in ("saturation", "curvature")
    # the same four clocks, planned with the form: B^(1/2) -> B^1 at fixed lr
    adam = api.plan_logs(path, "acc>=0.5", [], predict=[1024], progress_form="adam").to_json()
    _close(adam["predictions"][0], by_hand(1024, 1e-3, 1))
    assert np.isfinite(out["predictions"][0]["progress_samples"]["median"])
