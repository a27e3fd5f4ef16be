"""plan_check --logs end to end on the quadratic: the pilots and the held-out batches each run
their own seeds, and the sweeps' estimate lines show unless --quiet."""
import csv
import json

from twoclock.cli import run_study
from twoclock.studies import STUDIES


def _runs(path):
    with open(path, newline="") as f:
        return sorted({r["run"] for r in csv.DictReader(f)})


def test_the_check_from_logs_runs_each_batch_at_its_own_seeds_and_shows_its_sweeps(tmp_path,
                                                                                   capsys):
    argv = ["--logs", "--model", "quadratic", "--pilot-seeds", "2", "--seeds", "3",
            "--n-ckpt", "256", "--out", str(tmp_path)]
    assert run_study.main(STUDIES.plan_check, argv) == 0
    printed = capsys.readouterr()
    err = printed.err
    sweeps = [line for line in err.splitlines() if line.startswith("[quadratic]")
              and "runs in" in line]
    # two sweeps: 3 pilot batches x 2 seeds, then 2 held-out batches x 3 seeds
    assert [s.split(" runs in")[0] for s in sweeps] == ["[quadratic] 6", "[quadratic] 6"], err
    out = json.loads((tmp_path / "plan_check_quadratic_logs.json").read_text())
    pilots, held = out["pilot_batches"], out["heldout_batches"]
    assert held == [4 * max(pilots), 8 * max(pilots)] and out["heldout_seeds"] == 3
    assert _runs(out["log_file"]) == sorted(f"B{b}-s{s}" for b in pilots for s in range(2))
    assert _runs(out["log_file"] + ".heldout.csv") == sorted(
        f"B{b}-s{s}" for b in held for s in range(3))
    assert set(out["logging_interval_samples"]) == {str(b) for b in pilots + held}
    # every scored prediction gets one verdict on the goal, and the printout counts them
    g = out["goal"]
    assert sum(map(len, g.values())) == sum(
        r["vs_logged"]["rel_error"] is not None for r in out["heldout"])
    assert (f"the 15% goal against each answer's 95% CI: within {len(g['within'])}, outside "
            f"{len(g['outside'])}, open {len(g['open'])}") in printed.out
    assert run_study.main(STUDIES.plan_check, [*argv, "--quiet"]) == 0
    assert "[quadratic]" not in capsys.readouterr().err
    # chunks of at most 16 runs (logs_check.MAX_LANES): 20 held-out seeds a batch are 2 chunks
    assert run_study.main(STUDIES.plan_check, [*argv[:-2], "--seeds", "20", "--out",
                                               str(tmp_path)]) == 0
    assert "[quadratic] 40 runs in 4 chunks" in capsys.readouterr().err


def test_the_pilots_flag_moves_the_pilots_and_the_held_out_batches(tmp_path):
    argv = ["--logs", "--model", "quadratic", "--pilots", "64", "16", "32", "--pilot-seeds", "2",
            "--seeds", "2", "--n-ckpt", "256", "--quiet", "--out", str(tmp_path)]
    assert run_study.main(STUDIES.plan_check, argv) == 0
    out = json.loads((tmp_path / "plan_check_quadratic_logs.json").read_text())
    # unsorted on the command line, sorted in the check; held out at 4x and 8x the largest
    assert out["pilot_batches"] == [16, 32, 64] and out["heldout_batches"] == [256, 512]
    assert _runs(out["log_file"]) == sorted(f"B{b}-s{s}" for b in (16, 32, 64) for s in range(2))
    assert sorted({r["batch"] for r in out["heldout"]}) == [256, 512]
