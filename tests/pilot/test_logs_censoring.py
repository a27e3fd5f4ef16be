"""The log planner's censoring and selection (issue 34): a run that never crosses a failure
condition is censored (never counted as crossing at its last log), and several failure
conditions combine by the earliest, per run and per batch, when they cross in different orders.
Hand values: metrics linear in samples, so each interpolated crossing is known exactly."""
import csv

import pytest

from twoclock.pilot import logs as pl

# run, batch, lr (sqrt rule from 0.01 at 8), P (acc = s / P), F (kl = s / F), E (ent = 2 - s/E)
# kl crosses first at B 8 (both runs), in either order at B 16 (c: kl, d: ent), entropy first
# at B 32, where run f's kl never reaches 1 within its 8000 logged samples.
PILOTS = [("a", 8, 0.01, 1000, 3000, 5000), ("b", 8, 0.01, 1100, 3200, 5200),
          ("c", 16, 0.0141421356, 1200, 4000, 4200), ("d", 16, 0.0141421356, 1250, 4400, 4300),
          ("e", 32, 0.02, 1400, 7000, 3500), ("f", 32, 0.02, 1500, 9e9, 3600)]
LAST = 8000


def _log(path):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "batch", "lr", "samples", "acc", "kl", "ent"])
        for run, b, lr, P, F, E in PILOTS:
            for s in range(0, LAST + 1, 100):
                w.writerow([run, b, f"{lr:.10g}", s, f"{s / P:.12g}", f"{s / F:.12g}",
                            f"{2 - s / E:.12g}"])
    return str(path)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    path = _log(tmp_path_factory.mktemp("logs") / "l.csv")
    return path, pl.plan_logs(path, "acc>=1", ["kl>=1", "ent<=1"])


def test_each_run_fails_at_its_earliest_condition(both):
    _, out = both
    runs = {r["run"]: r for r in out["runs"]}
    for run, b, lr, P, F, E in PILOTS:
        r = runs[run]
        want_kl = F if F < LAST else None
        assert r["failures"]["ent<=1"] == pytest.approx(E, rel=1e-9)
        assert r["failures"]["kl>=1"] == (None if want_kl is None
                                          else pytest.approx(want_kl, rel=1e-9))
        assert r["failure_samples"] == pytest.approx(min(E, F), rel=1e-9)
    assert {f["condition"]: f["failed_runs"] for f in out["failures"]} == {"kl>=1": 5,
                                                                           "ent<=1": 6}


def test_each_batch_takes_the_earliest_measured_failure(both):
    """B 8: kl (median 3100 < 5100); B 16: kl (4200 < 4250); B 32: entropy (3550), kl's median
    there is censored (7000 and never)."""
    _, out = both
    est = {e["batch"]: e for e in out["estimates"]}
    for b, med, clock in ((8, 3100.0, "kl>=1"), (16, 4200.0, "kl>=1"), (32, 3550.0, "ent<=1")):
        assert est[b]["failure"] == pytest.approx(med, rel=1e-9), b
        assert est[b]["failure_clock"] == clock
    assert est[8]["progress"] == pytest.approx(1050.0, rel=1e-9)
    assert est[32]["progress"] == pytest.approx(1450.0, rel=1e-9)


def test_a_run_that_never_crossed_is_censored_not_failed_at_its_last_log(both):
    """kl alone: at B 32 one run failed at 7000 and one never did, so the measured median is
    censored and the estimate falls back on the fit (counting f as failing at its last log,
    8000, would give a measured 7500)."""
    path, _ = both
    out = pl.plan_logs(path, "acc>=1", ["kl>=1"])
    est = {e["batch"]: e for e in out["estimates"]}
    assert est[32]["failure"] == est[32]["failure_fit"]
    assert est[32]["failure"] != pytest.approx(7500.0, rel=1e-3)
    assert est[16]["failure"] == pytest.approx(4200.0, rel=1e-9)
    runs = {r["run"]: r for r in out["runs"]}
    assert runs["f"]["failures"] == {"kl>=1": None} and runs["f"]["failure_samples"] is None
    curve = {c["run"]: c for c in out["logs"]["curves"]}["f"]["kl>=1"]
    assert curve["crossed"] is False and curve["clock"] == LAST and curve["line"] is None
    assert out["failures"][0]["failed_runs"] == 5
    # the fit sees five failures and one survivor: its censored run is counted as such
    assert out["fit"]["failure"]["dof"] is not None


def test_clocks_censor_at_the_last_logged_point_of_that_metric(tmp_path):
    """A metric logged only up to 700 samples in a run of 1000: its censored clock is 700 (the
    last point of that metric), not the run's last row; the other run crosses at 400."""
    path = tmp_path / "l.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "batch", "lr", "samples", "kl"])
        for s in range(0, 1001, 100):
            w.writerow(["x", 8, 0.01, s, (s / 5000) if s <= 700 else ""])
            w.writerow(["y", 8, 0.01, s, s / 400])
    logs = pl.read_logs(str(path), ("kl",))
    by = {r.name: c for r, c in zip(logs.runs, pl.clocks(logs, pl.parse_condition(
        "kl>=1", "--failure")))}
    assert (by["x"].crossed, by["x"].samples, by["x"].line) == (False, 700.0, None)
    assert by["y"].crossed and by["y"].samples == pytest.approx(400.0, rel=1e-9)
