"""A trainer's own files read as they are (issue 31, item 5): a TensorBoard directory of runs, TRL's
trainer_state.json, verl's file logger, with --preset trl / verl; bad files are one line, exit 2.

The fixtures (tests/data/trainer_logs) were written by the real writers; the values expected here
are the curves the writer was given (tools/trainer_log_fixtures.py), kept here as their own copy.
"""
from contextlib import redirect_stderr, redirect_stdout
import importlib.util
import io
import json
import math
import os
import shutil
import sys

import numpy as np
import pytest

from tests.helpers import plan_main
from twoclock.pilot import presets
from twoclock.pilot.plan import PilotError
from twoclock.pilot.reader import read_logs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "trainer_logs")
TB, TB2, TRL = (os.path.join(DATA, d) for d in ("tensorboard", "tensorboard_v2", "trl"))
VERL = os.path.join(DATA, "verl", "gsm8k_pilots")
STEPS = {64: 48, 128: 32, 256: 24}  # batch: last step; TRL logs every 2nd, evaluates every 4th
BATCH_FLAGS = {f"b{b}": float(b) for b in STEPS}
METRICS = ("acc", "heldout_acc", "kl", "entropy", "clip")
needs_tensorboard = pytest.mark.skipif(
    importlib.util.find_spec("tensorboard") is None,
    reason="reading TensorBoard files needs the optional extra: pip install "
           "'twoclock[tensorboard]' (the missing-extra error is tested without it)")


def expected(b, t):
    """The curves the fixtures were written from, at step t of the run at batch b."""
    s = t * b
    P, F = 1000 * (1 + b / 256), 2000 * (b / 64) ** 0.25
    return {"acc": min(1.0, s / P), "heldout_acc": s / (1.2 * P), "kl": s / F,
            "entropy": 2 - s / (1.2 * F), "clip": 0.01 * s / F}


def check_runs(logs, every, rtol, metrics=METRICS, step_time=True, names=None):
    """Each run (b64, b128, b256, or `names`: {run: batch}): batch, peak lr, samples = step x
    batch, every metric."""
    names = names or {f"b{b}": b for b in STEPS}
    assert sorted(r.name for r in logs.runs) == sorted(names)
    for r in logs.runs:
        b = names[r.name]
        assert r.batch == b
        assert r.lr == pytest.approx(1e-6 * math.sqrt(b / 64), rel=1e-6)  # the peak, not warmup
        steps = np.arange(every, STEPS[b] + 1, every)
        np.testing.assert_array_equal(r.samples_R, steps * b)
        if step_time:
            assert r.seconds_per_update == pytest.approx(1 + b / 256, rel=1e-6)
        for m in metrics:
            want = np.array([expected(b, t)[m] for t in steps])
            got = r.metrics[m]
            if m == "heldout_acc":  # evaluated every 4th step only
                at = steps % 4 == 0
                assert np.isnan(got[~at]).all()
                got, want = got[at], want[at]
            np.testing.assert_allclose(got, want, rtol=rtol, err_msg=f"{r.name} {m}")


def test_trainer_state_runs_read_with_batch_lr_samples_and_metrics():
    """b64/trainer_state.json, b128/checkpoint-32/, b256/ with checkpoint-8 and checkpoint-24:
    the last checkpoint is read (by number: '8' > '24' as text)."""
    logs = read_logs(TRL, METRICS + ("seconds_per_update",), preset="trl")
    check_runs(logs, every=2, rtol=1e-12)
    b256 = next(r for r in logs.runs if r.name == "b256")
    assert b256.samples_R[-1] == 24 * 256
    # errors name the log_history entry's line in the file
    i = int(np.argmax(b256.metrics["kl"] >= 1))
    where = logs.where(int(b256.line_R[i]))
    path, _, line = where.rpartition(" line ")
    with open(path) as f:
        entry = f.read().splitlines()[int(line) - 1:int(line) + 20]
    assert path.endswith(os.path.join("b256", "checkpoint-24", "trainer_state.json"))
    assert entry[0].strip() == "{" and f'"step": {2 * (i + 1)},' in [e.strip() for e in entry]


def test_one_trainer_state_file_is_one_run():
    logs = read_logs(os.path.join(TRL, "b64", "trainer_state.json"), ("kl",), preset="trl")
    assert [(r.name, r.batch) for r in logs.runs] == [("b64", 64)]


def test_verl_file_logger_runs_read_with_the_batch_given():
    logs = read_logs(VERL, METRICS + ("ppo_kl",), preset="verl", batch=BATCH_FLAGS)
    check_runs(logs, every=1, rtol=1e-12)
    for r in logs.runs:  # kl is the KL to the reference (kl_loss), not the PPO step's ppo_kl
        np.testing.assert_allclose(r.metrics["ppo_kl"], r.metrics["kl"] / 100, rtol=1e-12)
    one = read_logs(os.path.join(VERL, "b64.jsonl"), ("kl",), preset="verl",
                    batch={"b64": 64.0})
    assert [r.name for r in one.runs] == ["b64"]


@needs_tensorboard
def test_tensorboard_runs_read_with_unsorted_steps_and_text_events_skipped():
    """TRL's tags through transformers' TensorBoardCallback ('train/kl', 'eval/...'); run b128
    was logged at steps 6, 2, 4, 8, ...; float32 scalars."""
    logs = read_logs(TB, METRICS + ("seconds_per_update",), preset="trl", batch=BATCH_FLAGS)
    check_runs(logs, every=2, rtol=1e-6)
    assert "train/grad_norm" in logs.header and "args" not in logs.header  # "args": text


@needs_tensorboard
def test_tensorboard_tensor_scalars_read_with_the_verl_preset():
    logs = read_logs(TB2, ("acc", "kl", "entropy", "clip"), preset="verl", batch=BATCH_FLAGS)
    check_runs(logs, every=1, rtol=1e-6, metrics=("acc", "kl", "entropy", "clip"),
               step_time=False)  # not among the tags written


OPENRLHF = os.path.join(DATA, "openrlhf")
OPENRLHF_RUNS = {"ppo_1017T1200": 64, "ppo_1017T1530": 128, "ppo_1018T0910": 256}


@needs_tensorboard
def test_openrlhf_tensorboard_runs_read_with_the_batch_they_log():
    """OpenRLHF's TensorboardLogger: no --batch, --lr or batch in the names; each run's batch is
    its logged rollout/num_samples, its lr the peak of train/actor_lr (a warmup at half), its
    steps every update from 1, its pass@1 every 4th step; the sample's text is no column."""
    logs = read_logs(OPENRLHF, METRICS + ("ppo_kl", "seconds_per_update"), preset="openrlhf")
    check_runs(logs, every=1, rtol=1e-6, names=OPENRLHF_RUNS)
    for r in logs.runs:
        assert r.updates == 1.0  # no setting says otherwise
        np.testing.assert_allclose(r.metrics["ppo_kl"], r.metrics["kl"] / 100, rtol=1e-6)
    assert "train/generated_samples" not in logs.header


@needs_tensorboard
def test_plan_py_plans_from_openrlhf_files_with_the_preset_alone(tmp_path):
    """acc = s / P and kl = s / F are linear: crossings P / 2 and F (to float32)."""
    code, _, err = _plan(tmp_path, OPENRLHF, "--preset", "openrlhf")
    assert code == 0, err
    with open(tmp_path / "out" / "plan.json") as f:
        got = {r["run"]: r for r in json.load(f)["runs"]}
    assert sorted(got) == sorted(OPENRLHF_RUNS)
    for name, r in got.items():
        b = OPENRLHF_RUNS[name]
        assert r["batch"] == b and r["lr"] == pytest.approx(1e-6 * math.sqrt(b / 64), rel=1e-6)
        assert r["progress_samples"] == pytest.approx(500 * (1 + b / 256), rel=1e-6)
        assert r["failure_samples"] == pytest.approx(2000 * (b / 64) ** 0.25, rel=1e-6)
        assert r["updates"] == 1.0
    # OpenRLHF logs no K: the plan says each run was read as one update, and how to give K
    assert "OpenRLHF writes no K" in got_logs(tmp_path)["updates_unknown"]


def got_logs(tmp_path):
    with open(tmp_path / "out" / "plan.json") as f:
        return json.load(f)["logs"]


@needs_tensorboard
def test_openrlhf_runs_given_their_k_say_nothing_of_it(tmp_path):
    code, _, err = _plan(tmp_path, OPENRLHF, "--preset", "openrlhf", "--updates", "ppo_*=2")
    assert code == 0, err
    with open(tmp_path / "out" / "plan.json") as f:
        out = json.load(f)
    assert {r["updates"] for r in out["runs"]} == {2.0}
    assert "updates_unknown" not in out["logs"]


def test_presets_map_the_trainers_names():
    trl = ["learning_rate", "kl", "entropy", "reward", "rewards/accuracy_reward/mean",
           "eval_rewards/accuracy_reward/mean", "clip_ratio/region_mean", "clip_ratio/low_mean",
           "step_time"]
    assert presets.preset_columns("trl", trl, {}) == {
        "learning_rate": "lr", "rewards/accuracy_reward/mean": "acc",
        "eval_rewards/accuracy_reward/mean": "heldout_acc", "clip_ratio/region_mean": "clip",
        "step_time": "seconds_per_update"}  # kl, entropy, reward: already their own names
    tags = ["train/learning_rate", "train/kl", "eval/rewards/accuracy_reward/mean"]
    assert presets.preset_columns("trl", tags, {}) == {
        "train/learning_rate": "lr", "train/kl": "kl",
        "eval/rewards/accuracy_reward/mean": "heldout_acc"}
    # a user's own accuracy function; --col wins over the preset; CSV rows keep their lr
    assert presets.preset_columns("trl", ["rewards/my_acc_fn/mean", "kl", "kl2"],
                                  {"kl2": "kl"}) == {"rewards/my_acc_fn/mean": "acc", "kl2": "kl"}
    assert presets.preset_columns("trl", ["learning_rate"], {}, skip=("lr",)) == {}
    verl = ["actor/lr", "actor/kl_loss", "actor/ppo_kl", "actor/entropy", "actor/pg_clipfrac",
            "critic/score/mean", "critic/rewards/mean", "perf/time_per_step",
            "val-core/openai/gsm8k/acc/mean@1", "val-aux/openai/gsm8k/acc/std@1"]
    assert presets.preset_columns("verl", verl, {}) == {
        "actor/lr": "lr", "actor/kl_loss": "kl", "actor/ppo_kl": "ppo_kl",
        "actor/entropy": "entropy", "actor/pg_clipfrac": "clip", "critic/score/mean": "acc",
        "critic/rewards/mean": "reward", "perf/time_per_step": "seconds_per_update",
        "val-core/openai/gsm8k/acc/mean@1": "heldout_acc"}
    with pytest.raises(PilotError, match=r"'heldout_acc' could be any of .*--col heldout_acc="):
        presets.preset_columns("verl", ["val-core/a/acc/mean@1", "val-core/b/acc/mean@1"], {})
    # OpenRLHF's tags (train/<status key>, eval/<eval key>): the batch is the rollout's
    # responses; pass@1, not pass@4, is the held-out accuracy; reward_std and timing/generation
    # are left alone
    openrlhf = ["train/actor_lr", "train/kl", "train/ppo_kl", "train/entropy_loss",
                "train/ppo_clip_ratio", "train/reward", "train/rollout/reward_mean",
                "train/rollout/reward_std", "train/rollout/num_samples", "train/timing/generation",
                "train/timing/step_total", "eval/eval_gsm8k_pass4", "eval/eval_gsm8k_pass1"]
    assert presets.preset_columns("openrlhf", openrlhf, {}) == {
        "train/rollout/num_samples": "batch", "train/actor_lr": "lr",
        "train/rollout/reward_mean": "acc", "eval/eval_gsm8k_pass1": "heldout_acc",
        "train/reward": "reward", "train/kl": "kl", "train/ppo_kl": "ppo_kl",
        "train/entropy_loss": "entropy", "train/ppo_clip_ratio": "clip",
        "train/timing/step_total": "seconds_per_update"}
    with pytest.raises(PilotError, match=r"'heldout_acc' could be any of .*--col heldout_acc="):
        presets.preset_columns("openrlhf", ["eval/eval_gsm8k_pass1", "eval/eval_math_pass1"], {})


def test_a_csv_export_reads_the_preset_names_too(tmp_path):
    p = tmp_path / "wandb.csv"
    p.write_text("run,batch,lr,samples,train/kl\n" + "".join(
        f"a,8,0.01,{s},{s / 100}\n" for s in range(0, 500, 100)))
    logs = read_logs(str(p), ("kl",), preset="trl")
    np.testing.assert_allclose(logs.runs[0].metrics["kl"], [0, 1, 2, 3, 4])


# ---------------------------------------------------------------------------- plan.py
def _plan_main():
    return plan_main()


def _plan(tmp_path, logs, *extra):
    out, err = io.StringIO(), io.StringIO()
    argv = ["--logs", logs, "--progress", "acc>=0.5", "--failure", "kl>=1", *extra,
            "--out", str(tmp_path / "out"), "--no-figure", "--quiet"]
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = _plan_main()(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()


BATCH_ARGS = [a for b in STEPS for a in ("--batch", f"b{b}={b}")]
FORMATS = {"trainer_state.json": (TRL, ["--preset", "trl"]),
           "verl": (VERL, ["--preset", "verl", *BATCH_ARGS]),
           "tensorboard": (TB, ["--preset", "trl", *BATCH_ARGS])}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_plan_py_plans_from_each_format(fmt, tmp_path):
    """The clocks of the plan: acc = s / P and kl = s / F are linear, so the interpolated
    crossings are P / 2 and F exactly (to float32 for TensorBoard)."""
    if fmt == "tensorboard" and importlib.util.find_spec("tensorboard") is None:
        pytest.skip("reading TensorBoard files needs pip install 'twoclock[tensorboard]'")
    path, extra = FORMATS[fmt]
    code, _, err = _plan(tmp_path, path, *extra)
    assert code == 0, err
    with open(tmp_path / "out" / "plan.json") as f:
        out = json.load(f)
    got = {r["run"]: r for r in out["runs"]}
    assert sorted(got) == ["b128", "b256", "b64"]
    for name, r in got.items():
        b = int(name[1:])
        assert r["batch"] == b and r["lr"] == pytest.approx(1e-6 * math.sqrt(b / 64), rel=1e-6)
        assert r["progress_samples"] == pytest.approx(500 * (1 + b / 256), rel=1e-6)
        assert r["failure_samples"] == pytest.approx(2000 * (b / 64) ** 0.25, rel=1e-6)


def _copy(tmp_path, src):
    dst = tmp_path / os.path.basename(src)
    shutil.copytree(src, dst)
    return dst


def _event_file(d):
    return next(os.path.join(d, f) for f in sorted(os.listdir(d)) if "tfevents" in f)


def _truncate(path, keep):
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:keep(len(data))])


def _flip(path, at):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[at(len(data))] ^= 0x55
    with open(path, "wb") as f:
        f.write(bytes(data))


def _tb_truncated(tmp_path):
    d = _copy(tmp_path, TB)
    _truncate(_event_file(d / "b64"), lambda n: n - 7)
    return str(d), ["--preset", "trl", *BATCH_ARGS]


def _tb_corrupt(tmp_path):
    d = _copy(tmp_path, TB)
    _flip(_event_file(d / "b128"), lambda n: n // 2)
    return str(d), ["--preset", "trl", *BATCH_ARGS]


def _tb_restarted(tmp_path):
    """A second event file in run b64 (a restart) with another kl at step 10."""
    from tensorboard.summary import DirectoryOutput, Writer
    d = _copy(tmp_path, TB)
    w = Writer(DirectoryOutput(str(d / "b64")))
    w.add_scalar("train/kl", 123.0, 10)
    w.close()
    return str(d), ["--preset", "trl", *BATCH_ARGS]


def _state_truncated(tmp_path):
    d = _copy(tmp_path, TRL)
    _truncate(d / "b64" / "trainer_state.json", lambda n: n // 2)
    return str(d), ["--preset", "trl"]


def _state_without_history(tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 3, "train_batch_size": 8}, indent=2))
    return str(p), ["--preset", "trl"]


def _verl_truncated(tmp_path):
    d = _copy(tmp_path, VERL)
    _truncate(d / "b128.jsonl", lambda n: n - 30)
    return str(d), ["--preset", "verl", *BATCH_ARGS]


def _verl_foreign_line(tmp_path):
    d = _copy(tmp_path, VERL)
    with open(d / "b64.jsonl", "a") as f:
        f.write('{"step": 49, "metrics": {"actor/kl_loss": 0.1}}\n')
    return str(d), ["--preset", "verl", *BATCH_ARGS]


def _verl_run_without_kl(tmp_path):
    d = _copy(tmp_path, VERL)
    lines = (d / "b256.jsonl").read_text().splitlines()
    rows = [json.loads(ln) for ln in lines]
    for r in rows:
        del r["data"]["actor/kl_loss"]
    (d / "b256.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(d), ["--preset", "verl", *BATCH_ARGS]


BAD = {  # name: (make(tmp_path) -> (path, extra argv), needles)
    "TensorBoard file truncated": (_tb_truncated, ["b64", "tfevents", "truncated or corrupt"]),
    "TensorBoard file corrupt": (_tb_corrupt, ["b128", "tfevents", "truncated or corrupt"]),
    "TensorBoard run restarted": (_tb_restarted, ["b64", "'train/kl' logged twice at step 10",
                                                  "restarted"]),
    "trainer_state.json truncated": (_state_truncated, ["trainer_state.json line", "not JSON"]),
    "trainer_state.json without log_history": (_state_without_history, ["no 'log_history'"]),
    "verl last line truncated": (_verl_truncated, ["b128.jsonl line 32", "not JSON"]),
    "verl foreign line": (_verl_foreign_line, ["b64.jsonl line 49", "not a verl file logger"]),
    "verl run without the metric": (_verl_run_without_kl,
                                    ["b256.jsonl line 1", "run 'b256' never logs 'kl'"]),
    "batch not given": (lambda t: (VERL, ["--preset", "verl", "--batch", "b64=64"]),
                        ["run 'b128'", "records no batch", "--batch b128=B"]),
    "batch of a run not there": (lambda t: (TRL, ["--preset", "trl", "--batch", "b32=32"]),
                                 ["--batch b32=32", "no run 'b32'", "b128, b256, b64"]),
    "malformed --batch": (lambda t: (TRL, ["--batch", "b64"]), ["--batch 'b64'", "RUN=VALUE"]),
    "no lr without the preset": (lambda t: (TRL, ["--col", "acc=rewards/accuracy_reward/mean"]),
                                 ["logs no learning rate", "--lr b128=LR"]),
    "metric missing": (lambda t: (TRL, ["--preset", "trl", "--failure", "drift>=1"]),
                       ["no column 'drift' for the condition"]),
    "unknown preset": (lambda t: (TRL, ["--preset", "nemo-rl"]),
                       ["--preset", "trl, verl, openrlhf"]),
    "a directory of nothing": (lambda t: (str(t), []), ["without TensorBoard event files"]),
    "--batch on a CSV": (lambda t: (os.path.join(ROOT, "twoclock", "data",
                                                 "example_pilot_logs.csv"),
                                    ["--batch", "a=8"]), ["--batch", "CSV or JSON Lines"]),
}
TB_CASES = {"TensorBoard file truncated", "TensorBoard file corrupt", "TensorBoard run restarted"}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_trainer_files_are_one_line_and_exit_2(case, tmp_path):
    if case in TB_CASES and importlib.util.find_spec("tensorboard") is None:
        pytest.skip("reading TensorBoard files needs pip install 'twoclock[tensorboard]'")
    make, needles = BAD[case]
    (tmp_path / "in").mkdir()
    path, extra = make(tmp_path / "in")
    code, _, err = _plan(tmp_path, path, *extra)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)


def test_without_the_tensorboard_extra_the_error_names_it(tmp_path, monkeypatch):
    for mod in [m for m in sys.modules if m == "tensorboard" or m.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard: ImportError
    code, _, err = _plan(tmp_path, TB, "--preset", "trl", *BATCH_ARGS)
    assert code == 2 and err.count("\n") == 1, err
    assert "pip install -e '.[tensorboard]'" in err and "TensorBoard" in err, err


def test_a_json_lines_file_with_a_bad_first_line_is_not_taken_for_a_trainer_state(tmp_path):
    """The whole-file parse that finds a trainer_state.json must leave a JSON Lines file's
    errors to the reader, which names the line."""
    p = tmp_path / "l.jsonl"
    p.write_text('{"run": "a", "batch": 8,\n{"run": "a", "batch": 8, "lr": 0.1, "samples": 0}\n')
    with pytest.raises(PilotError, match=r"l.jsonl line 1: not JSON") as e:
        read_logs(str(p), ())
    assert "trainer_state" not in str(e.value)


def test_lr_and_batch_flags_reach_the_plan(tmp_path):
    """--lr RUN=LR replaces the peak logged lr and --batch RUN=B the train_batch_size, in the
    runs of plan.json and in the samples (step x the given batch)."""
    lrs = {"b64": 2e-6, "b128": 4e-6, "b256": 4e-6 * 2 ** 0.5}  # sqrt rule from B 32
    args = [a for r, v in lrs.items() for a in ("--lr", f"{r}={v!r}")] + ["--batch", "b64=32"]
    code, _, err = _plan(tmp_path, TRL, "--preset", "trl", *args)
    assert code == 0, err
    with open(tmp_path / "out" / "plan.json") as f:
        runs = {r["run"]: r for r in json.load(f)["runs"]}
    assert {k: r["lr"] for k, r in runs.items()} == lrs
    assert runs["b64"]["batch"] == 32 and runs["b128"]["batch"] == 128
    # acc = 64 t / 1250 logged at step t crosses 0.5 at step 9.77, now 9.77 x 32 samples
    assert runs["b64"]["progress_samples"] == pytest.approx(625 / 2, rel=1e-9)
