"""The Python entry `twoclock.plan_logs` (twoclock.pilot.api): a table in memory plans exactly
as the CSV of it does (the CSV reader is the oracle), its bad cells are refused in the CSV's one
line naming the row and the column, and the result is a typed LogsPlan whose to_json() is
plan.json, with its schema."""
import csv
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import twoclock
from twoclock.pilot import logs as pl
from twoclock.pilot.plan import PilotError
from twoclock.pilot.result import PLAN_SCHEMA, CriticalBatch, LogsPlan

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLE = os.path.join(ROOT, "twoclock", "data", "example_pilot_logs.csv")
PROGRESS, FAILURES = "heldout_acc>=0.75", ["drift>=2", "kl>=1.5"]


def _columns() -> dict:
    """The example log as {column: [cell text]}, read by the csv module (not by twoclock)."""
    with open(EXAMPLE, newline="") as f:
        rows = list(csv.DictReader(f))
    return {c: [r[c] for r in rows] for c in rows[0]}


@pytest.fixture(scope="module")
def from_csv():
    return pl.plan_logs(EXAMPLE, PROGRESS, FAILURES, predict=[512, 1024])


def _same_plan(got: LogsPlan, want: dict, inserted: int | None = None):
    """got (a table's plan) is want (its CSV's); inserted: a blank row the table has at that
    index and the CSV has not (the table's rows past it are one further on)."""
    g, w = got.to_json(), json.loads(json.dumps(want))
    assert g["source"] == "table (logged curves)" and g["logs"]["path"] == "table"
    for out in (g, w):
        out.pop("source")
        out["logs"].pop("path")
    for cg, cw in zip(g["logs"]["curves"], w["logs"]["curves"]):
        for cond in [PROGRESS] + FAILURES:
            if cw[cond]["line"] is not None:  # the CSV's line of table row i is i + 2
                cw[cond]["line"] -= 2
                if inserted is not None and cw[cond]["line"] >= inserted:
                    cw[cond]["line"] += 1
    assert json.dumps(g) == json.dumps(w)  # the same values, bit for bit, in the same order


@pytest.mark.parametrize("cells", ["text", "float", "numpy"])
def test_a_table_in_memory_plans_exactly_as_its_csv(from_csv, cells):
    cols = _columns()
    if cells != "text":
        cols = {c: v if c == "run" else [float(x) for x in v] for c, v in cols.items()}
    if cells == "numpy":
        cols = {c: v if c == "run" else np.array(v) for c, v in cols.items()}
    got = twoclock.plan_logs(cols, PROGRESS, FAILURES, predict=[512, 1024])
    assert isinstance(got, LogsPlan)
    _same_plan(got, from_csv)


def test_the_result_is_typed_and_its_json_is_plan_json_with_the_schema(from_csv):
    got = twoclock.plan_logs(EXAMPLE, PROGRESS, FAILURES, predict=[512, 1024])
    j = got.to_json()
    assert list(j)[0] == "schema" and j["schema"] == PLAN_SCHEMA == 1
    assert j == json.loads(json.dumps(from_csv))  # the command's dict, the same plan
    assert isinstance(got.critical_batch, CriticalBatch)
    assert got.critical_batch.batch == j["critical_batch"]["batch"]
    assert got.fit.rule.b0 == 64.0  # the smallest pilot batch of the example log
    assert [p["batch"] for p in got.predictions] == [512.0, 1024.0]
    with pytest.raises(AttributeError):
        got.source = "x"  # frozen


def test_a_dataframe_plans_as_its_csv(from_csv):
    pd = pytest.importorskip("pandas")
    _same_plan(twoclock.plan_logs(pd.read_csv(EXAMPLE), PROGRESS, FAILURES,
                                  predict=[512, 1024]), from_csv)


def _bad(fix):
    cols = _columns()
    fix(cols)
    return cols


def _set(col, row, value):
    def fix(cols):
        cols[col][row] = value
    return fix


@pytest.mark.parametrize("table, message", [
    (_bad(_set("lr", 3, "-1")), "table row 3, column lr: must be a finite number > 0"),
    (_bad(_set("lr", 3, -1.0)), "table row 3, column lr: must be a finite number > 0"),
    (_bad(_set("kl", 7, math.nan)), "table row 7, column kl: must be a finite number"),
    (_bad(_set("samples", 0, None)), "table row 0, column samples: empty"),
    (_bad(_set("batch", 2, True)), "table row 2, column batch: must be a finite number > 0"),
    (_bad(_set("batch", 5, 128.0)), "table row 5, column batch: run 'B64-s0' has batch 128 "
                                      "here and 64 at table row 0"),
    (_bad(lambda c: c.pop("lr")), "table: missing column 'lr'"),
    (_bad(lambda c: c["kl"].pop()), "table: column 'kl' has 1231 values, column 'run' has "
                                      "1232"),
    ({"run": "B64-s0"}, "table: column 'run' must be a sequence of cells"),
    ({"run": np.zeros((2, 2))}, "table: column 'run' must be 1-D"),
    ({1: [1.0]}, "table: column names must be strings"),
    ({c: [] for c in ("run", "batch", "lr", "samples", "kl", "heldout_acc", "drift")},
     "table: no rows below the header"),
    ([("B64-s0", 64)], "source: a path, a mapping {column: values} or a pandas DataFrame"),
])
def test_a_bad_table_is_one_line_naming_the_row_and_column(table, message):
    with pytest.raises(PilotError) as e:
        twoclock.plan_logs(table, PROGRESS, FAILURES)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_empty_cells_are_not_logged_and_blank_rows_are_skipped(tmp_path, from_csv):
    """A None cell is a metric not logged at that step, as an empty CSV cell is; a row of
    empty cells is skipped as a blank CSV line is (the CSV with the same holes is the oracle)."""
    cols = _columns()
    for i in range(3, 60, 7):
        cols["kl"][i] = None
    path = tmp_path / "holes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        w.writerows(zip(*[["" if v is None else v for v in vs] for vs in cols.values()]))
    want = pl.plan_logs(str(path), PROGRESS, FAILURES, predict=[512, 1024])
    for vs in cols.values():
        vs.append(None)  # a blank row at the end
    _same_plan(twoclock.plan_logs(cols, PROGRESS, FAILURES, predict=[512, 1024]), want)


def test_a_row_of_blank_text_is_skipped_as_a_blank_csv_line_is(from_csv):
    """Cells of spaces are empty, as the CSV reader reads a cell of spaces: a row of them, in
    the middle and at the end, is skipped, and the plan is the CSV's."""
    cols = _columns()
    for vs in cols.values():
        vs.insert(5, "  ")
        vs.append(" \t")
    _same_plan(twoclock.plan_logs(cols, PROGRESS, FAILURES, predict=[512, 1024]), from_csv,
               inserted=5)


def test_settings_given_as_mappings_read_as_their_flags():
    cols = _columns()
    cols["num_samples"] = cols.pop("samples")
    got = twoclock.plan_logs(cols, PROGRESS, "kl>=1.5", columns={"samples": "num_samples"},
                             forms={"kl>=1.5": "power"}, predict=[512])
    assert got.fit.failure_form.chosen == "power" and got.fit.failure_form.chosen_by == "--form"
    assert got.logs["failures"] == ["kl>=1.5"]
    with pytest.raises(PilotError, match=r"^--form 'kl>=1.5=straight': expected CONDITION=FORM"):
        twoclock.plan_logs(cols, PROGRESS, "kl>=1.5", columns={"samples": "num_samples"},
                           forms={"kl>=1.5": "straight"})


def test_importing_twoclock_loads_no_planner_and_planning_loads_no_jax():
    code = ("import sys, twoclock; assert 'twoclock.pilot' not in sys.modules; "
            "assert twoclock.plan_logs.__module__ == 'twoclock.pilot.api'; "
            "assert twoclock.LogsPlan.__name__ == 'LogsPlan'; print('jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_the_readers_options_reach_a_table_in_memory(from_csv):
    """A W&B-style table with a step column and no samples: samples_from_step gives samples =
    step x batch, which the example's samples are (its runs log every update from update 1),
    so the plan is the CSV's; without the option the missing column is named in one line."""
    cols = _columns()
    batch, samples = np.array(cols["batch"], float), np.array(cols["samples"], float)
    step = samples / batch
    assert np.array_equal(step, np.round(step)) and step.min() >= 1  # the oracle's premise
    cols.pop("samples")
    cols["step"] = [str(int(s)) for s in step]
    got = twoclock.plan_logs(cols, PROGRESS, FAILURES, predict=[512, 1024],
                             samples_from_step="step")
    _same_plan(got, from_csv)
    with pytest.raises(PilotError, match="missing column 'samples'"):
        twoclock.plan_logs(cols, PROGRESS, FAILURES, predict=[512, 1024])
    with pytest.raises(PilotError, match="--restarts: refuse or keep-last"):
        twoclock.plan_logs(_columns(), PROGRESS, FAILURES, restarts="keep-first")


def test_settings_given_as_numpy_numbers_read_as_the_same_numbers(from_csv):
    """--lr as a mapping of NumPy floats (as a DataFrame or an array gives them): each run's lr
    read from its glob, the plan the CSV's. A NumPy float's repr ('np.float64(...)') would not
    parse as a number."""
    cols = _columns()
    lr_of = {}
    for run, lr in zip(cols.pop("run"), cols.pop("lr")):
        lr_of[run.split("-")[0] + "-*"] = np.float64(lr)
    runs = _columns()["run"]
    cols = {"run": runs, **cols}
    got = twoclock.plan_logs(cols, PROGRESS, FAILURES, predict=[512, 1024], lr=lr_of)
    _same_plan(got, from_csv)
