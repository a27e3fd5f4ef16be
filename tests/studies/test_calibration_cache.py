"""The calibration's cached logs (issue 55): each log file written atomically, then a manifest
with the run's fingerprint and every file's sha256 and size, written last; read back only when
all of it matches. An edited, truncated or rewritten file, or one an interrupted run of another
configuration left behind, is named in one line and simulated anew, never read back beside the
others. The simulation is replaced by a deterministic fake (what is cached is the point here);
tests/cli/test_reliability_planner_inputs.py runs the real one end to end."""
import hashlib
import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

from twoclock.atomic import Refused, verify_manifest, write_manifest
from twoclock.config import OptimConfig
from twoclock.models import get as get_model
from twoclock.studies.planner import calibrate, logs_check

QUAD = get_model("quadratic")
N_CKPT = 6


def _fake(monkeypatch, first=0.9, stop_at=None):
    """logs_check.simulate replaced: curves that depend on the config's dim (so that two
    configurations write different bytes); progress starts at `first`. Returns the calls
    [(batches, seeds)]; stop_at: the call index that is interrupted (KeyboardInterrupt)."""
    calls = []

    def simulate(model, cfg, opt, batches, lr0, seeds, budget, n_ckpt, seed=0, keep=None,
                 quiet=True):
        if stop_at is not None and len(calls) == stop_at:
            raise KeyboardInterrupt
        calls.append((tuple(batches), seeds))
        s = np.linspace(budget / n_ckpt, budget, n_ckpt)
        k = 1 + cfg.dim / 1000
        ck = [{"samples": np.broadcast_to(s, (1, seeds, n_ckpt)),
               "progress_frac": np.broadcast_to(
                   first * np.exp(-3 * k * (1 + b / (b + 32)) * s / budget), (1, seeds, n_ckpt)),
               "drift": np.broadcast_to(2 * k * s / budget, (1, seeds, n_ckpt))}
              for b in batches]
        return SimpleNamespace(batches=tuple(batches), ckpt=ck,
                               lrs_BxL=np.ones((len(batches), 1)))
    monkeypatch.setattr(logs_check, "simulate", simulate)
    return calls


def _digests(tmp_path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(tmp_path.glob("*.csv"))}


def _logs(tmp_path, dim=16, **kw):
    return calibrate.simulated_logs(QUAD, QUAD.config(dim=dim), OptimConfig(), str(tmp_path),
                                    N_CKPT, quiet=True, **kw)


def _err_lines(capsys) -> list:
    return [line for line in capsys.readouterr().err.splitlines() if line]


def test_the_manifest_names_each_files_checksum_and_refuses_any_change(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x\n1\n")
    b.write_text("y\n2\n")
    man = str(tmp_path / "m.json")
    assert verify_manifest(man, "fp", [a, b]) == (None, f"{a} has no manifest ({man})")
    write_manifest(man, "fp", [a, b], seconds=1.5)
    got = json.loads((tmp_path / "m.json").read_text())
    assert got["files"]["a.csv"] == {"sha256": hashlib.sha256(b"x\n1\n").hexdigest(),
                                     "bytes": 4}
    assert verify_manifest(man, "fp", [a, b])[0]["seconds"] == 1.5
    assert verify_manifest(man, "other", [a])[1].endswith("is of another configuration or code")
    a.write_text("x\n2\n")  # same size, one digit edited
    assert verify_manifest(man, "fp", [a, b]) == (
        None, f"{a} does not match its manifest's checksum (4 bytes)")
    assert verify_manifest(man, "fp", [b])[0] is not None  # the other file still matches
    b.write_text("y\n")  # truncated
    assert "does not match" in verify_manifest(man, "fp", [b])[1]
    os.remove(b)
    assert verify_manifest(man, "fp", [b])[1].startswith(f"{b} is unreadable (FileNotFound")
    (tmp_path / "m.json").write_text('{"fingerprint": "fp"}')  # the old stamp: no checksums
    assert verify_manifest(man, "fp", [a])[1].startswith(f"{man} is unreadable (KeyError")
    assert verify_manifest(str(tmp_path / "none.json"), "fp", [tmp_path / "c.csv"]) == (None, "")


def test_logs_are_read_back_only_with_their_manifest(tmp_path, monkeypatch, capsys):
    calls = _fake(monkeypatch)
    first = _logs(tmp_path)
    assert not first["reused"] and len(calls) == 2
    assert (tmp_path / "plan_calibration_quadratic.fingerprint.json").exists()
    again = _logs(tmp_path)
    assert again["reused"] and len(calls) == 2 and not _err_lines(capsys)


@pytest.mark.parametrize("spoil, simulated", [
    # one digit of a held-out column edited: the pilots still match, the held-out runs rerun
    pytest.param(lambda p: p["heldout"].write_text(
        p["heldout"].read_text().replace(",1\n", ",7\n", 1)), ["heldout"], id="edited"),
    pytest.param(lambda p: p["pilots"].write_bytes(p["pilots"].read_bytes()[:-40]),
                 ["pilots", "heldout"], id="truncated"),
    pytest.param(lambda p: p["manifest"].write_text("{"), ["pilots", "heldout"],
                 id="manifest-damaged"),
    pytest.param(lambda p: p["heldout"].unlink(), ["heldout"], id="missing"),
])
def test_an_edited_or_truncated_cached_file_is_one_line_and_simulated_anew(
        tmp_path, monkeypatch, capsys, spoil, simulated):
    calls = _fake(monkeypatch)
    _logs(tmp_path)
    want = _digests(tmp_path)
    base = tmp_path / "plan_calibration_quadratic"
    paths = {"pilots": tmp_path / (base.name + "_pilots.csv"),
             "heldout": tmp_path / (base.name + "_heldout.csv"),
             "manifest": tmp_path / (base.name + ".fingerprint.json")}
    spoil(paths)
    capsys.readouterr()
    del calls[:]
    out = _logs(tmp_path)
    lines = _err_lines(capsys)
    assert len(lines) == 1 and "not read back: " in lines[0], lines
    assert not out["reused"]
    # the runs simulated anew are the ones spoiled: 4 pilot batches x 16 seeds, 2 x 64 held out
    assert [c[1] for c in calls] == [{"pilots": 16, "heldout": 64}[k] for k in simulated]
    assert _digests(tmp_path) == want
    assert _logs(tmp_path)["reused"]


@pytest.mark.parametrize("stop", ["during the held-out runs", "before its pilots' manifest"])
def test_an_interrupted_run_of_another_configuration_is_never_mixed_in(tmp_path, monkeypatch,
                                                                      capsys, stop):
    """The recipe of issue 55: run A, then a run B of another configuration killed after it
    rewrote the pilots' file, then A again: A's held-out logs must not be read back beside
    B's pilots."""
    _fake(monkeypatch)
    _logs(tmp_path, dim=16)
    want = _digests(tmp_path)
    if stop == "during the held-out runs":
        _fake(monkeypatch, stop_at=1)
    else:
        monkeypatch.setattr(calibrate, "write_manifest", lambda *a, **k: (_ for _ in ()).throw(
            KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        _logs(tmp_path, dim=32)
    monkeypatch.undo()
    assert _digests(tmp_path) != want  # B's pilots beside A's held-out logs
    calls = _fake(monkeypatch)
    capsys.readouterr()
    out = _logs(tmp_path, dim=16)
    lines = _err_lines(capsys)
    assert len(lines) == 1 and lines[0].endswith("; simulating anew"), lines
    assert not out["reused"] and [c[1] for c in calls] == [16, 64]
    assert _digests(tmp_path) == want


def test_pilots_that_meet_the_target_at_their_first_point_are_refused_before_the_held_out_runs(
        tmp_path, monkeypatch):
    """--n-ckpt 64 --dim 16 of issue 55: the first run stops after the pilots (Refused, one
    line); the second reads the pilots back and is refused without simulating. Every pilot is
    past the target at its first point, so no batch gives a clock (not even a bounded one: no
    smaller batch crossed), and the check refuses as the planner does, naming the batches
    (before: 'already meets --progress', for any first-point run, which the planner itself
    now takes as the bound (0, first point])."""
    calls = _fake(monkeypatch, first=0.01)  # progress_frac already below the target
    panels = ((QUAD, QUAD.config(dim=16)),)
    with pytest.raises(Refused, match=r"^quadratic: --progress 'progress_frac<=0\.05': crossed "
                                      r"between logged points at no pilot batch, the "
                                      r"progress fit needs 3; past it at the first logged point: "
                                      r"B 4, 8, 16, 32; never reached: none$"):
        calibrate.calibrate(panels, OptimConfig(), str(tmp_path), N_CKPT, quiet=True)
    assert [c[1] for c in calls] == [16]  # the pilots, not the held-out runs
    with pytest.raises(Refused, match="past it at the first logged point: B 4, 8, 16, 32"):
        calibrate.calibrate(panels, OptimConfig(), str(tmp_path), N_CKPT, quiet=True)
    assert [c[1] for c in calls] == [16]


def test_the_calibration_refuses_an_output_folder_it_cannot_write_before_simulating(
        tmp_path, monkeypatch):
    calls = _fake(monkeypatch)
    (tmp_path / "file").write_text("")
    with pytest.raises(Refused, match=r"^--out \(the simulated logs\) must be a folder"):
        calibrate.calibrate(((QUAD, QUAD.config()),), OptimConfig(), str(tmp_path / "file"),
                            N_CKPT, quiet=True)
    assert calls == []


def test_a_held_out_grid_that_cannot_fit_is_refused_before_the_pilots_run(tmp_path,
                                                                          monkeypatch):
    """Every grid the calibration will simulate, of every model, is checked before the first
    one runs: here the held-out grid (64 seeds) is the one refused."""
    calls = _fake(monkeypatch)
    checked = []

    def check_fits(model, cfg, opt, sweep, max_lanes, n_dev, analysis_bytes=0):
        checked.append(sweep.seeds)
        if sweep.seeds == 64:
            raise Refused("the sweep cannot fit in memory: (a stand-in)")
    monkeypatch.setattr("twoclock.engine.sweep.check_fits", check_fits)
    with pytest.raises(Refused, match="cannot fit in memory"):
        calibrate.calibrate(((QUAD, QUAD.config()),), OptimConfig(), str(tmp_path), N_CKPT,
                            quiet=True)
    assert checked == [16, 64] and calls == []
    # read back, a model's logs need no memory: only the grids it simulates are checked
    _logs(tmp_path, dim=QUAD.config().dim)
    assert len(calls) == 2
    checked.clear()
    out = calibrate.calibrate(((QUAD, QUAD.config()),), OptimConfig(), str(tmp_path), N_CKPT,
                              quiet=True)
    assert out["simulations"]["quadratic"]["reused"] and checked == [] and len(calls) == 2


def test_a_resumed_run_records_the_pilots_seconds_and_the_held_out_ones(tmp_path, monkeypatch):
    """seconds: what the simulation of the logs took, a run resumed after its pilots included.
    A clock that advances 1 s per reading makes each simulation take 1 s: a run stopped during
    its held-out runs records 1 (the pilots); the run that finishes it reads the pilots back
    and records 1 + 1 = 2, what an uninterrupted run records."""
    ticks = iter(range(1000))
    monkeypatch.setattr(calibrate, "time", SimpleNamespace(perf_counter=lambda: float(next(ticks))))
    _fake(monkeypatch)
    whole = _logs(tmp_path / "whole")
    assert whole["seconds"] == 2.0
    _fake(monkeypatch, stop_at=1)
    with pytest.raises(KeyboardInterrupt):
        _logs(tmp_path / "resumed")
    man = tmp_path / "resumed" / "plan_calibration_quadratic.fingerprint.json"
    assert json.loads(man.read_text())["seconds"] == 1.0
    calls = _fake(monkeypatch)
    out = _logs(tmp_path / "resumed")
    assert [c[1] for c in calls] == [64] and not out["reused"]
    assert out["seconds"] == 2.0 == json.loads(man.read_text())["seconds"]
