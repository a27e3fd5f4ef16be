"""Model 2: the verifiable-reward bandit (RLVR), trained the way LLMs are trained with GRPO/PPO.

Problem. Train and held-out pools of prompts x; K candidate responses a per prompt; a verifier
r(x, a) in {0, 1} with `n_correct` correct responses per prompt. A "pretrained" logit table z0
gives each prompt an initial pass rate p0(x) ~ Beta(pass_a, pass_b) (spread evenly over the
correct and over the wrong responses).

Policy. pi_w(a | x) = softmax_a(z0(x, a) + phi(x, a) @ w) with shared features phi of dim
D = skill_dim + drift_dim, w = 0 at the start (the reference policy):
- skill block: phi_s(x, a) = skill_signal * (r(x, a) - n_correct / K) * u + feature_noise * eta,
  u = ones / sqrt(skill_dim), eta ~ N(0, I). Moving w_s along u raises the logits of correct
  responses on every prompt, held-out ones included (noise features limit the generalisation).
- drift block: phi_d(x, a) = drift_scale * zeta (held-out prompts) or drift_train_scale * zeta
  (train prompts, default 0), zeta ~ N(0, I), unrelated to correctness. The drift acts off the
  training distribution: invisible to the train verifier (so nothing resists it), it adds a
  random logit perturbation of scale ~|w_d| drift_scale sqrt(drift_dim) on held-out prompts,
  which eventually scrambles the policy there: held-out accuracy collapses while train
  accuracy holds (the *emergent* collapse).

Injected drift (drift_source = "injected", the default). Each sampled response i carries a
non-verifier shaping signal xi_ij ~ N(drift_bias, drift_noise) per drift coordinate j (think
of a weak style/length bonus). It enters the
surrogate as a shaping term whose parameter gradient points along the drift coordinates,
importance-weighted and masked like a hard trust region:
    J_i = min(rho_i A_i, clip(rho_i) A_i) + keep_i * sg(rho_i) * sum_j xi_ij * w_dj,
keep_i = 1[1 - clip_low <= rho_i <= 1 + clip_high] (always 1 unclipped; shaping_clip = "ppo"
instead stops a sample by PPO's rule with the pull's own sign, see `surrogate.shaping_keep`).
xi has no advantage sign to clip against (it is mostly noise), hence the symmetric mask. So the
drift's per-sample gradient has mean -drift_bias and variance drift_noise whatever the policy's
entropy: its pull does *not* fade as the policy sharpens (a pull acting through the policy's
own sampling, e.g. a shaping reward added to r, does: Var_pi(phi_d) -> 0), and GRPO's std
normalisation never sees it. With drift_train_scale > 0 the verifier's own gradient also acts
on w_d (a restoring force once drift hurts train accuracy); the measured noise scale includes it.

Emergent drift (drift_source = "emergent"). No xi: w_d moves only under the policy's own
gradient. The drift features are present on train prompts (drift_train_scale, default here 1)
with, on every prompt, equal means over its correct and its wrong responses, so at the reference
policy they carry no correctness signal (the mean drift gradient is zero, tested), plus two
sources of a pull: `spurious` (r - n_correct / K) along v = ones / sqrt(drift_dim) (a spurious
correlation of the train pool), and `shaping` lam, a non-verifier reward s(x, a) = phi_d(x, a).v
added to r before the group advantage (a style bonus, as real shaping enters). With GRPO's std
normalisation the bonus dominates the advantage in groups whose verifier rewards are all equal,
so the pull grows as the policy solves prompts; wherever the verifier sees the drift (mixed
groups) it resists it. Held-out drift features at drift_scale > drift_train_scale make the drift
damage held-out prompts more than train ones. The clipping study (`twoclock.studies.clipping`)
runs in this regime; the failure statistic is mean(w_d) (drift_stat "mean"; "rms": RMS(w_d)).

Rollouts and updates. One *update* = one rollout batch: P = B / G prompts sampled with
replacement from the train pool, G responses each (B responses), advantages per group, then
M minibatch optimizer steps (P / M prompts each) x E epochs over the batch, the ratio
pi_w / pi_behaviour taken against the policy that sampled the batch. With M = E = 1 the ratio
is 1 at the only step and clipping changes nothing. The learning-rate rule uses B (responses).
Each update records the clip fraction over all samples and over nonzero-advantage samples, the
movement |dw| of the skill and the drift block over the rollout batch, the RMS log-ratio of the
batch's sampled responses that each block's movement alone gives, the drift's restoring force
(the loss gradient along w_d) and Adam's normaliser of the drift block.

Implementation (for speed; the model is the one above). `surrogate.group_loss` is the
definition of the surrogate; runs use its closed-form gradient `surrogate.group_grads` (score
function phi(a) - E_pi phi, tested equal to autodiff). Each update's randomness is one raw-bits
draw from fold_in(key, t) (`rollout.make_rollout`).

Clocks (in responses; updates = rollout batches). Progress: first update after which the exact
held-out accuracy >= target. Failure: first update after which the drift statistic, the mean
signed displacement of the drift coordinates from their start (mean(w_d), or RMS(w_d) with
drift_stat = "rms"), >= drift_threshold.
Emergent collapse (extra["collapse_n"]): first update after which held-out accuracy <= its
running peak - collapse_drop.
"""
import jax.numpy as jnp

from twoclock.model import Model
from twoclock.models.bandit import problem, rollout, surrogate, theory
from twoclock.models.bandit.config import EMERGENT, BanditConfig, describe_batch
from twoclock.models.bandit.dynamics import dynamics, pools
from twoclock.models.bandit.predict import predict


def progress_target(cfg: BanditConfig) -> float:
    """The accuracy target on the scale of ckpt["progress_frac"] (held-out error over the
    initial error): (1 - target) / (1 - initial held-out accuracy)."""
    _, test = pools(cfg)
    acc0 = float(problem.accuracy(jnp.zeros(test.phi.shape[-1], test.phi.dtype), test))
    return (1.0 - cfg.target) / (1.0 - acc0)


def log_conditions(cfg: BanditConfig) -> tuple:
    """The engine's own clocks on the checkpoint names (progress_frac at the progress target,
    drift at the drift threshold), plus drift proxies a trainer logs: KL to the reference and
    entropy (plan_check --logs)."""
    return (f"progress_frac<={progress_target(cfg):.9g}",
            (f"drift>={cfg.drift_threshold:g}", "kl>=1.5", "entropy<=0.4"))


MODEL = Model(
    name="bandit", config=BanditConfig, dynamics=dynamics, predict=predict,
    describe_batch=describe_batch,
    # lr0 is quoted at the default b0 = 8 responses
    default_sweep=dict(batches=(64, 128, 256, 512, 1024), lr0s=(0.02,), seeds=16,
                       budget=100_000),
    static_batch=True, unit="responses", batch_unit="responses per update",
    extra_clocks=("collapse",), progress_label="held-out error / initial error",
    title="bandit (RLVR)", progress_target=progress_target,
    presets={"emergent": EMERGENT})

__all__ = ["MODEL", "EMERGENT", "BanditConfig", "describe_batch", "dynamics", "log_conditions",
           "pools", "predict", "problem", "rollout", "surrogate", "theory"]
