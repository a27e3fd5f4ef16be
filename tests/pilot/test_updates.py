"""Optimizer updates per rollout batch, K (issue 50 item 4): a column (`updates`, or
`minibatches` x `epochs`), --updates RUN=K (globs as --batch), verl's and TRL's settings; sources
that disagree refused naming the run; pilots with unequal K refused until a progress form
accounts for K. Expected values: the arithmetic done here by hand (verl: train_batch_size /
ppo_mini_batch_size x ppo_epochs; TRL: num_iterations x steps_per_generation /
gradient_accumulation_steps), and the files' own steps."""
import importlib.util
import json
import math
import os
import shutil

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from tests.helpers import load_script
from tests.pilot.test_trainer_logs import DATA
from twoclock.pilot import logs as pl, updates
from twoclock.pilot.plan import PilotError
from twoclock.pilot.reader import read_logs

needs_tensorboard = pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                                       reason="needs pip install 'twoclock[tensorboard]'")


def _csv(path, runs, extra=lambda name, b: {}):
    """A log of runs {name: batch}: acc = samples / (1000 (1 + b / 256)) at 8 logged points, so
    acc >= 0.5 is crossed at 500 (1 + b / 256) samples (linear: exact); extra(name, b): the
    run's additional columns."""
    cols = None
    lines = []
    for name, b in runs.items():
        for t in range(1, 9):
            s = t * 250 * (1 + b / 256)
            row = {"run": name, "batch": b, "lr": 1e-3, "samples": s,
                   "acc": s / (1000 * (1 + b / 256)), **extra(name, b)}
            cols = cols or list(row)
            lines.append(",".join(str(row[c]) for c in cols))
    path.write_text(",".join(cols) + "\n" + "\n".join(lines) + "\n")
    return str(path)


RUNS = {"b64": 64, "b128": 128, "b256": 256}


def test_verl_settings_by_hand():
    """1024 prompts a rollout batch in mini-batches of 256 prompts, 2 epochs: 4 x 2 = 8 updates,
    one logged step a rollout batch; 8 responses a prompt do not change K (verl multiplies the
    mini-batch by rollout.n itself)."""
    s = {"data/train_batch_size": 1024, "actor_rollout_ref/rollout/n": 8,
         "actor_rollout_ref/actor/ppo_mini_batch_size": 256,
         "actor_rollout_ref/actor/ppo_epochs": 2}
    k, per, why = updates.from_settings(s)
    assert (k, per) == (8.0, 1.0) and "ppo_mini_batch_size 256" in why
    del s["actor_rollout_ref/actor/ppo_epochs"]  # verl's default: 1 epoch
    assert updates.from_settings(s)[:2] == (4.0, 1.0)
    with pytest.raises(PilotError, match="train_batch_size 1024 is not a whole number of"):
        updates.from_settings({**s, "actor_rollout_ref/actor/ppo_mini_batch_size": 300})


def test_trl_settings_by_hand():
    """steps_per_generation 4 over accumulation 2: 2 optimizer updates a generation batch;
    num_iterations 3 takes each 3 times: K = 6, each a logged step."""
    s = {"per_device_train_batch_size": 16, "gradient_accumulation_steps": 2,
         "generation_batch_size": 128, "steps_per_generation": 4, "num_iterations": 3}
    assert updates.from_settings(s)[:2] == (6.0, 6.0)
    assert updates.from_settings({**s, "num_iterations": 1, "steps_per_generation": 2})[:2] \
        == (1.0, 1.0)
    assert updates.from_settings({"learning_rate": 1e-6}) == (None, 1.0, "")
    with pytest.raises(PilotError, match="steps_per_generation 3 is not a whole number"):
        updates.from_settings({**s, "steps_per_generation": 3})


@given(st.integers(1, 64), st.integers(1, 8))
@example(1, 1)
@example(64, 8)
def test_the_flag_reads_whole_numbers_only(k, e):
    assert updates.parse([f"run={k}", f"g*={e}"]) == {"run": float(k), "g*": float(e)}


@pytest.mark.parametrize("bad", ["run=0", "run=1.5", "run=-2", "run=nan", "run", "=2",
                                 "run=inf"])
def test_the_flag_refuses_what_is_not_a_count(bad):
    with pytest.raises(PilotError, match=r"--updates .*: expected RUN=K with K a whole number"):
        updates.parse([bad])


def test_columns_give_k_and_a_change_within_a_run_is_refused(tmp_path):
    """updates 4; minibatches 2 x epochs 3 = 6; the two disagreeing on a row, or K changing
    within a run, refused in one line naming the cell."""
    p = _csv(tmp_path / "u.csv", RUNS, lambda n, b: {"updates": 4})
    assert {r.name: r.updates for r in read_logs(p, ("acc",)).runs} == \
        {"b64": 4, "b128": 4, "b256": 4}
    p = _csv(tmp_path / "m.csv", RUNS, lambda n, b: {"minibatches": b // 64, "epochs": 3})
    assert {r.name: r.updates for r in read_logs(p, ("acc",)).runs} == \
        {"b64": 3, "b128": 6, "b256": 12}
    p = _csv(tmp_path / "x.csv", RUNS, lambda n, b: {"updates": 4, "minibatches": 2,
                                                     "epochs": 3})
    with pytest.raises(PilotError, match=r"line 2, column updates: updates 4 but minibatches x "
                                         r"epochs = 6"):
        read_logs(p, ("acc",))
    lines = (tmp_path / "u.csv").read_text().splitlines()
    lines[3] = lines[3].rsplit(",", 1)[0] + ",2"  # b64's third row
    (tmp_path / "c.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(PilotError, match=r"line 4, column updates: run 'b64' has 2 updates per "
                                         r"rollout batch here and 4 at line 2: one K per run"):
        read_logs(str(tmp_path / "c.csv"), ("acc",))
    p = _csv(tmp_path / "f.csv", RUNS, lambda n, b: {"updates": 1.5})
    with pytest.raises(PilotError, match=r"column updates: must be a whole number >= 1"):
        read_logs(p, ("acc",))


def test_flag_globs_and_a_conflict_with_the_column_naming_the_run(tmp_path):
    p = _csv(tmp_path / "a.csv", RUNS)
    got = read_logs(p, ("acc",), updates={"b*": 2.0, "b256": 8.0}).runs
    assert {r.name: r.updates for r in got} == {"b64": 2, "b128": 2, "b256": 8}
    assert {r.name: r.updates for r in read_logs(p, ("acc",)).runs} == \
        {"b64": 1, "b128": 1, "b256": 1}  # nothing gives K: one update a batch
    with pytest.raises(PilotError, match=r"--updates x\*=2: no run 'x\*'"):
        read_logs(p, ("acc",), updates={"x*": 2.0})
    p = _csv(tmp_path / "b.csv", RUNS, lambda n, b: {"updates": 4})
    assert read_logs(p, ("acc",), updates={"b*": 4.0}).runs[0].updates == 4  # agreeing: fine
    with pytest.raises(PilotError, match=r"^run 'b128': updates per rollout batch disagree: "
                                         r"column updates gives 4; --updates gives 2; give one$"):
        read_logs(p, ("acc",), updates={"b128": 2.0})


def test_equal_k_plans_and_carries_k_unequal_k_is_refused_naming_the_runs(tmp_path):
    """All pilots at K = 4: planned as before (the same clocks, the fit unchanged), each run's
    K in plan.json and in the printout; b256 at K = 8: refused in one line naming the runs."""
    p = _csv(tmp_path / "a.csv", RUNS)
    base = pl.plan_logs(p, "acc>=0.5", [])
    out = pl.plan_logs(p, "acc>=0.5", [], updates={"b*": 4.0})
    assert [r["updates"] for r in out["runs"]] == [4, 4, 4]
    assert [r["updates"] for r in base["runs"]] == [1, 1, 1]
    # the crossings by hand: 500 (1 + b / 256)
    assert [r["progress_samples"] for r in out["runs"]] == pytest.approx(
        [500 * (1 + b / 256) for b in RUNS.values()], rel=1e-12)
    # the same numbers, each prediction for runs that take the pilots' K (--predict B alone)
    assert [p.pop("updates") for p in out["predictions"]] == [4.0] * 3
    assert [p.pop("updates") for p in base["predictions"]] == [1.0] * 3
    assert out["predictions"] == base["predictions"]
    text = pl.table(out)
    assert "optimizer updates per rollout batch (K): b64 4, b128 4, b256 4" in text
    assert "(K)" not in pl.table(base)
    with pytest.raises(PilotError) as e:
        pl.plan_logs(p, "acc>=0.5", [], updates={"b64": 4.0, "b128": 4.0, "b256": 8.0})
    msg = str(e.value)
    assert "\n" not in msg and "K 4: b64, b128; K 8: b256" in msg
    assert updates.check_mixed(read_logs(p, ("acc",), updates={"b64": 2.0}).runs,
                               accounted=True) is None  # a form that accounts for K: allowed


def test_the_adam_form_plans_unequal_k_and_reads_it(tmp_path):
    """With progress_form 'adam' (the form that reads each run's K) pilots with unequal K are
    planned, each run's K reaches the form (K 4 at B 256 moves the prediction at B 1024: the
    same clocks at fewer samples per update), and another form name is refused."""
    p = _csv(tmp_path / "a.csv", RUNS)
    one = pl.plan_logs(p, "acc>=0.5", [], predict=[1024], progress_form="adam")
    four = pl.plan_logs(p, "acc>=0.5", [], predict=[1024], progress_form="adam",
                        updates={"b256": 4.0})
    assert [r["updates"] for r in four["runs"]] == [1, 1, 4]
    assert four["predictions"][0]["progress_samples"]["median"] != \
        one["predictions"][0]["progress_samples"]["median"]
    with pytest.raises(PilotError, match=r"--progress-form: adam or auto \(got 'sgd'\)"):
        pl.plan_logs(p, "acc>=0.5", [], progress_form="sgd")


def test_the_command_reads_updates(tmp_path):
    from twoclock.pilot import config
    p = _csv(tmp_path / "a.csv", RUNS)
    out = config.plan(config.PlanConfig(logs=config.LogsInput(
        path=p, progress="acc>=0.5", updates=("b*=3",))))
    assert [r["updates"] for r in out["runs"]] == [3, 3, 3]


# ------------------------------------------------------------------ the writers' own files
def _fixtures():
    return load_script("tools/trainer_log_fixtures.py", "fixtures")


def _trl_folder(tmp_path, **changes):
    """trl_output/grpo_bs64_g8 (16 per device, 2 processes, accumulation 2) with its `args`
    text rewritten by the writer the fixture used (add_text('args', ...))."""
    src = os.path.join(DATA, "trl_output", "grpo_bs64_g8")
    d = tmp_path / "grpo_bs64_g8"
    shutil.copytree(src, d)
    runs = d / "runs" / "Oct17_12-00-00_vm"
    fx = _fixtures()
    args = json.loads(fx._grpo_args(64, 48))
    shutil.rmtree(runs)
    with open(d / "trainer_state.json") as f:
        steps = np.unique([e["step"] for e in json.load(f)["log_history"]])
    w = fx._TorchWriter(str(runs))
    w.add_text("args", json.dumps({**args, **changes}, indent=2))
    for t in steps:  # the scalars beside it, as TensorBoardCallback names them
        for k, v in fx._tb_tags(fx.trl_logs(64, int(t))).items():
            w.add_scalar(k, v, int(t))
    w.close()
    return str(d), steps


@needs_tensorboard
def test_a_trl_folder_with_num_iterations_2(tmp_path):
    """num_iterations 2: a generation batch of 16 x 2 x 2 = 64 responses is taken in 2 x 2 / 2
    = 2 logged optimizer steps, so a step consumes 32 fresh responses (samples = 32 x step)."""
    d, steps = _trl_folder(tmp_path, num_iterations=2)
    (r,) = read_logs(d, ("acc",), preset="trl").runs
    assert (r.batch, r.updates) == (64.0, 2.0)
    np.testing.assert_array_equal(r.samples_R, 32.0 * steps)
    with pytest.raises(PilotError, match=r"run 'grpo_bs64_g8': updates per rollout batch "
                                         r"disagree: --updates gives 4; the trainer's settings "
                                         r"\(TRL: num_iterations 2 x steps_per_generation 2 / "
                                         r"gradient_accumulation_steps 2\) gives 2; give one"):
        read_logs(d, ("acc",), preset="trl", updates={"grpo*": 4.0})


@needs_tensorboard
def test_a_trl_folder_with_two_steps_a_generation(tmp_path):
    """steps_per_generation 4 over accumulation 2 with a generation batch of 128 (2 processes):
    batch 128, K = 2, a logged step 128 / 2 = 64 responses (as before: the same samples)."""
    d, steps = _trl_folder(tmp_path, steps_per_generation=4, generation_batch_size=128)
    (r,) = read_logs(d, ("acc",), preset="trl").runs
    assert (r.batch, r.updates) == (128.0, 2.0)
    np.testing.assert_array_equal(r.samples_R, 64.0 * steps)


@needs_tensorboard
def test_verl_config_as_hparams_gives_k(tmp_path):
    """verl's config logged by add_hparams: 8 prompts x 8 = 64 responses a rollout batch, in
    mini-batches of 2 prompts, 3 epochs: K = 8 / 2 x 3 = 12; samples = 64 x step."""
    w = _fixtures()._TorchWriter(str(tmp_path / "tb" / "run"))
    for t in range(1, 5):
        w.add_scalar("acc", 0.1 * t, t)
        w.add_scalar("lr", 1e-6, t)
    w.add_hparams({"data.train_batch_size": 8, "actor_rollout_ref.rollout.n": 8,
                   "actor_rollout_ref.actor.ppo_mini_batch_size": 2,
                   "actor_rollout_ref.actor.ppo_epochs": 3}, {"m": 1.0})
    w.close()
    (r,) = read_logs(str(tmp_path / "tb"), ("acc",)).runs
    assert (r.batch, r.updates) == (64.0, 12.0)
    np.testing.assert_array_equal(r.samples_R, [64, 128, 192, 256])
    assert math.isclose(read_logs(str(tmp_path / "tb"), ("acc",), updates={"run": 12.0})
                        .runs[0].updates, 12)
