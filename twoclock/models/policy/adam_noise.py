"""What Adam sees of each direction's gradient noise, and the clock exponents that follows.

`predict` classifies a direction by its McCandlish noise scale along the direction, which is
what plain SGD sees. Adam divides each coordinate by its own root-mean-square gradient, so what
matters is each coordinate's noise scale B_i = sigma_i^2 / mu_i^2 (sigma_i^2 the per-response
variance of the surrogate gradient, mu_i its mean). At a policy w, from per-group gradients
g_pi of many rollout batches (all at w):

- Adam's steady normaliser at batch B: D_i(B) = 1 / sqrt(mu_i^2 + sigma_i^2 / B);
- the statistic's mean move per update (its unit gradient u, its gradient norm |grad s|):
  drift(B) = lr(B) |grad s| sum_i u_i mu_i D_i(B);
- its random-walk spread per update: sd(B) = lr(B) |grad s| sqrt(G Var_p(sum_i u_i g_pi D_i(B))
  / B), the P = B / G groups of one batch averaged;
- the updates n to move theta: the root of (drift n)^2 + sd^2 n = theta^2, and N(B) = B n.

KL(pi || pi_ref) has zero gradient at the reference, so its move is second order: with F the
Fisher of the held-out answers, KL after n updates ~ (1/2) [n^2 lr^2 vF(m) + n lr^2 G / B
E_p vF(g_p - m)] with vF(x) = (x D)^T F (x D) (one Hessian-vector product each).

With D_i = 1 these would be SGD's moves, whose regime the direction's own noise scale decides
(`predict`). What is left out: momentum (beta1 averages about 10 updates;
the runs take 5-190), the policy moving away from w (the directions turn), Adam's bias
correction of the first updates, and second-order effects on the linear statistics.
"""
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from twoclock.config import OptimConfig
from twoclock.models.policy import evaluate
from twoclock.models.policy.config import PolicyConfig
from twoclock.models.policy.dynamics import make_rollout, setup
from twoclock.models.policy.surrogate import group_objectives

LINEAR = ("acc", "entropy", "null")  # statistics with a first-order move at the reference


def per_group_grads(cfg: PolicyConfig, ref_batch: int, n_batches: int, seed: int = 0):
    """([n_batches * P, n_params] float32 per-group surrogate gradients at the reference policy,
    the unravel function)."""
    s = setup(cfg)
    G = cfg.group
    flat0, unravel = ravel_pytree(s.ref)
    rollout = make_rollout(cfg, s, ref_batch)

    @jax.jit
    def one(key):
        ro, _ = rollout(s.ref, key)
        ro_P = jax.tree_util.tree_map(lambda v: v.reshape((-1, G) + v.shape[1:]), ro)
        f = lambda flat, rg: group_objectives(unravel(flat), rg, cfg, s.arch, G, cfg.clip)[0]
        return jax.vmap(jax.grad(f), in_axes=(None, 0))(flat0, ro_P)

    keys = jax.random.split(jax.random.PRNGKey(seed), n_batches)
    return np.concatenate([np.asarray(one(k), np.float32) for k in keys]), unravel


def directions(cfg: PolicyConfig, unravel):
    """{stat: (unit gradient [n], gradient norm)} of the held-out statistics at the reference."""
    s = setup(cfg)
    flat0, _ = ravel_pytree(s.ref)
    stats = lambda flat: jnp.stack([evaluate.pool_stats(unravel(flat), s.arch, s.test,
                                                        s.logref_test)[k] for k in LINEAR])
    J = np.asarray(jax.jit(jax.jacrev(stats))(flat0), np.float64)  # [3, n]
    norm = np.linalg.norm(J, axis=1)
    return {k: (J[i] / norm[i], float(norm[i])) for i, k in enumerate(LINEAR)}


def fisher_quad(cfg: PolicyConfig, unravel):
    """vF(x_KxN) -> [K]: x^T H x, H the Hessian of the held-out KL(pi || pi_ref) at the
    reference (there the Fisher of the answers' token distributions)."""
    s = setup(cfg)
    flat0, _ = ravel_pytree(s.ref)
    kl = lambda flat: evaluate.pool_stats(unravel(flat), s.arch, s.test, s.logref_test)["kl"]
    hvp = lambda v: jax.jvp(jax.grad(kl), (flat0,), (v,))[1]
    quad = jax.jit(jax.vmap(lambda v: jnp.vdot(v, hvp(v))))
    return lambda x: np.concatenate([np.asarray(quad(jnp.asarray(x[i:i + 64], jnp.float32)))
                                     for i in range(0, len(x), 64)])


def first_passage(drift, sd, theta):
    """Updates n with (drift n)^2 + sd^2 n = theta^2."""
    d2, s2 = drift ** 2, sd ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(d2 > 0, (-s2 + np.sqrt(s2 ** 2 + 4 * d2 * theta ** 2)) / (2 * d2),
                     theta ** 2 / s2)
    return n


class Moments(NamedTuple):
    """Per coordinate, from per-group gradients: the mean gradient m, the unbiased mu^2 (floored
    at 0) and the per-response variance sigma^2."""
    m: np.ndarray
    mu2: np.ndarray
    sig2: np.ndarray

    def normaliser(self, batch: int, eps: float = 0.0) -> np.ndarray:
        """Adam's steady normaliser D_i(B) = 1 / (sqrt(mu_i^2 + sigma_i^2 / B) + eps)."""
        return 1.0 / (np.sqrt(self.mu2 + self.sig2 / batch) + eps)

    def noise_scales(self) -> np.ndarray:
        """B_i = sigma_i^2 / mu_i^2 in responses (inf where no mean gradient is measured)."""
        return np.where(self.mu2 > 0, self.sig2 / np.maximum(self.mu2, 1e-300), np.inf)


def moments(g_PxN, group: int) -> Moments:
    Pt = g_PxN.shape[0]
    m = g_PxN.mean(0, dtype=np.float64)
    var = g_PxN.var(0, ddof=1, dtype=np.float64)
    return Moments(m, np.maximum(m ** 2 - var / Pt, 0.0), group * var)


def adam_moves(g_PxN, u, batch: int, lr: float, group: int, eps: float = 0.0,
               mom: Moments | None = None):
    """(mean move, random-walk sd) per update of Adam at its steady normaliser along the unit
    vector u, for batches of `batch` responses (P = batch / group groups averaged); mom: the
    gradients' moments, if already computed."""
    mom = moments(g_PxN, group) if mom is None else mom
    D = mom.normaliser(batch, eps)
    x_P = g_PxN @ (u * D).astype(g_PxN.dtype)
    return (lr * float(np.dot(u * D, mom.m)),
            lr * float(np.sqrt(group * np.var(x_P, ddof=1) / batch)))


def unit_moves(cfg: PolicyConfig, batches, g_PxN, dirs: dict, quad=None, eps: float = 0.0,
               n_quad: int = 128, mom: Moments | None = None) -> dict:
    """Per batch, Adam's moves at lr = 1 (the lr enters as a factor lr, or lr^2 for the KL):
    {batch: {stat: (drift, sd) in the statistic's units, "kl": (a, c)}}."""
    G = cfg.group
    mom = moments(g_PxN, G) if mom is None else mom
    pick = np.random.default_rng(0).choice(len(g_PxN), size=min(n_quad, len(g_PxN)),
                                           replace=False)
    out = {}
    for b in batches:
        row = {k: tuple(norm * v for v in adam_moves(g_PxN, u, b, 1.0, G, eps, mom))
               for k, (u, norm) in dirs.items()}
        if quad is not None:
            D = mom.normaliser(b, eps)
            row["kl"] = (float(quad((mom.m * D)[None])[0]),
                         G / b * float(np.mean(quad((g_PxN[pick] - mom.m) * D))))
        out[str(b)] = row
    return out


def predict_clocks(cfg: PolicyConfig, opt: OptimConfig, lr0: float, moves: dict) -> dict:
    """{clock: {part: {batch: predicted responses}}} under opt's lr rule, part drift (the mean
    move alone), walk (the random walk alone) or both."""
    s = setup(cfg)
    theta = {"acc": cfg.target - s.start["acc"], "entropy": s.start["entropy"] -
             cfg.entropy_threshold, "null": cfg.null_threshold, "kl": cfg.kl_threshold}
    sign = {"acc": 1.0, "entropy": -1.0, "null": None}  # the way each clock is crossed
    parts = ("drift", "walk", "both")
    pred = {k: {p: {} for p in parts} for k in next(iter(moves.values()))}
    with np.errstate(divide="ignore"):
        for b, row in moves.items():
            lr = opt.lr(lr0, int(b))
            for k in LINEAR:
                drift, sd = lr * row[k][0], lr * row[k][1]
                if sign[k] is not None and drift * sign[k] <= 0:
                    drift = 0.0  # pushed the other way: only the random walk crosses
                th = theta[k]
                for p, n in (("drift", th / abs(drift) if drift else np.inf),
                             ("walk", th ** 2 / sd ** 2), ("both", first_passage(drift, sd, th))):
                    pred[k][p][b] = float(int(b) * n)
            if "kl" in row:
                a, c = lr ** 2 * row["kl"][0], lr ** 2 * row["kl"][1]
                th = theta["kl"]
                # KL ~ (1/2)(a n^2 + c n): the drift part, the walk part, and both
                pred["kl"]["drift"][b] = float(int(b) * np.sqrt(2 * th / a))
                pred["kl"]["walk"][b] = float(int(b) * 2 * th / c)
                pred["kl"]["both"][b] = float(int(b) * (-c + np.sqrt(c ** 2 + 8 * a * th))
                                              / (2 * a))
    return pred


def signal_share(b_i, dirs: dict, batches) -> dict:
    """{batch: {stat: the share of u's weight (u_i^2) on coordinates with B_i < B}}."""
    return {str(b): {k: float(np.sum(u ** 2 * (b_i < b))) for k, (u, _) in dirs.items()}
            for b in batches}


def exponents(pred: dict) -> dict:
    """{part: d log N / d log B between the smallest and largest batch}."""
    out = {}
    for k, per in pred.items():
        bs = sorted(per, key=int)
        if not bs:
            continue
        n0, n1 = per[bs[0]], per[bs[-1]]
        ok = np.isfinite(n0) and np.isfinite(n1) and n0 > 0 and n1 > 0
        out[k] = float(np.log(n1 / n0) / np.log(int(bs[-1]) / int(bs[0]))) if ok else None
    return out


def measure(cfg: PolicyConfig, rules: dict, batches, ref_batch: int = 1024,
            n_batches: int = 8, seed: int = 0, with_kl: bool = True) -> dict:
    """The per-coordinate noise measurement at the reference policy and the clocks it predicts
    for each {name: (OptimConfig, lr0)} of rules (Adam's eps from the first)."""
    g, unravel = per_group_grads(cfg, ref_batch, n_batches, seed)
    dirs = directions(cfg, unravel)
    quad = fisher_quad(cfg, unravel) if with_kl else None
    eps = next(iter(rules.values()))[0].eps
    mom = moments(g, cfg.group)
    moves = unit_moves(cfg, batches, g, dirs, quad, eps, mom=mom)
    b_i = mom.noise_scales()
    out = {"groups": int(g.shape[0]), "responses": int(g.shape[0] * cfg.group),
           "n_params": int(g.shape[1]), "signal_share": signal_share(b_i, dirs, batches),
           "b_i_quantiles": {str(q): float(np.quantile(b_i, q, method="lower"))
                             for q in (0.1, 0.5, 0.9)}, "rules": {}}
    for name, (opt, lr0) in rules.items():
        pred = predict_clocks(cfg, opt, lr0, moves)
        out["rules"][name] = {"lr0": lr0, "clocks": pred,
                              "exponent": {k: exponents(v) for k, v in pred.items()}}
    return out
