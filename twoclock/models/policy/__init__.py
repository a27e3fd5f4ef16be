"""Model 3: a tiny transformer policy, warmed up by supervised training, then trained by GRPO
on a verifiable task, so that both clocks are found in a real network instead of built in.

Task (`task`). 2-digit addition: a prompt "ab+cd=" (6 tokens), a response of at most 3 digits
and an end token (4 tokens), an exact-match verifier. Two end tokens END_A / END_B are both
accepted: a reward-indifferent choice the policy can drift in. Train, held-out and
out-of-distribution pools (OOD: both ones digits >= 7, never trained on).

Policy (`net`). A pre-LN decoder-only transformer in pure JAX (no flax: one more dependency
for ~150 lines of dense layers; params are a plain dict pytree), 2 layers, d 64, 4 heads,
about 100k parameters. It samples with a key-value cache under `lax.scan`; every dense layer
runs on 2-D arrays.

Warm-up (`warmup`). Cross-entropy on noisy labels (60% wrong sums by default, END_B on half)
until the exact held-out accuracy first reaches 0.3, which keeps the token entropy above 1 nat
(a sharp start gives GRPO nothing to learn from). Trained once per warm-up config (`prepare`,
which the engine calls before a sweep) and cached as a checksummed .npz keyed by its sha256.
Its params are the reference policy pi_ref and every run's start.

GRPO (`surrogate`, `dynamics`). One update = one rollout batch of B responses: P = B / G
train prompts, G responses each, rewards from the verifier, group advantages (grpo | drgrpo |
rloo), then M minibatches x E epochs of Adam on the clipped token-level surrogate, the ratio
against the behaviour policy (clip_low / clip_high, or unclipped), optionally with dynamic
sampling and a k1 / k3 KL penalty. M is fixed as B grows (fixed_m, TRL-like) or follows B
(fixed_size, verl-like). The behaviour log-probabilities are the KV-cache sampler's own, so
with M = E = 1 every ratio is 1 to float precision (within 1e-5) and clipping changes nothing.

Clocks (in responses; exact statistics of the held-out pool after every update, `evaluate`):
prog: accuracy (the teacher-forced probability of the accepted answers) >= target;
null: |shift of log p(END_B) / p(END_A) at the end position| >= null_threshold;
kl: the token-level KL(pi || pi_ref) along the correct answers >= kl_threshold;
entropy: the token entropy along the correct answers <= entropy_threshold;
collapse: held-out (or OOD) accuracy <= its running peak - collapse_drop;
damage: deploy accuracy (END_A only: a deployment grader's) <= its running peak - damage_drop;
fail: one of null | kl | entropy | damage (fail_stat); div: a non-finite statistic or parameter.
The `deploy` preset is the harmful drift: a warm-up that ends 90% of its answers in END_A,
and the damage clock as the failure clock (docs/policy.md: a symmetric random walk of the
END_B log-odds, so only the seeds that drift towards END_B are damaged).
Checkpoints also record the clip fraction, reward, response length, and each direction's
gradient noise scale from per-group gradients (`dynamics.noise_stats`), which `predict` turns
into a regime and a predicted batch exponent per clock.
"""
from twoclock.model import Model
from twoclock.models.policy import evaluate, net, surrogate, task, warmup
from twoclock.models.policy.config import DEPLOY, PolicyConfig, WarmupConfig, describe_batch
from twoclock.models.policy.dynamics import EXTRA_CLOCKS, dynamics, knobs, prepare, setup
from twoclock.models.policy.predict import predict


def progress_target(cfg: PolicyConfig) -> float:
    """The accuracy target on the scale of ckpt["progress_frac"] (held-out error over the
    warm-up's): (1 - target) / (1 - the warm-up's held-out accuracy)."""
    return (1.0 - cfg.target) / (1.0 - setup(cfg).start["acc"])


def log_conditions(cfg: PolicyConfig) -> tuple:
    """What a trainer would log and threshold, on this model's checkpoint names: held-out
    accuracy for progress; the END_B / END_A log-odds shift (`drift`, with fail_stat "null"),
    deploy accuracy below its running peak (fail_stat "damage"), KL to the warm-up policy and
    token entropy for failure."""
    first = {"null": (f"drift>={cfg.null_threshold:g}",),
             "damage": (f"deploy_acc<=peak-{cfg.damage_drop:g}",)}.get(cfg.fail_stat, ())
    fails = (f"kl>={cfg.kl_threshold:g}", f"entropy<={cfg.entropy_threshold:g}")
    return (f"heldout_acc>={cfg.target:g}", first + fails)


MODEL = Model(
    name="policy", config=PolicyConfig, dynamics=dynamics, predict=predict,
    describe_batch=describe_batch,
    # lr0 is quoted at the default b0 = 8 responses
    default_sweep=dict(batches=(64, 128, 256, 512), lr0s=(1e-4,), seeds=4, budget=16_384),
    static_batch=True, unit="responses", batch_unit="responses per update",
    extra_clocks=EXTRA_CLOCKS, progress_label="held-out error / initial error",
    title="policy (transformer, GRPO)", progress_target=progress_target,
    prepare=prepare, presets={"deploy": DEPLOY}, knobs=knobs)

__all__ = ["MODEL", "DEPLOY", "EXTRA_CLOCKS", "PolicyConfig", "WarmupConfig", "describe_batch",
           "dynamics", "evaluate", "log_conditions", "net", "predict", "prepare", "progress_target", "setup",
           "surrogate", "task", "warmup"]
