"""The bandit's configuration (see twoclock.models.bandit for the model)."""
from dataclasses import dataclass

from twoclock.config import (finite, param, require, require_choice, require_fraction, require_int,
                             require_positive)
from twoclock.models.grpo import GRPOConfig

SHAPING_CLIPS = ("mask", "ppo")
DRIFT_SOURCES = ("injected", "emergent")
DRIFT_STATS = ("mean", "rms")


@dataclass(frozen=True)
class BanditConfig(GRPOConfig):
    """The verifiable-reward bandit (twoclock.models.bandit says what each part means) after
    the GRPO fields it shares with the policy."""
    n_train: int = param(256, 'train prompts')
    n_test: int = param(256, 'held-out prompts')
    responses: int = param(8, 'K responses per prompt')
    n_correct: int = param(2, 'correct responses per prompt')
    pass_a: float = param(1.0, 'initial pass rate ~ Beta(a, b): a')
    pass_b: float = param(2.0, 'initial pass rate ~ Beta(a, b): b')
    skill_dim: int = param(4, 'skill feature directions')
    skill_signal: float = param(1.0, "skill feature's correctness signal")
    feature_noise: float = param(0.5, 'skill feature noise')
    drift_dim: int = param(16, 'drift coordinates')
    drift_scale: float = param(0.25, 'drift feature scale on held-out prompts')
    drift_train_scale: float = param(
        0.0,
        "drift feature scale on train prompts (0: invisible to the verifier)")
    drift_source: str = param(
        "injected",
        "injected: a synthetic shaping signal xi ~ N(b, c_d) pulls w_d | emergent: no xi, w_d "
        "moves only under the policy's own gradient (drift features on train prompts, --spurious)",
        choices=DRIFT_SOURCES)
    spurious: float = param(
        0.0,
        "emergent drift: correctness signal of the train drift features along ones / "
        "sqrt(drift_dim) (0: train drift features uncorrelated with correctness on every prompt)")
    shaping: float = param(
        0.0,
        "emergent drift: weight lam of a non-verifier reward s(x, a) = phi_d(x, a) . ones / "
        "sqrt(drift_dim) added to r in the advantage (a style bonus)")
    drift_bias: float = param(0.05, 'mean b of the per-response drift signal')
    drift_noise: float = param(25.0, 'variance c_d of the per-response drift signal')
    shaping_clip: str = param(
        "mask",
        "clipping of the shaping pull: mask (ratio outside the band) | ppo (PPO's rule with the "
        "pull's sign on log pi(a))", choices=SHAPING_CLIPS)
    target: float = param(0.75, 'held-out accuracy target')
    drift_stat: str = param(
        "mean",
        "failure statistic: mean (mean(w_d), signed) | rms (RMS(w_d))", choices=DRIFT_STATS)
    drift_threshold: float = param(2.0, 'failure: threshold of the drift statistic')
    collapse_drop: float = param(
        0.1,
        "emergent collapse: held-out accuracy drop below its running peak")
    init_seed: int = param(0, 'seed of the prompt pools')

    def __post_init__(self):
        super().__post_init__()
        require_int("n_train", self.n_train)
        require_int("n_test", self.n_test)
        require_int("responses", self.responses, lo=2)
        require(isinstance(self.n_correct, int) and 1 <= self.n_correct < self.responses,
                "n_correct", f"an integer in [1, responses - 1] = [1, {self.responses - 1}]",
                self.n_correct)
        require_positive("pass_a", self.pass_a)
        require_positive("pass_b", self.pass_b)
        require_int("skill_dim", self.skill_dim)
        require_positive("skill_signal", self.skill_signal)
        require(finite(self.feature_noise) and self.feature_noise >= 0, "feature_noise",
                "a finite number >= 0", self.feature_noise)
        require_int("drift_dim", self.drift_dim)
        require(finite(self.drift_scale) and self.drift_scale >= 0, "drift_scale",
                "a finite number >= 0", self.drift_scale)
        require(finite(self.drift_train_scale) and self.drift_train_scale >= 0,
                "drift_train_scale", "a finite number >= 0", self.drift_train_scale)
        require_choice("drift_source", self.drift_source, DRIFT_SOURCES)
        require(finite(self.spurious) and self.spurious >= 0, "spurious", "a finite number >= 0",
                self.spurious)
        require(self.drift_source == "emergent" or self.spurious == 0, "spurious",
                "0 unless drift_source is emergent", self.spurious)
        require(finite(self.shaping) and self.shaping >= 0, "shaping", "a finite number >= 0",
                self.shaping)
        require(self.drift_source == "emergent" or self.shaping == 0, "shaping",
                "0 unless drift_source is emergent", self.shaping)
        require_choice("drift_stat", self.drift_stat, DRIFT_STATS)
        require(finite(self.drift_bias) and self.drift_bias >= 0, "drift_bias",
                "a finite number >= 0", self.drift_bias)
        require(finite(self.drift_noise) and self.drift_noise >= 0, "drift_noise",
                "a finite number >= 0", self.drift_noise)
        require_choice("shaping_clip", self.shaping_clip, SHAPING_CLIPS)
        require_fraction("target", self.target)
        require_positive("drift_threshold", self.drift_threshold)
        require_fraction("collapse_drop", self.collapse_drop)
        require_int("init_seed", self.init_seed, lo=0)


def describe_batch(cfg: BanditConfig, batch: int) -> dict:
    """What a batch of B responses is made of: {"prompts": P, "group": G}."""
    return {"prompts": cfg.prompts(batch), "group": cfg.group}


# The emergent-drift regime, where clipping binds on the drift: the clipping and regime studies'
# defaults (`MODEL.presets["emergent"]`).
EMERGENT = dict(drift_source="emergent", shaping=0.3, drift_train_scale=1.0, drift_scale=1.5,
                n_train=4096, minibatches=4, epochs=2, drift_threshold=1.0, target=0.7)
