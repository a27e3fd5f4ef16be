"""GRPO, the layer the bandit and the policy share: the group of G responses per prompt, the
group advantage, M minibatches x E epochs per rollout batch with the ratio clip, and the
measured gradient noise scale that places a direction in its regime.

A model's config inherits `GRPOConfig` (its fields keep their flags and JSON keys), builds
its loss on `twoclock.objectives` with the ratio band `clip` (a `ClipBand`, made from the flags
clip_low / clip_high), and consumes a rollout batch with `inner_scan`.
"""
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.config import finite, param, require, require_choice, require_int, require_positive
from twoclock.objectives import ADVANTAGES, ClipBand, clip_band


ADVANTAGE_HELP = (
    "grpo: (r - mean) / (std + eps) with the population std over the group (ddof 0) | "
    "grpo_bessel: the same with the Bessel-corrected std (ddof 1, TRL's and verl's), "
    "sqrt((G - 1) / G) times grpo's | drgrpo | rloo. grpo stays the default so that results "
    "compare with this project's published tables (docs/policy.md, GRPO conventions)")
KL_PLACES = ("loss", "reward")
KL_IN_HELP = (
    "where the KL penalty enters: loss (a penalty term of the surrogate) | reward (r - kl_coef "
    "* (log pi_old(y) - log pi_ref(y)) per response, the k1 estimate at the behaviour policy "
    "with no gradient through it, before the group advantage; its score-function gradient is "
    "that of the sequence KL(pi || pi_ref))")


@dataclass(frozen=True)
class GRPOConfig:
    """The fields every GRPO-trained model has; a model's config adds its own after them."""
    group: int = param(8, 'G responses per prompt')
    advantage: str = param("grpo", ADVANTAGE_HELP, choices=ADVANTAGES)
    adv_eps: float = param(1e-6, 'GRPO std epsilon')
    minibatches: int = param(1, 'M optimizer steps per epoch')
    epochs: int = param(1, 'E passes over a rollout batch')
    clip_low: float | None = param(
        0.2, "ratio clip: the band's low edge 1 - clip_low ('none': unclipped)")
    clip_high: float | None = param(
        None, "ratio clip: the band's high edge 1 + clip_high (default clip_low; larger: "
              "DAPO's clip-higher)")
    kl_coef: float = param(0.0, 'KL(pi || pi_ref) penalty')
    clip_ratio_c: float | None = param(
        None, "dual clip (verl's clip_ratio_c): for A < 0 the objective is max(the clipped "
              "one, c A), so a ratio past c stops pushing a negative-advantage sample down "
              "(c > 1; 'none': off)")
    kl_in: str = param("loss", KL_IN_HELP, choices=KL_PLACES)
    reshuffle: bool = param(
        False, "each epoch after the first splits the prompts into minibatches anew, drawn from "
               "the update's own randomness (default: every epoch reuses the first split)")

    def __post_init__(self):
        require_int("group", self.group, lo=2)
        require_choice("advantage", self.advantage, ADVANTAGES)
        require_positive("adv_eps", self.adv_eps)
        require_int("minibatches", self.minibatches)
        require_int("epochs", self.epochs)
        clip_band(self.clip_low, self.clip_high)  # ValueError naming clip_low or clip_high
        require(finite(self.kl_coef) and self.kl_coef >= 0, "kl_coef", "a finite number >= 0",
                self.kl_coef)
        if self.clip_ratio_c is not None:
            require(finite(self.clip_ratio_c) and self.clip_ratio_c > 1, "clip_ratio_c",
                    "a finite number > 1 or none", self.clip_ratio_c)
        require_choice("kl_in", self.kl_in, KL_PLACES)
        require(isinstance(self.reshuffle, bool), "reshuffle", "True or False", self.reshuffle)

    @property
    def clip(self) -> ClipBand:
        """The ratio band of clip_low / clip_high, the one name every objective and kernel
        takes it by (`twoclock.objectives.clip_band`; UNCLIPPED for clip_low None)."""
        return clip_band(self.clip_low, self.clip_high)

    @property
    def kl_in_loss(self) -> bool:
        """A KL penalty term in the loss: kl_coef > 0 and kl_in 'loss'."""
        return self.kl_coef > 0 and self.kl_in == "loss"

    @property
    def kl_in_reward(self) -> bool:
        """A KL penalty in the reward: kl_coef > 0 and kl_in 'reward'."""
        return self.kl_coef > 0 and self.kl_in == "reward"

    def n_minibatches(self, batch: int | None = None) -> int:
        """M at rollout batch B (here `minibatches` whatever B; a model may tie it to B)."""
        return self.minibatches

    def inner_steps(self, batch: int | None = None) -> int:
        """Optimizer steps per rollout batch, M E; with one, the step is on-policy (every
        importance ratio is 1, so no clip can bind). batch: needed only where M follows B."""
        return self.n_minibatches(batch) * self.epochs

    def prompts(self, batch: int) -> int:
        """P = B / G prompts per rollout batch; ValueError unless B is a multiple of G and P
        splits into M minibatches."""
        require_int("batch", batch)
        require(batch % self.group == 0, "batch", f"a multiple of group G = {self.group}", batch)
        P, M = batch // self.group, self.n_minibatches(batch)
        require(P % M == 0, "minibatches",
                f"a count that divides prompts per batch P = {P} (batch {batch} / group "
                f"{self.group}); here M = {M}", self.minibatches)
        return P

    def reshuffles(self, batch: int | None = None) -> bool:
        """Whether an update draws new minibatch splits: reshuffle on, with M > 1 minibatches
        and E > 1 epochs (one minibatch, or one epoch, has no split to redraw)."""
        return self.reshuffle and self.n_minibatches(batch) > 1 and self.epochs > 1


def optimizer_step(tx, w, opt_state, g):
    """(w, opt_state) after one step of the optax transform tx on the gradient g."""
    upd, opt_state = tx.update(g, opt_state, w)
    return optax.apply_updates(w, upd), opt_state


def epoch_orders(bits_ExP, per_prompt: int = 1):
    """int32 [E, P per_prompt]: the rows of a rollout batch each epoch reads, in order. Epoch
    0 reads them as they are; epoch e > 0 in the order that sorts the raw random bits
    bits_ExP[e - 1] (a permutation of the P prompts), each prompt's per_prompt contiguous rows
    kept together. bits_ExP: [E - 1, P] raw random bits (any integer type)."""
    E1, P = bits_ExP.shape
    perm_ExP = jnp.concatenate([jnp.arange(P)[None], jnp.argsort(bits_ExP, axis=-1)])
    rows = perm_ExP[:, :, None] * per_prompt + jnp.arange(per_prompt)[None, None]
    return rows.reshape(E1 + 1, P * per_prompt).astype(jnp.int32)


def inner_scan(tx, w, opt_state, ro, M: int, steps: int, grad, order=None):
    """(w, opt_state, aux [steps, ...]) after `steps` = M E optimizer steps on the rollout
    batch ro (a pytree of arrays with leading axis split into M equal minibatches), taken in
    order; each epoch again in the same split, or, with order (int [E, N], `epoch_orders`),
    epoch e's minibatch m is the rows order[e, m N / M : (m + 1) N / M]. grad(w, mb) ->
    (g, aux)."""
    if order is None:
        ro_M = jax.tree_util.tree_map(lambda v: v.reshape((M, v.shape[0] // M) + v.shape[1:]),
                                      ro)
        pick = lambda s: jax.tree_util.tree_map(lambda v: v[s % M], ro_M)
    else:
        n = order.shape[1] // M

        def pick(s):
            rows = jax.lax.dynamic_slice_in_dim(order[s // M], (s % M) * n, n)
            return jax.tree_util.tree_map(lambda v: jnp.take(v, rows, axis=0), ro)

    def step(carry, s):
        w, opt_state = carry
        g, aux = grad(w, pick(s))
        return optimizer_step(tx, w, opt_state, g), aux

    (w, opt_state), aux = jax.lax.scan(step, (w, opt_state), jnp.arange(steps))
    return w, opt_state, aux


def noise_scale(noise, signal, axis=None):
    """B_simple = mean(noise) / mean(signal) over `axis` (all: None), mean first, then the
    ratio, in the means' own type; inf where the mean signal is not positive (no detectable
    signal)."""
    n, s = np.mean(noise, axis=axis), np.mean(signal, axis=axis)
    return np.where(s > 0, n / np.where(s > 0, s, 1.0), np.inf)


def measured_until(samples_C, until, fresh_C=None):
    """bool [C]: the checkpoints (at samples_C) that decide a clock whose median is `until`
    samples: those up to it (all where the clock is censored, None), only the fresh
    measurements among them if fresh_C is given, and at least the first (fresh) one."""
    keep = np.asarray(samples_C) <= (until if until is not None else np.inf)
    if fresh_C is None:
        keep[0] = True
    else:
        keep &= fresh_C
        keep[np.argmax(fresh_C)] = True
    return keep


def regime_of(b_simple: float, batch: int, walk: bool = True) -> str:
    """A direction's regime at batch B: noise (B < B_simple) or signal; without a measured
    mean drive (B_simple inf) a random walk, or with walk=False simply noise."""
    if walk and not np.isfinite(b_simple):
        return "random walk"
    return "noise" if b_simple > batch else "signal"
