"""The policy model's configuration (see twoclock.models.policy for the model)."""
from dataclasses import dataclass

from twoclock.config import (finite, param, require, require_choice, require_fraction, require_int,
                             require_positive)
from twoclock.models.grpo import GRPOConfig
from twoclock.objectives import KL_ESTIMATORS

MB_CONVENTIONS = ("fixed_m", "fixed_size")
LOSS_AGGS = ("seq_sum", "seq_mean", "token_mean")
FAIL_STATS = ("null", "kl", "entropy", "damage")
COLLAPSE_POOLS = ("heldout", "ood")
N_PROBLEMS = 9_100  # problems outside the out-of-distribution pool (task.make_pools)
N_OOD = 900


@dataclass(frozen=True)
class WarmupConfig:
    """The supervised warm-up (twoclock.models.policy.warmup); its own fields, hashed with the
    network and the pools, name its cache file."""
    noise: float = param(0.6, 'warm-up: fraction of labels replaced by a wrong sum')
    end_b: float = param(0.5, 'warm-up: fraction of labels ending in END_B')
    lr: float = param(3e-3, 'warm-up: Adam learning rate')
    batch: int = param(256, 'warm-up: examples per step')
    steps: int = param(3000, 'warm-up: most steps')
    acc: float = param(0.3, 'warm-up: stop at the first evaluation with held-out accuracy >= '
                            'this')
    eval_every: int = param(25, 'warm-up: steps between evaluations')
    seed: int = param(0, 'warm-up: seed of the init and the labels')

    def __post_init__(self):
        # named as their flags are (--warmup-noise, ...)
        require(finite(self.noise) and 0 <= self.noise < 1, "warmup_noise", "in [0, 1)",
                self.noise)
        require(finite(self.end_b) and 0 <= self.end_b <= 1, "warmup_end_b", "in [0, 1]",
                self.end_b)
        require_positive("warmup_lr", self.lr)
        require_int("warmup_batch", self.batch)
        require_int("warmup_steps", self.steps)
        require_fraction("warmup_acc", self.acc)
        require_int("warmup_eval_every", self.eval_every)
        require_int("warmup_seed", self.seed, lo=0)


@dataclass(frozen=True)
class PolicyConfig(GRPOConfig):
    """A tiny transformer policy on 2-digit addition, warmed up by SFT, trained by GRPO: the
    GRPO fields (twoclock.models.grpo), then its own."""
    n_train: int = param(4096, 'train problems')
    n_test: int = param(256, 'held-out problems (the exact clocks are computed on them)')
    n_ood: int = param(256, 'out-of-distribution problems evaluated (of the 900)')
    pool_seed: int = param(0, 'seed of the train / held-out split')
    d_model: int = param(64, 'transformer width')
    n_layers: int = param(2, 'transformer layers')
    n_heads: int = param(4, 'attention heads')
    d_mlp: int = param(256, 'MLP hidden width')
    warmup: WarmupConfig = param(WarmupConfig(), 'the supervised warm-up (flags --warmup-*)')
    loss_agg: str = param(
        "seq_sum",
        "token aggregation: seq_sum (sum over a response's tokens / ANSWER_LEN, mean over "
        "responses; Dr. GRPO) | seq_mean (mean over each response's tokens; GRPO) | token_mean "
        "(mean over all tokens of the minibatch; DAPO)", choices=LOSS_AGGS)
    minibatches: int = param(1, 'M optimizer steps per epoch (fixed_m) or the minibatches at '
                                'the batch mb_ref (fixed_size)')
    mb_convention: str = param(
        "fixed_m",
        "fixed_m: M fixed as B grows (TRL-like) | fixed_size: minibatch size mb_ref / M "
        "responses fixed, so M = minibatches * B / mb_ref grows with B (verl-like)",
        choices=MB_CONVENTIONS)
    mb_ref: int = param(64, 'fixed_size: the batch at which there are `minibatches` minibatches')
    dynamic_sampling: bool = param(
        False, "drop groups whose rewards are all equal (DAPO; the batch is not refilled: the "
               "loss averages the kept groups)")
    kl_coef: float = param(
        0.0, 'KL(pi || pi_ref) penalty. In the loss (kl_in loss): on the sampled tokens, each '
             'token\'s KL at its sampled prefix, ratio-weighted so that its expected gradient '
             'is that KL\'s (the prefixes held where they were sampled); in the reward: the '
             'sequence log-ratio, whose score-function gradient is the sequence KL\'s')
    kl_estimator: str = param(
        "k3", 'KL penalty estimator in the loss, times the ratio pi / pi_old: k1 (log pi - log '
              'pi_ref) | k3 (r - log r - 1, r = pi_ref / pi); either way the expected gradient '
              'is grad KL(pi || pi_ref) (the reward form is always k1)', choices=KL_ESTIMATORS)
    target: float = param(0.6, 'progress: exact held-out accuracy target')
    fail_stat: str = param("null", "the failure clock: null | kl | entropy (a drift statistic "
                                   "at its threshold) | damage (deploy accuracy damage_drop "
                                   "below its running peak)", choices=FAIL_STATS)
    null_threshold: float = param(0.3, 'null clock: |shift of the END_B vs END_A log-odds|')
    kl_threshold: float = param(0.5, 'kl clock: KL(pi || pi_ref) on held-out answers, nats')
    entropy_threshold: float = param(0.5, 'entropy clock: token entropy at or below, nats')
    collapse_drop: float = param(0.1, 'collapse: accuracy drop below its running peak')
    damage_drop: float = param(0.03, 'damage: deploy accuracy (END_A only) drop below its '
                                     'running peak')
    noise_every: int = param(2048, 'responses between gradient-noise-scale measurements')
    collapse_pool: str = param("heldout", 'collapse clock pool: heldout | ood',
                               choices=COLLAPSE_POOLS)

    def __post_init__(self):
        super().__post_init__()
        require_int("n_train", self.n_train)
        require_int("n_test", self.n_test)
        require(self.n_train + self.n_test <= N_PROBLEMS, "n_train",
                f"<= {N_PROBLEMS} - n_test = {N_PROBLEMS - self.n_test}", self.n_train)
        require_int("n_ood", self.n_ood)
        require(self.n_ood <= N_OOD, "n_ood", f"<= {N_OOD}", self.n_ood)
        require_int("pool_seed", self.pool_seed, lo=0)
        require_int("d_model", self.d_model)
        require_int("n_layers", self.n_layers)
        require_int("n_heads", self.n_heads)
        require(self.d_model % self.n_heads == 0, "n_heads",
                f"a divisor of d_model = {self.d_model}", self.n_heads)
        require_int("d_mlp", self.d_mlp)
        require(isinstance(self.warmup, WarmupConfig), "warmup", "a WarmupConfig",
                type(self.warmup).__name__)
        require_choice("loss_agg", self.loss_agg, LOSS_AGGS)
        require_choice("mb_convention", self.mb_convention, MB_CONVENTIONS)
        require_int("mb_ref", self.mb_ref)
        require(isinstance(self.dynamic_sampling, bool), "dynamic_sampling", "True or False",
                self.dynamic_sampling)
        require_choice("kl_estimator", self.kl_estimator, KL_ESTIMATORS)
        require_fraction("target", self.target)
        require_choice("fail_stat", self.fail_stat, FAIL_STATS)
        require_positive("null_threshold", self.null_threshold)
        require_positive("kl_threshold", self.kl_threshold)
        require_positive("entropy_threshold", self.entropy_threshold)
        require_fraction("collapse_drop", self.collapse_drop)
        require_fraction("damage_drop", self.damage_drop)
        require_int("noise_every", self.noise_every)
        require_choice("collapse_pool", self.collapse_pool, COLLAPSE_POOLS)

    def n_minibatches(self, batch: int | None = None) -> int:
        """M at batch B under the minibatch convention (fixed_size needs B)."""
        if self.mb_convention == "fixed_m":
            return self.minibatches
        require(batch is not None, "batch", "given under mb_convention fixed_size", batch)
        return max(1, self.minibatches * batch // self.mb_ref)


# The deployment regime: the warm-up ends 90% of its labels in END_A, the form a deployment
# grader accepts, and the failure clock is the damage that drift towards END_B does there.
DEPLOY = {"warmup": WarmupConfig(end_b=0.1), "fail_stat": "damage"}


def describe_batch(cfg: PolicyConfig, batch: int) -> dict:
    """What a batch of B responses is made of."""
    return {"prompts": cfg.prompts(batch), "group": cfg.group,
            "minibatches": cfg.n_minibatches(batch), "epochs": cfg.epochs}
