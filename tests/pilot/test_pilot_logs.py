"""Plans from logged curves (twoclock.pilot.logs): crossings against hand computations, row
order, censoring, bad input (one line, exit 2), column mapping, BOM, JSON Lines, smoothing,
the command end to end on the example file, and no JAX on import."""
import csv
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import assert_close, plan_main
from twoclock.pilot import logs as pl
from twoclock.pilot.plan import PilotError

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLE = os.path.join(ROOT, "twoclock", "data", "example_pilot_logs.csv")


def _plan_main():
    return plan_main("plan_script_logs")


# ---------------------------------------------------------------------------- crossings

def test_crossing_interpolates_linearly_between_the_logged_points():
    s = [0, 100, 200, 300]
    # up: 0.5 at 200 and 0.9 at 300; 0.6 is a quarter of the way: 200 + 0.25 * 100
    at, i = pl.crossing(s, [0.1, 0.3, 0.5, 0.9], pl.parse_condition("acc>=0.6", "-"))
    assert (at, i) == (225.0, 3)
    # down: 1.0 at 200 and 0.5 at 300; 0.8 is 0.2 / 0.5 = 40% of the way: 240
    at, i = pl.crossing(s, [2.0, 1.5, 1.0, 0.5], pl.parse_condition("entropy<=0.8", "-"))
    assert_close(at, 240.0, rtol=0, atol=1e-9, what="downward crossing")
    # a point exactly on the threshold is the crossing
    assert pl.crossing(s, [0.1, 0.3, 0.6, 0.9], pl.parse_condition("acc>=0.6", "-"))[0] == 200.0
    # never met: censored at the last logged sample
    never = pl.crossing(s, [0.1, 0.2, 0.3, 0.4], pl.parse_condition("acc>=0.6", "-"))
    assert never == (300.0, None)
    # the first crossing counts, not a later one after the curve fell back
    at, _ = pl.crossing([0, 10, 20, 30, 40], [0, 1, 0, 0, 2], pl.parse_condition("x>=0.5", "-"))
    assert at == 5.0


@pytest.mark.parametrize("text", ["kl>>0.5", "kl=0.5", "kl>=", ">=0.5", "kl>=0.5x", "kl 0.5",
                                  "kl=>0.5", "kl>=1e"])
def test_malformed_conditions_are_refused(text):
    with pytest.raises(PilotError, match="not a condition"):
        pl.parse_condition(text, "--failure")


def test_conditions_parse_names_with_slashes_and_exponents():
    c = pl.parse_condition(" eval/heldout_acc >= 7.5e-1 ", "--progress")
    assert (c.metric, c.op, c.threshold) == ("eval/heldout_acc", ">=", 0.75)
    assert pl.parse_condition("entropy<.8", "-").threshold == 0.8


# ---------------------------------------------------------------------------- synthetic logs
# Pilots at B = 8, 16, 32 (sqrt rule from 0.01), two runs each. acc = s / P and kl = s / F are
# linear, so the interpolated crossing of acc >= 1 is P and of kl >= 1 is F exactly (hand
# values); ent = 2 - s / E crosses ent <= 1 at E. Logged every 100 samples from 0.

PILOTS = [  # run, batch, lr, P, F, E, last logged sample
    ("a", 8, 0.01, 1050, 5230, 3000, 8000), ("b", 8, 0.01, 1110, 5010, 2950, 8000),
    ("c", 16, 0.0141421356, 1130, 5480, 3300, 8000),
    ("d", 16, 0.0141421356, 1190, 5350, 3400, 8000),
    ("e", 32, 0.02, 1390, 5790, 3700, 8000), ("f", 32, 0.02, 1450, 9e9, 3650, 8000),  # f: kl never
]
HEAD = ["run", "batch", "lr", "samples", "acc", "kl", "ent"]


def _rows():
    out = []
    for run, b, lr, P, F, E, last in PILOTS:
        for s in range(0, last + 1, 100):
            out.append([run, f"{b:g}", f"{lr:.10g}", str(s), f"{s / P:.12g}", f"{s / F:.12g}",
                        f"{2 - s / E:.12g}"])
    return out


def _write(path, head, rows, bom=False):
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(rows)
    return str(path)


def _interleaved(rows):
    """Rows of all runs interleaved (step by step), and within each run in a scrambled order."""
    rng = np.random.default_rng(3)
    return [rows[i] for i in rng.permutation(len(rows))]


@pytest.mark.parametrize("order", ["sorted", "interleaved and shuffled"])
def test_clocks_per_run_match_the_hand_values(tmp_path, order):
    rows = _rows() if order == "sorted" else _interleaved(_rows())
    logs = pl.read_logs(_write(tmp_path / "l.csv", HEAD, rows), ("acc", "kl", "ent"))
    assert [r.name for r in logs.runs] == sorted(r.name for r in logs.runs) or order != "sorted"
    by = {r.name: i for i, r in enumerate(logs.runs)}
    prog = pl.clocks(logs, pl.parse_condition("acc>=1", "--progress"))
    kl = pl.clocks(logs, pl.parse_condition("kl>=1", "--failure"))
    ent = pl.clocks(logs, pl.parse_condition("ent<=1", "--failure"))
    for run, b, lr, P, F, E, last in PILOTS:
        i = by[run]
        assert logs.runs[i].batch == b and list(logs.runs[i].samples_R[:3]) == [0, 100, 200]
        assert_close(prog[i].samples, P, rtol=1e-9, atol=0, what=f"{run} progress")
        assert_close(ent[i].samples, E, rtol=1e-9, atol=0, what=f"{run} entropy")
        if F < last:
            assert kl[i].crossed and abs(kl[i].samples - F) < 1e-6 * F
        else:  # censored at its last logged sample
            assert not kl[i].crossed and kl[i].samples == last


def test_plan_from_logs_uses_the_earliest_failure_at_each_batch(tmp_path):
    path = _write(tmp_path / "l.csv", HEAD, _interleaved(_rows()))
    out = pl.plan_logs(path, "acc>=1", ["kl>=1", "ent<=1"], predict=[64, 128])
    runs = {r["run"]: r for r in out["runs"]}
    assert runs["f"]["failures"] == {"kl>=1": None, "ent<=1": pytest.approx(3650.0, rel=1e-9)}
    # the censored run enters its kl fit as a run that survived to 8000 samples
    kl = [f for f in out["failures"] if f["condition"] == "kl>=1"][0]
    assert kl["failed_runs"] == 5
    est = {e["batch"]: e for e in out["estimates"]}
    # at measured batches the failure estimate is the earlier of the two metrics' medians:
    # entropy fails first at every pilot batch (medians 2975, 3350, 3675 vs 5120, 5415, -)
    for b, ent_med in ((8, 2975.0), (16, 3350.0), (32, 3675.0)):
        assert_close(est[b]["failure"], ent_med, rtol=1e-9, atol=0, what=f"failure at {b}")
        assert est[b]["failure_clock"] == "ent<=1"
        assert_close(est[b]["progress"], {8: 1080.0, 16: 1160.0, 32: 1420.0}[b], rtol=1e-9,
                     atol=0, what=f"progress at {b}")
    assert len(out["failures"]) == 2 and [p["batch"] for p in out["predictions"]] == [64, 128]
    for p in out["predictions"]:  # the plan's failure row is the earlier of the two fits
        meds = {f["condition"]: [q for q in f["predictions"] if q["batch"] == p["batch"]][0]
                ["failure_samples"]["median"] for f in out["failures"]}
        assert p["failure_samples"]["median"] == min(meds.values())
        assert p["failure_clock"] == min(meds, key=meds.get)
    assert out["logs"]["interpolation"].startswith("linear in samples")
    # the widest bracket relative to its clock: 100 samples around run a's 1050
    assert_close(out["logs"]["bracket"]["acc>=1"], 100 / 1050, rtol=1e-9, atol=0, what="bracket")
    assert "coarse logging" not in pl.table(out)


def test_coarse_logging_is_flagged(tmp_path):
    rows = [r for r in _rows() if int(r[3]) % 400 == 0]  # acc brackets: 400 around 1050 etc.
    out = pl.plan_logs(_write(tmp_path / "l.csv", HEAD, rows), "acc>=1", ["kl>=1"])
    assert_close(out["logs"]["bracket"]["acc>=1"], 400 / 1050, rtol=1e-9, atol=0, what="bracket")
    assert "coarse logging: crossings interpolated over up to 38% of the clock (acc>=1)" \
        in pl.table(out)


def test_runs_that_never_reach_the_target_are_left_out_and_named(tmp_path):
    rows = _rows() + [["g", "32", "0.02", str(s), "0.5", f"{s / 5000:.6g}", "1.5"]
                      for s in range(0, 8001, 100)]
    out = pl.plan_logs(_write(tmp_path / "l.csv", HEAD, rows), "acc>=1", ["kl>=1"])
    assert out["logs"]["progress_censored"] == ["g"] and len(out["runs"]) == 6


def test_column_mapping_bom_and_json_lines_read_the_same_clocks(tmp_path):
    rows = _rows()
    ref = pl.clocks(pl.read_logs(_write(tmp_path / "ref.csv", HEAD, rows), ("kl",)),
                    pl.parse_condition("kl>=1", "-"))
    wandb = ["Name", "config/batch", "lr", "train/num_samples", "eval/acc", "train/kl", "ent"]
    mapped = pl.read_logs(_write(tmp_path / "w.csv", wandb, rows, bom=True), ("kl",),
                          pl.parse_columns(["run=Name", "batch=config/batch",
                                            "samples=train/num_samples", "kl=train/kl"]))
    jl = tmp_path / "l.jsonl"
    with open(jl, "w") as f:
        for r in rows:
            f.write(json.dumps({"run": r[0], "batch": int(r[1]), "lr": float(r[2]),
                                "samples": int(r[3]), "kl": float(r[5])}) + "\n")
    sniffed = tmp_path / "l.log"  # no telling extension: JSON Lines found by its first '{'
    sniffed.write_text(jl.read_text())
    for logs in (mapped, pl.read_logs(str(jl), ("kl",)), pl.read_logs(str(sniffed), ("kl",))):
        got = pl.clocks(logs, pl.parse_condition("kl>=1", "-"))
        assert [c.samples for c in got] == [c.samples for c in ref]
    bom = _write(tmp_path / "bom.csv", HEAD, rows, bom=True)
    with open(bom, "rb") as f:
        assert f.read(3) == b"\xef\xbb\xbf"
    assert pl.read_logs(bom, ("acc",)).runs[0].name == "a"


def test_rows_of_one_step_split_over_two_lines_are_merged(tmp_path):
    """An export that logs evaluation and training on separate rows of the same step."""
    rows = []
    for r in _rows():
        rows.append(r[:4] + [r[4], "", ""])
        rows.append(r[:4] + ["", r[5], r[6]])
    logs = pl.read_logs(_write(tmp_path / "l.csv", HEAD, rows), ("acc", "kl"))
    assert logs.runs[0].samples_R.size == 81 and np.isfinite(logs.runs[0].metrics["kl"]).all()
    assert_close(pl.clocks(logs, pl.parse_condition("acc>=1", "-"))[0].samples, 1050.0,
                 rtol=1e-9, atol=0, what="merged progress")


def test_a_metric_logged_more_sparsely_is_read_on_its_own_points(tmp_path):
    rows = [r if int(r[3]) % 500 == 0 else r[:4] + ["", r[5], r[6]] for r in _rows()]
    logs = pl.read_logs(_write(tmp_path / "l.csv", HEAD, rows), ("acc",))
    # run a: acc = s / 1050 logged at 1000 and 1500 only: still linear, so 1050 exactly
    assert_close(pl.clocks(logs, pl.parse_condition("acc>=1", "-"))[0].samples, 1050.0,
                 rtol=1e-9, atol=0, what="sparse metric")


# ---------------------------------------------------------------------------- smoothing

def test_centred_window_on_a_straight_line_has_no_bias():
    s = np.arange(0, 40_001, 10.0)
    v = s / 1000.0  # crosses 20 at 20 000; a centred mean of a line is the line
    at, _ = pl.crossing(s, pl.smooth(s, v, ("window", 1000.0)), pl.parse_condition("x>=20", "-"))
    assert_close(at, 20_000.0, rtol=0, atol=1e-6, what="window clock")


def test_ema_lags_a_straight_line_by_its_hand_computed_lag():
    """y_i = y_{i-1} + a (v_i - y_{i-1}), a = 1 - exp(-d / T), on v = s / 1000 logged every d:
    the steady-state lag is d (1 - a) / a = d / (exp(d / T) - 1) samples (995.008 for d = 10,
    T = 1000); the start's transient has decayed by e^-20 at the crossing."""
    s = np.arange(0, 40_001, 10.0)
    at, _ = pl.crossing(s, pl.smooth(s, s / 1000.0, ("ema", 1000.0)),
                        pl.parse_condition("x>=20", "-"))
    assert_close(at, 20_000.0 + 10.0 / math.expm1(0.01), rtol=0, atol=1e-3, what="EMA clock")


def test_smoothing_is_parsed_and_refused_when_malformed():
    assert pl.parse_smooth("ema:2000") == ("ema", 2000.0)
    assert pl.parse_smooth("window:1e3") == ("window", 1000.0)
    for bad in ("ema", "ema:-1", "median:100", "window:x"):
        with pytest.raises(PilotError, match="--smooth"):
            pl.parse_smooth(bad)


# ---------------------------------------------------------------------------- bad input

def _with(rows, i, col, value):
    rows = [list(r) for r in rows]
    rows[i][HEAD.index(col)] = value
    return rows


BAD = {  # name: (header, rows, extra argv, needles)
    "metric column missing": (HEAD, _rows(), ["--failure", "kl2>=1"],
                              ["line 1", "no column 'kl2'"]),
    "required column missing": ([h if h != "lr" else "learning_rate" for h in HEAD], _rows(), [],
                                ["line 1", "missing column 'lr'", "--col lr=COLUMN"]),
    "metric never logged in a run": (HEAD, [r if r[0] != "c" else r[:5] + ["", r[6]]
                                            for r in _rows()], [],
                                     ["line 164, column kl", "run 'c' never logs 'kl'"]),
    "samples repeat with other values": (HEAD, _rows()[:5] + [_rows()[4][:4] + ["0.9", "0", "1"]]
                                         + _rows()[5:], [],
                                         ["line 7, column samples", "samples not increasing",
                                          "line 6"]),
    "batch changes within a run": (HEAD, _with(_rows(), 40, "batch", "16"), [],
                                   ["line 42, column batch", "schedules are not pilots"]),
    "lr changes within a run": (HEAD, _with(_rows(), 10, "lr", "0.02"), [],
                                ["line 12, column lr", "schedules are not pilots"]),
    # a target no run reaches (a failure no run shows is censored instead: test_pilot_forms)
    "no run meets the condition": (HEAD, _rows(), ["--progress", "kl>=5"],
                                   # the highest: run b's last row, 8000 / 5010 = 1.59681
                                   ["line 163, column kl", "no run ever meets --progress 'kl>=5'",
                                    "highest logged value, 1.59681"]),
    "malformed condition": (HEAD, _rows(), ["--failure", "kl>>0.5"],
                            ["--failure 'kl>>0.5': not a condition"]),
    "non-numeric metric": (HEAD, _with(_rows(), 3, "kl", "n/a"), [],
                           ["line 5, column kl", "finite number"]),
    "empty batch": (HEAD, _with(_rows(), 2, "batch", ""), [], ["line 4, column batch", "empty"]),
    "already met at the first point": (HEAD, _rows(), ["--failure", "ent<=2"],
                                       ["line 2, column ent", "first logged point"]),
    "bad --col": (HEAD, _rows(), ["--col", "samples"], ["--col 'samples'", "NAME=COLUMN"]),
    "--col of a column not there": (HEAD, _rows(), ["--col", "samples=train/num_samples"],
                                    ["line 1", "no column 'train/num_samples'"]),
    # issue 33, item 7: which of two is meant? RUNS.csv refused them; the logs took the last
    "a column twice": (HEAD + ["kl"], [r + ["0"] for r in _rows()], [],
                       ["line 1", "column 'kl' appears twice (columns 6 and 8)"]),
    "one name from two --col": (HEAD, _rows(), ["--col", "samples=kl", "--col", "samples=ent"],
                                ["--col 'samples=ent'", "'samples' is already read from column "
                                 "'kl'"]),
    "--col onto a name a column has": (HEAD, _rows(), ["--col", "samples=ent"],
                                       ["line 1", "'samples' is read from two columns "
                                        "('samples' and 'ent')"]),
    "--predict above 2^53": (HEAD, _rows(), ["--predict", "1e30"],
                             ["--predict must be batches in [1, 2^53]", "1e+30"]),
    "batch above 2^53": (HEAD, _with(_rows(), 2, "batch", "1e30"), [],
                         ["line 4, column batch", "at most 2^53", "'1e30'"]),
    "--form of no form": (HEAD, _rows(), ["--form", "kl>=1=linear"],
                          ["--form 'kl>=1=linear'", "one of power, coupled, knee"]),
    "--form of a clock not asked for": (HEAD, _rows(), ["--form", "ent<=1=power"],
                                        ["'ent<=1' is not one of the --failure conditions "
                                         "(kl>=1)"]),
    # run f never fails: the knee (fitted only where every pilot failed) is not there
    "--form knee with a censored run": (HEAD, _rows(), ["--form", "kl>=1=knee"],
                                        ["--form", "'knee' was not fitted", "power, coupled"]),
    "--form twice": (HEAD, _rows(), ["--form", "kl>=1=power", "--form", "kl >= 1=coupled"],
                     ["--form 'kl >= 1=coupled'", "already has the form 'power'"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_logs_are_one_line_and_exit_2(case, tmp_path, capsys):
    head, rows, extra, needles = BAD[case]
    path = _write(tmp_path / "l.csv", head, rows)
    fail = [] if "--failure" in extra else ["--failure", "kl>=1"]
    with pytest.raises(SystemExit) as e:
        _plan_main()(["--logs", path, "--progress", "acc>=1", *fail, *extra,
                      "--out", str(tmp_path), "--no-figure"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)


def test_a_key_twice_in_a_json_line_is_refused(tmp_path, capsys):
    """JSON Lines: {"kl": 0.1, ..., "kl": 0.9} -- json.loads keeps the last; refused instead."""
    path = tmp_path / "l.jsonl"
    lines = [json.dumps(dict(zip(HEAD, r))) for r in _rows()]
    lines[2] = lines[2][:-1] + ', "kl": "0.9"}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PilotError, match=r"l.jsonl line 3: key 'kl' appears twice"):
        pl.read_logs(str(path), ("acc", "kl"))


def test_predict_above_2_53_is_refused_for_runs_csv_too(tmp_path, capsys):
    """RUNS.csv refuses a batch above 2^53; --predict 1e30 was planned ('B 1e+30: 19316')."""
    with pytest.raises(SystemExit) as e:
        _plan_main()(["--predict", "512", "1e30", "--out", str(tmp_path), "--no-figure"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "[1, 2^53]" in err, err
    assert not os.listdir(tmp_path)


def test_logs_flags_without_logs_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        _plan_main()(["--progress", "acc>=1", "--out", str(tmp_path)])
    assert e.value.code == 2 and "needs --logs" in capsys.readouterr().err


# ---------------------------------------------------------------------------- end to end

def _first_crossings(path, metric, thr, up):
    """An independent reading of the example file: per run, the first crossing by a loop."""
    runs = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            runs.setdefault(r["run"], []).append((float(r["samples"]), float(r[metric])))
    out = {}
    for run, pts in runs.items():
        pts.sort()
        out[run] = None
        for (s0, v0), (s1, v1) in zip(pts, pts[1:]):
            if (v1 >= thr) if up else (v1 <= thr):
                out[run] = s0 + (thr - v0) / (v1 - v0) * (s1 - s0)
                break
    return out


def test_the_command_on_the_example_file_writes_plan_json_and_figure(tmp_path, capsys):
    code = _plan_main()(["--logs", EXAMPLE, "--progress", "heldout_acc>=0.75", "--failure",
                         "drift>=2", "--failure", "kl>=1.5", "--predict", "512", "1024",
                         "--out", str(tmp_path)])
    assert code == 0
    text = capsys.readouterr().out
    assert "failure clocks, one fit each" in text and "kl>=1.5" in text
    out = json.loads((tmp_path / "plan.json").read_text())
    assert [p["batch"] for p in out["predictions"]] == [512.0, 1024.0]
    assert [f["condition"] for f in out["failures"]] == ["drift>=2", "kl>=1.5"]
    assert (tmp_path / "plan.png").stat().st_size > 10_000 and (tmp_path / "plan.pdf").exists()
    for cond, metric, thr in (("heldout_acc>=0.75", "heldout_acc", 0.75), ("kl>=1.5", "kl", 1.5)):
        want = _first_crossings(EXAMPLE, metric, thr, up=True)
        got = {c["run"]: c[cond]["clock"] for c in out["logs"]["curves"] if c[cond]["crossed"]}
        assert got.keys() == {r for r, v in want.items() if v is not None}
        for r in got:
            assert_close(got[r], want[r], rtol=1e-9, atol=0, what=f"{r} {cond}")


def test_logs_figure_is_labelled(tmp_path):
    from twoclock.figures.pilot_logs import logs_figure
    from twoclock.figures.style import axes_labelled
    out = pl.plan_logs(EXAMPLE, "heldout_acc>=0.75", ["drift>=2", "kl>=1.5", "entropy<=0.4"],
                       predict=[512, 1024])
    fig = logs_figure(out)
    assert axes_labelled(fig) and len(fig.axes) == 5


def test_importing_the_logs_code_loads_no_jax():
    code = ("import sys; import twoclock.pilot.logs, "
            "twoclock.figures.pilot_logs; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'optax'));"
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_smoothing_and_step_times_reach_the_plan(tmp_path):
    """A centred window leaves straight-line clocks where they are (interior crossings); a
    seconds_per_update column gives each run its median step time, hence hours to target."""
    rows = [r + [f"{1.0 + int(r[1]) / 32:g}"] for r in _rows()]
    path = _write(tmp_path / "l.csv", HEAD + ["seconds_per_update"], rows)
    out = pl.plan_logs(path, "acc>=1", ["kl>=1"], smoothing="window:400")
    assert out["logs"]["smoothing"] == {"kind": "window", "samples": 400.0, "points": None}
    est = {e["batch"]: e for e in out["estimates"]}
    assert_close(est[8]["progress"], 1080.0, rtol=1e-9, atol=0, what="smoothed progress at 8")
    # B = 8: 1.25 s per update of 8 samples
    assert_close(est[8]["seconds_per_sample"], 1.25 / 8, rtol=1e-12, atol=0, what="step time")
    assert out["recommendation"]["objective"] == "seconds"
