"""The plan's records (twoclock.pilot.result) and their JSON: every field in order, tuples as
lists, inf clocks as null, the article only where there is one; and its config, one input mode
at a time (twoclock.pilot.config)."""
import json
import math

import numpy as np
import pytest

from tests.helpers import plan_main
from twoclock.pilot.config import LogsInput, PlanConfig, RunsInput
from twoclock.pilot.plan import PilotRuns, plan
from twoclock.pilot.result import (PLAN_SCHEMA, Estimate, FailureForm, Recommendation, Rule,
                                    to_json)


def test_an_estimate_writes_never_failing_as_null():
    e = Estimate(64.0, 1000.0, math.inf, 1100.0, math.inf, "runs", None)
    assert e.to_json() == {"batch": 64.0, "progress": 1000.0, "failure": None,
                           "progress_fit": 1100.0, "failure_fit": None, "source": "runs",
                           "seconds_per_sample": None}
    assert list(e.to_json()) == ["batch", "progress", "failure", "progress_fit", "failure_fit",
                                 "source", "seconds_per_sample"]


def test_a_recommendation_and_a_form_in_the_order_plan_json_has():
    r = Recommendation("samples", 0.1, {"batch": 64.0}, None, (128.0, 256.0), {"batch": 32.0})
    assert json.dumps(r.to_json()) == (
        '{"objective": "samples", "margin": 0.1, "constant": {"batch": 64.0}, "schedule": null, '
        '"unsafe": [128.0, 256.0], "fit_only_constant": {"batch": 32.0}}')
    f = FailureForm("power", ("power", "coupled"), "tests", "why",
                    {"power": {"exponent": 0.5}, "coupled": {"ratio_to_progress": 2.0}})
    assert f.to_json() == {"chosen": "power", "plausible": ["power", "coupled"],
                           "chosen_by": "tests", "why": "why", "power": {"exponent": 0.5},
                           "coupled": {"ratio_to_progress": 2.0}}
    assert to_json([Rule(0.5, 1e-3, 64.0, 0), (1, 2)]) == [
        {"p": 0.5, "lr0": 1e-3, "b0": 64.0, "off_rule_runs": 0}, [1, 2]]
    # lr0 (B / b0)^p by hand: 1e-3 x 4^0.5
    assert Rule(0.5, 1e-3, 64.0, 0).lr(256.0) == 2e-3


def test_a_plans_json_survives_a_round_trip_and_has_no_article_of_its_own():
    B = np.repeat([64.0, 128.0, 256.0, 512.0], 2)
    prog = 2000.0 * (1 + 0.44 * B / 300.0) ** 0.5
    runs = PilotRuns(B, 1e-3 * np.sqrt(B / 64), prog, 10 * prog, np.full(B.size, math.inf),
                     np.full(B.size, math.nan), ("",) * B.size)
    out = plan(runs, predict=[1024.0])
    j = out.to_json()
    assert json.loads(json.dumps(j)) == j and "article" not in j
    assert list(j) == ["schema", "predictions", "critical_batch", "failure_exponent",
                       "recommendation", "fit", "curves", "estimates", "runs", "source"]
    assert j["schema"] == PLAN_SCHEMA == 1
    assert j["predictions"][0]["batch"] == out.predictions[0].batch == 1024.0
    assert j["fit"]["rule"]["off_rule_runs"] == out.fit.rule.off_rule_runs == 0


def test_a_plan_config_holds_one_input_mode():
    """Neither input given: the published table (runs without a path); logs alone: no runs;
    both: refused, as is a logs input without its file or its target."""
    assert PlanConfig().runs == RunsInput(None) and PlanConfig().logs is None
    cfg = PlanConfig(logs=LogsInput("l.csv", "acc>=1", ("kl>=1",)))
    assert cfg.runs is None and cfg.logs.path == "l.csv" and cfg.logs.failure == ("kl>=1",)
    assert PlanConfig(runs=RunsInput("r.csv")).runs.path == "r.csv"
    with pytest.raises(ValueError, match="not both"):
        PlanConfig(runs=RunsInput("r.csv"), logs=LogsInput("l.csv", "acc>=1"))
    with pytest.raises(ValueError, match="^--smooth needs --logs"):
        LogsInput(smooth="ema:10")
    with pytest.raises(ValueError, match="give --progress"):
        LogsInput("l.csv")


def test_a_logs_flag_with_a_default_of_its_own_needs_logs_too(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        plan_main("plan_script_config")(["--clip-bind", "0.5", "--out", str(tmp_path)])
    assert e.value.code == 2 and "--clip-bind needs --logs" in capsys.readouterr().err
