"""Write tests/data/trainer_logs/ with the trainers' own writers: `python
tools/trainer_log_fixtures.py VERL_TRACKING_PY [OUT]`, in an environment with tensorboard,
tensorboardX, transformers and orjson (none of them this project's dependencies; versions in
tests/data/trainer_logs/README.md). VERL_TRACKING_PY: verl's verl/utils/tracking.py (it needs
only orjson), whose FileLogger writes the verl logs.

Pilots at B = 64, 128, 256 responses per update, lr = 1e-6 sqrt(B / 64), step t at samples
s = t B (TRL logs every 2nd step, evaluates every 4th; verl logs every step), with curves
whose crossings are known (tests/pilot/test_trainer_logs.py holds its own copy of them):
  acc = min(1, s / P), P = 1000 (1 + B / 256)      heldout_acc = s / (1.2 P), every 4th step
  kl = s / F, F = 2000 (B / 64)^0.25               entropy = 2 - s / (1.2 F)
  clip = 0.01 s / F                                step time = 1 + B / 256 seconds

- tensorboard/: transformers' TensorBoardCallback (the TRL trainer's reporter) over
  tensorboardX's SummaryWriter, one directory per run; run b128's steps are logged out of order.
- tensorboard_v2/: tensorboard's own tensor-scalar Writer with some of verl's metric names.
- trl/: TrainerState.save_to_json of GRPO-style log_history (TRL's metric names, entries as
  transformers' Trainer.log appends them: the logs, epoch, then step); b128 and b256 keep it under
  checkpoint-N/ (b256 with an older checkpoint-8 beside checkpoint-24).
- verl/gsm8k_pilots/: verl's FileLogger, one .jsonl per run (its experiment name).

`python tools/trainer_log_fixtures.py --tensorboard-only [OUT]` writes, with tensorboard alone
(its EventFileWriter, which torch's SummaryWriter and FileWriter wrap, and its protos):
- trl_output/grpo_bs*_g8/: what a TRL GRPO run leaves in its output_dir: trainer_state.json
  (TrainerState.save_to_json's layout: json.dumps(asdict(state), indent=2, sort_keys=True)
  plus a newline; train_batch_size is the per-device batch, as the Trainer records it) and
  runs/Oct17_12-00-00_vm/ (TensorBoardCallback's default logging_dir) with the `args` text
  summary as add_text("args", args.to_json_string()) writes it (tag args/text_summary, the
  text plugin, a DT_STRING tensor) and the logs' scalars (train/..., eval/...). The batch per
  optimizer step is 16 per device x processes x accumulation = 64, 128, 256.
- openrlhf/ppo_*/: OpenRLHF's TensorboardLogger: each step's status as train/<key> (its
  batch as train/rollout/num_samples, its lr as train/actor_lr, a warmup then constant), the
  sample as text, and an evaluation every 4th step as eval/eval_gsm8k_pass1 and others.
- tensorboard_hparams/b*/: a torch training loop's SummaryWriter: scalars acc, kl, lr by step,
  then add_hparams({lr, batch_size, optimizer}, {"hparam/acc": ...}), which writes the
  experiment, session-start and session-end summaries (torch.utils.tensorboard.summary.hparams)
  and the metric's scalar in a <run>/<time.time()>/ sub-folder.
"""
import importlib.util
import json
import math
import os
import shutil
import sys

import numpy as np

BATCHES = {64: 48, 128: 32, 256: 24}  # batch: steps logged
LOG_EVERY, EVAL_EVERY = 2, 4
TB_V2 = ("actor/entropy", "actor/kl_loss", "actor/lr", "actor/pg_clipfrac", "critic/score/mean")


def lr0(b):
    return 1e-6 * math.sqrt(b / 64)


def curves(b, t):
    s = t * b
    P, F = 1000 * (1 + b / 256), 2000 * (b / 64) ** 0.25
    return {"acc": min(1.0, s / P), "heldout_acc": s / (1.2 * P), "kl": s / F,
            "entropy": 2 - s / (1.2 * F), "clip": 0.01 * s / F, "step_time": 1 + b / 256}


def lr_at(b, t):
    return lr0(b) * (0.5 if t <= 2 else 1.0)  # warmup, then constant: its peak is lr0


def trl_logs(b, t):
    c = curves(b, t)
    return {"clip_ratio/high_mean": c["clip"] / 2, "clip_ratio/low_mean": c["clip"] / 2,
            "clip_ratio/region_mean": c["clip"], "completions/mean_length": 180.0,
            "entropy": c["entropy"], "frac_reward_zero_std": 0.25, "grad_norm": 0.5,
            "kl": c["kl"], "learning_rate": lr_at(b, t), "loss": 0.01,
            "num_tokens": float(t * b * 300), "reward": c["acc"] + 0.1, "reward_std": 0.3,
            "rewards/accuracy_reward/mean": c["acc"], "rewards/accuracy_reward/std": 0.4,
            "step_time": c["step_time"]}


def trl_eval(b, t):
    c = curves(b, t)
    return {"eval_loss": 0.02, "eval_reward": c["heldout_acc"] + 0.1,
            "eval_rewards/accuracy_reward/mean": c["heldout_acc"], "eval_runtime": 3.0}


def order(b, n):
    steps = list(range(LOG_EVERY, n + 1, LOG_EVERY))
    return steps[2:3] + steps[:2] + steps[3:] if b == 128 else steps


class _Args:  # what TensorBoardCallback.on_train_begin reads of TrainingArguments (needs torch)
    output_dir = "."

    def to_json_string(self):
        return json.dumps({"learning_rate": 1e-6, "report_to": ["tensorboard"]}, indent=2)


def _state(b, steps):
    from transformers.trainer_callback import TrainerState
    return TrainerState(epoch=0.0, global_step=0, max_steps=steps, logging_steps=LOG_EVERY,
                        eval_steps=EVAL_EVERY, save_steps=steps, train_batch_size=b,
                        num_train_epochs=1)


def _log(state, callbacks, args, control, logs):
    """What transformers' Trainer.log (5.17) does with a step's logs."""
    if state.epoch is not None:
        logs["epoch"] = state.epoch
    state.log_history.append({**logs, "step": state.global_step})
    for cb in callbacks:
        cb.on_log(args, state, control, logs)


def trl(out, tb_out):
    from tensorboardX import SummaryWriter
    from transformers.integrations.integration_utils import TensorBoardCallback
    from transformers.trainer_callback import TrainerControl
    args, control = _Args(), TrainerControl()
    for b, n in BATCHES.items():
        state = _state(b, n)
        cb = TensorBoardCallback(SummaryWriter(os.path.join(tb_out, f"b{b}")))
        cb.on_train_begin(args, state, control)
        saved = []
        for t in order(b, n):
            state.global_step, state.epoch = t, t / n
            state.num_input_tokens_seen = t * b * 300
            _log(state, [cb], args, control, trl_logs(b, t))
            if t % EVAL_EVERY == 0:
                _log(state, [cb], args, control, trl_eval(b, t))
            if b == 256 and t == 8:
                saved.append(("checkpoint-8", json.loads(json.dumps(state.log_history))))
        _log(state, [cb], args, control, {"train_runtime": 60.0, "train_samples_per_second":
                                          n * b / 60.0, "train_steps_per_second": n / 60.0,
                                          "total_flos": 0.0, "train_loss": 0.01})
        cb.on_train_end(args, state, control)
        where = {64: "", 128: f"checkpoint-{n}", 256: f"checkpoint-{n}"}[b]
        d = os.path.join(out, f"b{b}", where)
        os.makedirs(d, exist_ok=True)
        state.save_to_json(os.path.join(d, "trainer_state.json"))
        for name, hist in saved:
            old = _state(b, n)
            old.global_step, old.epoch, old.log_history = 8, 8 / n, hist
            os.makedirs(os.path.join(out, f"b{b}", name), exist_ok=True)
            old.save_to_json(os.path.join(out, f"b{b}", name, "trainer_state.json"))


def verl_data(b, t):
    c = curves(b, t)
    d = {"actor/entropy": np.float64(c["entropy"]), "actor/kl_loss": np.float64(c["kl"]),
         "actor/lr": lr0(b), "actor/pg_clipfrac": np.float64(c["clip"]),
         "actor/pg_clipfrac_lower": 0.0, "actor/pg_loss": -0.01,
         "actor/ppo_kl": np.float64(c["kl"] / 100), "critic/rewards/mean": c["acc"] - 0.01,
         "critic/score/mean": c["acc"], "perf/time_per_step": c["step_time"],
         "perf/total_num_tokens": t * b * 300, "response_length/mean": 180.0,
         "training/epoch": 0, "training/global_step": t}
    if t % EVAL_EVERY == 0:
        d["val-core/openai/gsm8k/acc/mean@1"] = c["heldout_acc"]
    return d


def verl(tracking, out):
    spec = importlib.util.spec_from_file_location("verl_tracking", tracking)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    os.environ["VERL_FILE_LOGGER_ROOT"] = out
    for b, n in BATCHES.items():
        logger = mod.FileLogger("gsm8k_pilots", f"b{b}")
        for t in range(1, n + 1):
            logger.log(verl_data(b, t), t)
        logger.finish()


def tensorboard_v2(out):
    from tensorboard.summary import DirectoryOutput, Writer
    for b, n in BATCHES.items():
        w = Writer(DirectoryOutput(os.path.join(out, f"b{b}")))
        for t in range(1, n + 1):
            for k in TB_V2:
                w.add_scalar(k, float(verl_data(b, t)[k]), t)
        w.close()


# ------------------------------------------------------------- tensorboard alone (torch's layout)
PER_DEVICE, PROCESSES, ACCUMULATION, GENERATIONS = 16, {64: 2, 128: 4, 256: 4}, \
    {64: 2, 128: 2, 256: 4}, 8


class _TorchWriter:
    """torch.utils.tensorboard's SummaryWriter for what is used here: its FileWriter sets the
    wall time and step of each Event and hands it to tensorboard's EventFileWriter."""

    def __init__(self, logdir):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
        self.logdir, self.w = logdir, EventFileWriter(logdir)

    def add_summary(self, summary, step=None):
        import time
        from tensorboard.compat.proto import event_pb2
        ev = event_pb2.Event(summary=summary, wall_time=time.time())
        if step is not None:
            ev.step = int(step)
        self.w.add_event(ev)

    def add_scalar(self, tag, value, step=None):  # summary.scalar(new_style=False)
        from tensorboard.compat.proto.summary_pb2 import Summary
        self.add_summary(Summary(value=[Summary.Value(tag=tag, simple_value=float(value))]),
                         step)

    def add_text(self, tag, text, step=None):  # summary.text
        from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboard.compat.proto.tensor_pb2 import TensorProto
        from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
        from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        tensor = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        self.add_summary(Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=smd,
                                                      tensor=tensor)]), step)

    def add_hparams(self, hparams, metrics):
        """SummaryWriter.add_hparams: summary.hparams' three summaries and the metrics'
        scalars in a sub-folder named str(time.time())."""
        import time
        from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
        from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2 as pd
        ssi, infos = pd.SessionStartInfo(), []
        for k, v in hparams.items():
            if isinstance(v, (int, float)):
                ssi.hparams[k].number_value = v
                infos.append(api_pb2.HParamInfo(name=k, type=api_pb2.DATA_TYPE_FLOAT64))
            else:
                ssi.hparams[k].string_value = v
                infos.append(api_pb2.HParamInfo(name=k, type=api_pb2.DATA_TYPE_STRING))

        def summary(tag, **content):
            data = pd.HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **content)
            smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
                plugin_name=metadata.PLUGIN_NAME, content=data.SerializeToString()))
            return Summary(value=[Summary.Value(tag=tag, metadata=smd)])
        exp = api_pb2.Experiment(hparam_infos=infos, metric_infos=[
            api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metrics])
        hp = _TorchWriter(os.path.join(self.logdir, str(time.time())))
        hp.add_summary(summary(metadata.EXPERIMENT_TAG, experiment=exp))
        hp.add_summary(summary(metadata.SESSION_START_INFO_TAG, session_start_info=ssi))
        hp.add_summary(summary(metadata.SESSION_END_INFO_TAG, session_end_info=pd.SessionEndInfo(
            status=api_pb2.STATUS_SUCCESS)))
        for k, v in metrics.items():
            hp.add_scalar(k, v)
        hp.close()

    def close(self):
        self.w.close()


def _grpo_args(b, n):
    """GRPOConfig.to_json_string()'s fields that say the batch (TRL >= 0.18)."""
    return json.dumps({
        "output_dir": f"grpo_bs{b}_g8", "per_device_train_batch_size": PER_DEVICE,
        "gradient_accumulation_steps": ACCUMULATION[b], "learning_rate": lr0(b),
        "max_steps": n, "logging_steps": LOG_EVERY, "eval_steps": EVAL_EVERY,
        "logging_dir": f"grpo_bs{b}_g8/runs/Oct17_12-00-00_vm", "report_to": ["tensorboard"],
        "num_generations": GENERATIONS, "steps_per_generation": ACCUMULATION[b],
        "generation_batch_size": PER_DEVICE * PROCESSES[b] * ACCUMULATION[b],
        "num_iterations": 1, "max_completion_length": 256, "beta": 0.04}, indent=2)


def _tb_tags(logs):
    """transformers' rewrite_logs: eval_x -> eval/x, else train/x."""
    return {("eval/" + k[5:]) if k.startswith("eval_") else "train/" + k: v
            for k, v in logs.items()}


def trl_output(out):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                           "trainer_logs", "trl", "b64", "trainer_state.json")) as f:
        template = json.load(f)  # TrainerState's fields, as transformers 5.17 saved them
    for b, n in BATCHES.items():
        d = os.path.join(out, f"grpo_bs{b}_g8")
        w = _TorchWriter(os.path.join(d, "runs", "Oct17_12-00-00_vm"))
        w.add_text("args", _grpo_args(b, n))
        history = []
        for t in range(LOG_EVERY, n + 1, LOG_EVERY):
            for logs in [trl_logs(b, t)] + ([trl_eval(b, t)] if t % EVAL_EVERY == 0 else []):
                logs = {**logs, "epoch": t / n}
                history.append({**logs, "step": t})
                for k, v in _tb_tags(logs).items():
                    w.add_scalar(k, v, t)
        w.close()
        state = {**template, "log_history": history, "global_step": n, "max_steps": n,
                 "save_steps": n, "train_batch_size": PER_DEVICE, "epoch": 1.0,
                 "num_input_tokens_seen": n * b * 300}
        with open(os.path.join(d, "trainer_state.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(state, indent=2, sort_keys=True) + "\n")


def tensorboard_hparams(out):
    for b, n in BATCHES.items():
        w = _TorchWriter(os.path.join(out, f"b{b}"))
        for t in range(1, n + 1):
            c = curves(b, t)
            for k, v in (("acc", c["acc"]), ("kl", c["kl"]), ("lr", lr0(b))):
                w.add_scalar(k, v, t)
        w.add_hparams({"lr": lr0(b), "batch_size": b, "optimizer": "adam"},
                      {"hparam/acc": curves(b, n)["acc"]})
        w.close()


# OpenRLHF's run names default to "ppo_%m%dT%H:%M"; here without the colon, which some file
# systems refuse. The names say nothing of the batch: it is read from rollout/num_samples.
OPENRLHF_RUNS = {64: "ppo_1017T1200", 128: "ppo_1017T1530", 256: "ppo_1018T0910"}


def openrlhf_status(b, t):
    """One step's status as OpenRLHF's PPOTrainer hands it to TensorboardLogger.log_train, in
    its order (ray/ppo_actor.py's means, then ppo_trainer.py's timings and rollout stats)."""
    c = curves(b, t)
    return {"policy_loss": 0.01, "entropy_loss": c["entropy"], "actor_lr": lr_at(b, t),
            "actor_grad_norm": 0.5, "kl": c["kl"], "reward": c["acc"] + 0.1,
            "response_length": 180.0, "total_length": 480.0, "ppo_clip_ratio": c["clip"],
            "ppo_kl": c["kl"] / 100, "timing/make_experience": 0.2, "timing/ppo_train": 0.3,
            "timing/broadcast": 0.1, "rollout/reward_mean": c["acc"], "rollout/reward_std": 0.4,
            "rollout/response_length_mean": 180.0, "rollout/truncated_rate": 0.0,
            "rollout/num_samples": float(b), "generated_samples": ["1 + 1 = 2", 1.0],
            "timing/generation": c["step_time"] - 0.6, "timing/step_total": c["step_time"]}


def openrlhf_eval(b, t):
    """compute_eval_metrics' logs for one dataset (gsm8k) at 4 samples a prompt."""
    c = curves(b, t)
    return {"eval_gsm8k_pass4": min(1.0, c["heldout_acc"] + 0.15),
            "eval_gsm8k_pass1": c["heldout_acc"], "eval_gsm8k_response_length_mean": 180.0,
            "eval_gsm8k_truncated_rate": 0.0}


def openrlhf(out):
    """OpenRLHF's TensorboardLogger (openrlhf/utils/logging_utils.py at 3c3be623): a
    SummaryWriter at <tensorboard_dir>/<run_name>; log_train writes each status value as
    add_scalar("train/<key>", v, global_step) and the sample as add_text; log_eval writes
    "eval/<key>". Steps from 1 (global_step after the first update), every step logged, an
    evaluation every EVAL_EVERY steps and none at step 0, one update per rollout batch."""
    for b, n in BATCHES.items():
        w = _TorchWriter(os.path.join(out, OPENRLHF_RUNS[b]))
        for t in range(1, n + 1):
            for k, v in openrlhf_status(b, t).items():
                if k == "generated_samples":
                    text, reward = v
                    w.add_text("train/generated_samples", f"Sample:\\n{text}\\n\\nReward: "
                               f"{reward:.4f}", t)
                else:
                    w.add_scalar(f"train/{k}", v, t)
            if t % EVAL_EVERY == 0:
                for k, v in openrlhf_eval(b, t).items():
                    w.add_scalar(f"eval/{k}", v, t)
        w.close()


if __name__ == "__main__" and sys.argv[1:2] == ["--tensorboard-only"]:
    import socket
    socket.gethostname = lambda: "vm"  # the host name in the event files' names
    root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data",
        "trainer_logs")
    for sub, write in (("trl_output", trl_output), ("tensorboard_hparams", tensorboard_hparams),
                       ("openrlhf", openrlhf)):
        shutil.rmtree(os.path.join(root, sub), ignore_errors=True)
        write(os.path.join(root, sub))
    print(f"wrote {root}/trl_output, tensorboard_hparams, openrlhf")
elif __name__ == "__main__":
    root = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "data",
        "trainer_logs")
    for sub in ("tensorboard", "tensorboard_v2", "trl", "verl"):
        shutil.rmtree(os.path.join(root, sub), ignore_errors=True)
    trl(os.path.join(root, "trl"), os.path.join(root, "tensorboard"))
    tensorboard_v2(os.path.join(root, "tensorboard_v2"))
    verl(sys.argv[1], os.path.join(root, "verl"))
    print(f"wrote {root}")
