"""Column presets: a trainer's metric names read as the planner's (`--preset trl`, `--preset
verl`, `--preset openrlhf`), so `--progress "acc>=0.7" --failure "kl>=0.5"` reads the same in
each trainer's files. A name the file already has, or that --col maps, is left alone. Table:
docs/plan.md."""
import fnmatch

from twoclock.pilot.plan import PilotError

# canonical name -> the trainer's keys, in order of preference; '*' patterns last (one match)
# TRL: trainer_state.json keys (eval rows prefix "eval_"); its TensorBoard tags add "train/"
# and turn "eval_" into "eval/" (transformers.integrations.TensorBoardCallback)
_TRL_ACC = "rewards/accuracy_reward/mean"
PRESETS = {
    "trl": {
        "lr": ("learning_rate", "train/learning_rate"),
        "acc": (_TRL_ACC, "train/" + _TRL_ACC, "rewards/*acc*/mean", "train/rewards/*acc*/mean"),
        "heldout_acc": ("eval_" + _TRL_ACC, "eval/" + _TRL_ACC, "eval_rewards/*acc*/mean",
                        "eval/rewards/*acc*/mean"),
        "reward": ("reward", "train/reward"),
        "kl": ("kl", "train/kl"),
        "entropy": ("entropy", "train/entropy"),
        "clip": ("clip_ratio/region_mean", "train/clip_ratio/region_mean", "clip_ratio",
                 "train/clip_ratio"),
        "seconds_per_update": ("step_time", "train/step_time"),
    },
    # verl (verl/trainer/ppo/metric_utils.py, ray_trainer.py, workers): the same keys in its
    # file logger and its TensorBoard tags
    "verl": {
        "lr": ("actor/lr",),
        "acc": ("critic/score/mean",),
        "heldout_acc": ("val-core/*/acc/mean@*", "val-core/*/reward/mean@*"),
        "reward": ("critic/rewards/mean",),
        "kl": ("actor/kl_loss", "actor/reward_kl_penalty"),
        "ppo_kl": ("actor/ppo_kl",),
        "entropy": ("actor/entropy",),
        "clip": ("actor/pg_clipfrac",),
        "seconds_per_update": ("perf/time_per_step",),
    },
    # OpenRLHF (OpenRLHF/OpenRLHF at 3c3be6234e0cb353e76bb8019947db9dfe99fca7): its
    # TensorboardLogger and WandbLogger (openrlhf/utils/logging_utils.py) write each step's
    # status as "train/<key>" and each evaluation's as "eval/<key>", one step a rollout batch;
    # the keys are ppo_trainer.py's (rollout/..., timing/..., eval_<dataset>_pass1) and
    # ray/ppo_actor.py's (actor_lr, kl, ppo_kl, ppo_clip_ratio, entropy_loss). The rollout's
    # responses, rollout/num_samples, are its batch; no setting is written to TensorBoard.
    "openrlhf": {
        "batch": ("train/rollout/num_samples",),
        "lr": ("train/actor_lr",),
        "acc": ("train/rollout/reward_mean",),
        "heldout_acc": ("eval/eval_*_pass1",),
        "reward": ("train/reward",),
        "kl": ("train/kl",),
        "ppo_kl": ("train/ppo_kl",),
        "entropy": ("train/entropy_loss",),
        "clip": ("train/ppo_clip_ratio",),
        "seconds_per_update": ("train/timing/step_total",),
    },
}


# a preset whose trainer writes no K (optimizer updates per rollout batch): what the plan says
# where no --updates and no K column give it (pilot.logs, logs.updates_unknown)
K_UNREAD = {
    "openrlhf": ("OpenRLHF writes no K: each run is read as one optimizer update per rollout "
                 "batch; where train.batch_size is below the rollout's responses give --updates "
                 "RUN=K, K = rollout.batch_size x rollout.n_samples_per_prompt x "
                 "train.max_epochs / train.batch_size (docs/plan.md)"),
}


def preset_columns(preset: str, head, columns: dict, skip=()) -> dict:
    """columns ({file column: name}) with the preset's names added for the file's columns:
    a name --col maps already, or that a column has itself, is left alone, as are `skip`."""
    if preset not in PRESETS:
        raise PilotError(f"--preset {preset!r}: not a preset (presets: {', '.join(PRESETS)})")
    out, taken = dict(columns), set(columns.values()) | set(head)
    for name, keys in PRESETS[preset].items():
        if name in taken or name in skip:
            continue
        for key in keys:
            hits = [h for h in head if fnmatch.fnmatchcase(h, key)] if "*" in key else \
                [key] if key in head else []
            if len(hits) > 1:
                raise PilotError(f"--preset {preset}: {name!r} could be any of {', '.join(hits)}"
                                 f"; pick one with --col {name}=COLUMN")
            if hits and hits[0] not in out:
                out[hits[0]] = name
                break
    return out


__all__ = ["PRESETS", "K_UNREAD", "preset_columns"]
