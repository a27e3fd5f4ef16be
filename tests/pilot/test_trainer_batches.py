"""A run's batch from what the trainer wrote, with no --batch (issue 51): a TRL output folder
(trainer_state.json beside TensorBoard events holding the `args` text), torch's SummaryWriter
with add_hparams, verl's logger root, a W&B-style CSV with only a step column; --batch globs,
--batch-from-name, --samples-from-step, --restarts keep-last. Fixtures: tests/data/trainer_logs
(README.md says how each was written); expected values are the curves they were written from
(tests/pilot/test_trainer_logs.py's own copy) and the batch arithmetic done here by hand."""
import importlib.util
import json
import math
import os
import shutil

import numpy as np
import pytest

from tests.pilot.test_trainer_logs import (DATA, METRICS, STEPS, TB, VERL, _plan, check_runs,
                                           expected)
from tests.helpers import load_script
from twoclock.pilot import batches
from twoclock.pilot.plan import PilotError
from twoclock.pilot.reader import read_logs

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorboard") is None,
                                reason="needs pip install 'twoclock[tensorboard]'")
TRL_OUT, TB_HP = os.path.join(DATA, "trl_output"), os.path.join(DATA, "tensorboard_hparams")
VERL_ROOT = os.path.dirname(VERL)
# the TRL runs' settings (tools/trainer_log_fixtures.py): 16 per device; processes, accumulation
PROCESSES, ACCUMULATION = {64: 2, 128: 4, 256: 4}, {64: 2, 128: 2, 256: 4}


def _fixtures():
    return load_script("tools/trainer_log_fixtures.py", "fixtures")


def _plan_json(tmp_path, path, *extra):
    code, _, err = _plan(tmp_path, str(path), *extra)
    assert code == 0, err
    with open(tmp_path / "out" / "plan.json") as f:
        return {r["run"]: r for r in json.load(f)["runs"]}


def _clocks_are_the_curves(runs, batch_of):
    """acc = s / P crosses 0.5 at P / 2 and kl = s / F crosses 1 at F (linear: exact)."""
    assert len(runs) == 3
    for name, r in runs.items():
        b = batch_of(name)
        assert r["batch"] == b
        assert r["progress_samples"] == pytest.approx(500 * (1 + b / 256), rel=1e-6)
        assert r["failure_samples"] == pytest.approx(2000 * (b / 64) ** 0.25, rel=1e-6)


def test_a_trl_output_folder_is_read_from_trainer_state_with_the_batch_from_its_args():
    """Per optimizer step: 16 per device x processes x accumulation, the processes read from
    generation_batch_size / (16 x steps_per_generation); trainer_state.json's train_batch_size
    (16, per device) is not the batch. Its steps are trainer_state.json's (full precision),
    not the float32 events beside it."""
    logs = read_logs(TRL_OUT, METRICS + ("seconds_per_update",), preset="trl")
    want = {f"grpo_bs{b}_g8": 16 * PROCESSES[b] * ACCUMULATION[b] for b in STEPS}
    assert {r.name: r.batch for r in logs.runs} == want == {
        "grpo_bs64_g8": 64, "grpo_bs128_g8": 128, "grpo_bs256_g8": 256}
    for r in logs.runs:
        b = int(r.batch)
        steps = np.arange(2, STEPS[b] + 1, 2)
        np.testing.assert_array_equal(r.samples_R, steps * b)
        np.testing.assert_allclose(r.metrics["kl"], [expected(b, t)["kl"] for t in steps],
                                   rtol=1e-15)  # float64: trainer_state.json, not the events
        assert logs.where(int(r.line_R[0])).endswith("trainer_state.json line 12")


def test_plan_py_plans_a_trl_output_folder_with_no_batch_flag(tmp_path):
    runs = _plan_json(tmp_path, TRL_OUT, "--preset", "trl")
    _clocks_are_the_curves(runs, lambda n: int(n[len("grpo_bs"):].split("_")[0]))


def test_a_trl_output_folder_of_events_alone_takes_its_batch_from_the_args_text(tmp_path):
    """No trainer_state.json (a crashed run): the TensorBoard runs under runs/<date_host>/ are
    read, named by their path, the batch from their args text, lr from the lr tag."""
    d = tmp_path / "out"
    shutil.copytree(TRL_OUT, d)
    for b in STEPS:
        os.remove(d / f"grpo_bs{b}_g8" / "trainer_state.json")
    logs = read_logs(str(d), ("kl",), preset="trl", lr={"*": 1e-6})
    assert {r.name: (r.batch, r.lr) for r in logs.runs} == {
        f"grpo_bs{b}_g8/runs/Oct17_12-00-00_vm": (b, 1e-6) for b in STEPS}
    for r in logs.runs:
        b = int(r.batch)
        np.testing.assert_allclose(r.metrics["kl"], [expected(b, t)["kl"] for t in
                                                     range(2, STEPS[b] + 1, 2)], rtol=1e-6)


def test_add_hparams_sub_folders_are_merged_into_their_run(tmp_path):
    """torch's add_hparams writes <run>/<time.time()>/ with the hparams and a scalar of the
    metric at step 0: one run each (b64, b128, b256), not six, planned by their names."""
    logs = read_logs(TB_HP, ("acc", "kl"), batch_from_name=r"b(\d+)")
    assert sorted(r.name for r in logs.runs) == ["b128", "b256", "b64"]
    check_runs(logs, every=1, rtol=1e-6, metrics=("acc", "kl"), step_time=False)
    runs = _plan_json(tmp_path, TB_HP, "--batch-from-name", r"b(\d+)")
    _clocks_are_the_curves(runs, lambda n: int(n[1:]))


def test_tf_style_hparams_runs_under_a_config_root_stay_runs(tmp_path):
    """tf.summary's hparams API writes the experiment at the root and each run's hparams in the
    run itself (many steps): two runs, each with its own batch, nothing merged into the root."""
    fx = _fixtures()
    root = fx._TorchWriter(str(tmp_path / "tb"))
    root.add_summary(_hparams_summary({}))
    root.close()
    for name, prompts in (("run-0", 4), ("run-1", 16)):
        w = fx._TorchWriter(str(tmp_path / "tb" / name))
        w.add_summary(_hparams_summary({"data.train_batch_size": prompts,
                                        "actor_rollout_ref.rollout.n": 8}))
        for t in range(1, 5):
            w.add_scalar("acc", 0.1 * t, t)
            w.add_scalar("lr", 1e-6, t)
        w.close()
    logs = read_logs(str(tmp_path / "tb"), ("acc",))
    assert [(r.name, r.batch) for r in logs.runs] == [("run-0", 32.0), ("run-1", 128.0)]


def _hparams_summary(hparams):
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2 as pd
    ssi = pd.SessionStartInfo()
    for k, v in hparams.items():
        ssi.hparams[k].number_value = v
    data = pd.HParamsPluginData(version=0, session_start_info=ssi)
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
        plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString()))
    return Summary(value=[Summary.Value(tag=metadata.SESSION_START_INFO_TAG, metadata=smd)])


def test_the_hparams_of_add_hparams_give_the_batch_where_they_record_it(tmp_path):
    """verl's config logged as hparams: data.train_batch_size 8 prompts x rollout.n 8 = 64."""
    w = _fixtures()._TorchWriter(str(tmp_path / "tb" / "run"))
    for t in range(1, 5):
        w.add_scalar("acc", 0.1 * t, t)
        w.add_scalar("lr", 1e-6, t)
    w.add_hparams({"data.train_batch_size": 8, "actor_rollout_ref.rollout.n": 8}, {"m": 1.0})
    w.close()
    logs = read_logs(str(tmp_path / "tb"), ("acc",))
    assert [(r.name, r.batch) for r in logs.runs] == [("run", 64.0)]
    np.testing.assert_array_equal(logs.runs[0].samples_R, [64, 128, 192, 256])


def test_verl_logger_root_is_found_one_level_down(tmp_path):
    """<root>/<project>/<experiment>.jsonl: runs project/experiment, planned by their names."""
    logs = read_logs(VERL_ROOT, METRICS, preset="verl", batch_from_name=r"/b(\d+)$")
    assert sorted(r.name for r in logs.runs) == [
        "gsm8k_pilots/b128", "gsm8k_pilots/b256", "gsm8k_pilots/b64"]
    runs = _plan_json(tmp_path, VERL_ROOT, "--preset", "verl", "--batch-from-name", r"b(\d+)")
    _clocks_are_the_curves(runs, lambda n: int(n.rsplit("/b", 1)[1]))


def _wandb_csv(path):
    """A W&B history export: Name, _step, metrics; no samples, no batch (the name says it)."""
    rows = ["Name,_step,_runtime,train/learning_rate,train/kl,train/acc"]
    for b, n in STEPS.items():
        for t in range(2, n + 1, 2):
            e = expected(b, t)
            rows.append(f"grpo_bs{b}_run,{t},{3.0 * t},{1e-6 * math.sqrt(b / 64)!r},"
                        f"{e['kl']!r},{e['acc']!r}")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


WANDB_COLS = ["--col", "run=Name", "--col", "lr=train/learning_rate", "--col", "kl=train/kl",
              "--col", "acc=train/acc"]


def test_a_wandb_style_csv_with_only_a_step_column_is_planned_as_step_x_batch(tmp_path):
    p = _wandb_csv(tmp_path / "wandb.csv")
    runs = _plan_json(tmp_path, p, *WANDB_COLS, "--samples-from-step", "_step",
                      "--batch-from-name", r"bs(\d+)")
    _clocks_are_the_curves(runs, lambda n: int(n[len("grpo_bs"):].split("_")[0]))
    # --batch with a glob gives the same batches
    again = _plan_json(tmp_path, p, *WANDB_COLS, "--samples-from-step", "_step", "--batch",
                       "grpo_bs64*=64", "--batch", "grpo_bs128*=128", "--batch", "*256*=256")
    assert {k: r["batch"] for k, r in again.items()} == {k: r["batch"] for k, r in runs.items()}


def test_a_step_column_mapped_as_samples_is_refused_in_one_line(tmp_path):
    p = _wandb_csv(tmp_path / "wandb.csv")
    code, _, err = _plan(tmp_path, p, *WANDB_COLS, "--col", "samples=_step",
                         "--batch-from-name", r"bs(\d+)")
    assert code == 2 and err.count("\n") == 1, err
    for needle in ("column _step", "gains 2 samples", "fewer than its batch",
                   "--samples-from-step"):
        assert needle in err, (needle, err)


def test_batch_globs_and_name_patterns_on_tensorboard_runs():
    logs = read_logs(TB, ("kl",), preset="trl", batch={"b*": 64.0, "b128": 128.0, "b256": 256.0})
    assert {r.name: r.batch for r in logs.runs} == {"b64": 64, "b128": 128, "b256": 256}
    with pytest.raises(PilotError, match=r"run 'b256' matches b\*=64 and b2\?6=32; give it"):
        read_logs(TB, ("kl",), preset="trl", batch={"b*": 64.0, "b2?6": 32.0})
    with pytest.raises(PilotError, match=r"--batch grpo\*=64: no run 'grpo\*'"):
        read_logs(TB, ("kl",), preset="trl", batch={"grpo*": 64.0})
    with pytest.raises(PilotError, match=r"run 'b128': the TensorBoard records no batch; give "
                                         r"--batch b128=B .*--batch-from-name REGEX that"):
        read_logs(TB, ("kl",), preset="trl", batch_from_name=r"b(64|256)$")


def test_settings_arithmetic_by_hand():
    """16 per device, 4 steps per generation of 128 responses -> 2 processes; the batch is
    the generation (rollout) batch, 16 x 2 x 4 = 128, taken in 4 / 2 = 2 optimizer updates of
    16 x 2 x 2 = 64 (the updates: tests/pilot/test_updates.py)."""
    args = {"per_device_train_batch_size": 16, "gradient_accumulation_steps": 2,
            "generation_batch_size": 128, "steps_per_generation": 4}
    assert batches.from_settings(args) == (128.0, "")
    plain = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 4}
    got, why = batches.from_settings(plain)
    assert got is None and "not the processes" in why and "8 x processes x 4" in why
    with pytest.raises(PilotError, match="generation_batch_size 100 is not"):
        batches.from_settings({**args, "generation_batch_size": 100})
    assert batches.from_settings({"data/train_batch_size": 32,
                                  "actor_rollout_ref/rollout/n": 4}) == (128.0, "")
    assert batches.from_settings({"learning_rate": 1e-6}) == (None, "")


def _verl_resumed(tmp_path):
    """Run b64 crashed after step 30 and resumed from its step-20 checkpoint: steps 21-30 are
    logged twice, the second time with kl + 1."""
    d = tmp_path / "v"
    shutil.copytree(VERL, d)
    lines = (d / "b64.jsonl").read_text().splitlines()
    again = []
    for ln in lines[20:30]:
        r = json.loads(ln)
        r["data"]["actor/kl_loss"] += 1
        again.append(json.dumps(r))
    (d / "b64.jsonl").write_text("\n".join(lines[:30] + again + lines[30:]) + "\n")
    return d


def test_a_resumed_run_is_refused_or_its_last_copy_kept(tmp_path):
    d = _verl_resumed(tmp_path)
    flags = {"b64": 64.0, "b128": 128.0, "b256": 256.0}
    with pytest.raises(PilotError, match=r"b64.jsonl line 31, column samples: samples not "
                                         r"increasing.*--restarts keep-last"):
        read_logs(str(d), ("kl",), preset="verl", batch=flags)
    logs = read_logs(str(d), ("kl",), preset="verl", batch=flags, restarts="keep-last")
    b64 = next(r for r in logs.runs if r.name == "b64")
    want = [expected(64, t)["kl"] + (1 if 21 <= t <= 30 else 0) for t in range(1, 49)]
    np.testing.assert_allclose(b64.metrics["kl"], want, rtol=1e-12)
    np.testing.assert_array_equal(b64.samples_R, np.arange(1, 49) * 64)


def test_a_restarted_tensorboard_run_keeps_the_later_event_file_with_keep_last(tmp_path):
    from tensorboard.summary import DirectoryOutput, Writer
    d = tmp_path / "tb"
    shutil.copytree(TB, d)
    w = Writer(DirectoryOutput(str(d / "b64")))
    w.add_scalar("train/kl", 123.0, 10)
    w.close()
    flags = {"b64": 64.0, "b128": 128.0, "b256": 256.0}
    with pytest.raises(PilotError, match=r"logged twice at step 10.*--restarts keep-last"):
        read_logs(str(d), ("kl",), preset="trl", batch=flags)
    logs = read_logs(str(d), ("kl",), preset="trl", batch=flags, restarts="keep-last")
    b64 = next(r for r in logs.runs if r.name == "b64")
    assert b64.metrics["kl"][list(b64.samples_R).index(640)] == 123.0


BAD = {  # extra argv on a path -> needles of the one line
    "bad regex": (TB_HP, ["--batch-from-name", "b(("], ["--batch-from-name 'b(('",
                                                         "not a regular expression"]),
    "two groups": (TB_HP, ["--batch-from-name", r"(b)(\d+)"], ["at most one group"]),
    "a name giving no number": (TB_HP, ["--batch-from-name", r"(b)"],
                                ["run 'b128' gives 'b', not a batch > 0"]),
    "samples from step on trainer files": (TB_HP, ["--batch-from-name", r"b(\d+)",
                                                   "--samples-from-step", "step"],
                                           ["--samples-from-step", "already step x batch"]),
    "--restarts unknown": (TB_HP, ["--restarts", "keep-first"], ["--restarts", "keep-last"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_batch_flags_are_one_line_and_exit_2(case, tmp_path):
    path, extra, needles = BAD[case]
    code, _, err = _plan(tmp_path, path, *extra)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)


def test_csv_flags_that_clash_with_its_columns_are_one_line(tmp_path):
    p = tmp_path / "l.csv"
    p.write_text("run,batch,lr,samples,acc,kl,step\n" + "".join(
        f"a,8,0.1,{8 * t},{0.1 * t},{0.2 * t},{t}\n" for t in range(10)))
    for extra, needle in ((["--samples-from-step", "step"], "has a 'samples' column"),
                          (["--batch-from-name", "a"], "has a 'batch' column")):
        code, _, err = _plan(tmp_path, str(p), *extra)
        assert code == 2 and needle in err and err.count("\n") == 1, err


def test_globs_that_agree_on_a_runs_batch_are_one_value():
    """Two globs matching run b64 with the one value 64 give it 64 (the docstring's 'all with
    one value'); only different values are refused. Read from the TensorBoard runs too."""
    given = {"b*": 64.0, "*4": 64.0, "b128": 128.0}
    assert batches.per_run(given, "b64", "--batch") == 64.0
    assert batches.per_run(given, "b128", "--batch") == 128.0  # its own key first
    assert batches.per_run(given, "c1", "--batch") is None
    logs = read_logs(TB, ("kl",), preset="trl",
                     batch={"b*": 64.0, "*4": 64.0, "b128": 128.0, "b256": 256.0})
    assert {r.name: r.batch for r in logs.runs} == {"b64": 64, "b128": 128, "b256": 256}


def test_a_name_pattern_without_a_group_gives_its_whole_match():
    """--batch-from-name '(?<=b)\\d+' has no group: the batch is what it matches, 64 in b64."""
    assert batches.from_name(batches.name_pattern(r"\d+$"), "run_b128") == 128.0
    assert batches.from_name(batches.name_pattern(r"b(\d+)"), "run_b128") == 128.0
    logs = read_logs(TB_HP, ("acc", "kl"), batch_from_name=r"(?<=b)\d+")
    assert sorted((r.name, r.batch) for r in logs.runs) == [
        ("b128", 128.0), ("b256", 256.0), ("b64", 64.0)]
