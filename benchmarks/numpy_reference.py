"""Plain NumPy references of the simulators, vectorised over lanes (seeds x lr x batch).

They exist to check that the JAX engine's speed is measured against the same work: the same
model, the same optimizer (optax's Adam with bias correction, eps outside the square root),
one Gaussian draw per coordinate-update, first crossings tracked every update. They are
straightforward loops over updates with every array operation done for all lanes at once.

A first crossing is the engine's: where the condition is a metric against a threshold, the
zero of the line through the margins (>= 0: the condition holds) after the updates either
side of it, t - 1 + m_{t-1} / (m_{t-1} - m_t) in updates; divergence counts whole updates.
"""
from typing import Callable

import numpy as np

from twoclock import OptimConfig, QuadraticConfig, SweepConfig
from twoclock.models.quadratic import initial_loss, initial_offset, noise_variances, rotation, spectrum
from twoclock.engine.sweep import n_steps_for


class _First:
    """First crossings of one margin over N lanes, interpolated between updates (0 = never)."""

    def __init__(self, margin0_N):
        self.t_N = np.zeros(np.shape(margin0_N), np.float64)
        self.prev_N = np.asarray(margin0_N, np.float64)

    def update(self, t: int, margin_N) -> None:
        m = np.asarray(margin_N, np.float64)
        new = (self.t_N == 0) & (m >= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(self.prev_N < 0, self.prev_N / (self.prev_N - m), 1.0)
        f = np.clip(np.nan_to_num(f, nan=1.0), np.finfo(np.float32).tiny, 1.0)
        self.t_N[new] = (t - 1) + f[new]
        self.prev_N = m


def _adam_hparams(opt: OptimConfig, batch_N: np.ndarray, dtype):
    """b1, b2, eps as [N, 1] arrays (Malladi companions make them depend on the batch)."""
    b1 = np.full(batch_N.shape, opt.beta1)
    b2 = np.full(batch_N.shape, opt.beta2)
    eps = np.full(batch_N.shape, opt.eps)
    if opt.malladi:
        k = batch_N / opt.b0
        b1 = 1.0 - np.minimum(k * (1.0 - b1), 1.0)
        b2 = 1.0 - np.minimum(k * (1.0 - b2), 1.0)
        eps = eps / np.sqrt(k)
    return tuple(a.astype(dtype)[:, None] for a in (b1, b2, eps))


def quadratic_lanes(cfg: QuadraticConfig, opt: OptimConfig, batch_N, lr_N, n_steps: int,
                    seed: int = 0, dtype=np.float32,
                    noise: Callable[[int], np.ndarray] | None = None) -> dict:
    """Run N lanes of the quadratic model for n_steps updates; one lane per (batch, lr).

    noise(t) -> z_NxP standard normals for update t (1-based) replaces the generator, so a
    test can feed both implementations the same draws. Returns first crossings prog_t /
    fail_t / div_t (float64 [N] updates, 0 = never), and the final loss_N, drift_N, theta_NxP.
    """
    batch_N = np.asarray(batch_N, np.float64)
    lr_N = np.asarray(lr_N, np.float64)
    N, D, Dd = batch_N.size, cfg.dim, cfg.drift_dim
    P = D + Dd
    h = spectrum(cfg).astype(dtype)
    half_h = (0.5 * spectrum(cfg)).astype(dtype)
    q = rotation(cfg)
    q = None if q is None else q.astype(dtype)
    c_P = np.concatenate([noise_variances(cfg), np.full(Dd, cfg.drift_noise)])
    sd_NxP = np.sqrt(c_P[None, :] / batch_N[:, None]).astype(dtype)
    lr_N1 = lr_N.astype(dtype)[:, None]
    target = cfg.target * initial_loss(cfg)
    rng = np.random.default_rng(seed)

    theta = np.zeros((N, P), dtype)
    theta[:, :D] = initial_offset(cfg).astype(dtype)
    x, d = theta[:, :D], theta[:, D:]  # views
    g = np.empty((N, P), dtype)
    tmp = np.empty((N, P), dtype)
    mu = np.zeros((N, P), dtype)
    nu = np.zeros((N, P), dtype)
    if opt.name == "adam":
        b1, b2, eps = _adam_hparams(opt, batch_N, dtype)
        one_m_b1, one_m_b2 = (1 - b1).astype(dtype), (1 - b2).astype(dtype)
    # the start: loss L0, drift 0 (the mean or the norm of a zero block)
    prog, fail = _First(np.full(N, target - initial_loss(cfg))), \
        _First(np.full(N, -cfg.drift_threshold))
    div_t = np.zeros(N, np.float64)
    loss = drift = np.zeros(N, dtype)

    for t in range(1, n_steps + 1):
        # gradient: H x + sqrt(c/B) z (in the eigenbasis when rotated); drift: -b + noise
        if noise is None:
            rng.standard_normal(out=g, dtype=dtype)
        else:
            g[...] = noise(t)
        g *= sd_NxP
        if q is None:
            g[:, :D] += h * x
        else:
            g[:, :D] = (h * (x @ q) + g[:, :D]) @ q.T
        g[:, D:] -= dtype(cfg.drift_bias)

        if opt.name == "adam":
            mu *= b1
            np.multiply(g, one_m_b1, out=tmp)
            mu += tmp
            nu *= b2
            np.multiply(g, g, out=tmp)
            tmp *= one_m_b2
            nu += tmp
            c1 = (1 / (1 - b1 ** dtype(t))).astype(dtype)  # bias corrections, [N, 1]
            c2 = (1 / (1 - b2 ** dtype(t))).astype(dtype)
            np.multiply(nu, c2, out=tmp)
            np.sqrt(tmp, out=tmp)
            tmp += eps
            np.divide(mu, tmp, out=tmp)
            tmp *= c1
            tmp *= lr_N1
            theta -= tmp
        elif opt.name == "momentum":
            mu *= dtype(opt.momentum)
            mu += g
            theta -= lr_N1 * mu
        else:
            theta -= lr_N1 * g

        e = x if q is None else x @ q
        loss = (e * e) @ half_h
        if Dd == 0:  # no drift block (the mean of an empty block would warn)
            drift = np.zeros(N, dtype)
        else:
            drift = d.mean(axis=1) if cfg.drift_stat == "mean" else np.linalg.norm(d, axis=1)
        # the margins in the model's float type, as the engine computes them
        prog.update(t, dtype(target) - loss)
        fail.update(t, drift - dtype(cfg.drift_threshold))
        div_t[(div_t == 0) & ~(np.isfinite(loss) & np.isfinite(drift))] = t
    return {"prog_t": prog.t_N, "fail_t": fail.t_N, "div_t": div_t, "loss": loss,
            "drift": drift, "theta": theta}


def quadratic_sweep(cfg: QuadraticConfig, opt: OptimConfig, sweep: SweepConfig,
                    dtype=np.float32) -> dict:
    """The run_sweep grid in NumPy: one vectorised loop per batch over (lr0, seed) lanes.

    Returns prog_n / fail_n / div_n / prog_t as float64 [B, L, S] (samples; 0 = never).
    Seeds come from NumPy's generator, so agreement with JAX is statistical, not bitwise.
    """
    nB, nL, S = len(sweep.batches), len(sweep.lr0s), sweep.seeds
    out = {k: np.zeros((nB, nL, S)) for k in ("prog_n", "fail_n", "div_n", "prog_t")}
    for i, b in enumerate(sweep.batches):
        lr_N = np.repeat(opt.lr_grid([b], sweep.lr0s)[0], S)
        r = quadratic_lanes(cfg, opt, np.full(nL * S, b), lr_N, n_steps_for(sweep.budget, b),
                            seed=sweep.seed * 1_000_003 + i, dtype=dtype)
        out["prog_t"][i] = r["prog_t"].reshape(nL, S)
        for k in ("prog", "fail", "div"):
            out[k + "_n"][i] = (r[k + "_t"] * b).reshape(nL, S)
    return out


def bandit_lanes(cfg, opt: OptimConfig, batch: int, lr_N, n_steps: int, seed: int = 0,
                 dtype=np.float32) -> dict:
    """N lanes of the bandit (twoclock.bandit) with one rollout batch of `batch` responses per
    update, in NumPy. Covers the default update (M = E = 1, no KL penalty): the ratio is 1 at
    the only step, so the surrogate's gradient is the plain policy gradient plus the shaping pull.

    Does the engine's work per update: sample prompts and responses, GRPO/Dr.GRPO/RLOO
    advantages, per-group gradients (for the noise scale), Adam, exact held-out accuracy.
    Returns first crossings prog_t / fail_t / coll_t (float64 [N] updates, 0 = never) and final
    w_NxD.
    """
    from twoclock.models.bandit.problem import make_problem
    if cfg.minibatches != 1 or cfg.epochs != 1 or cfg.kl_coef != 0 or opt.name != "adam":
        raise ValueError("the NumPy bandit covers M = E = 1, kl_coef = 0 and Adam only")
    lr_N1 = np.asarray(lr_N, dtype)[:, None]
    N = lr_N1.shape[0]
    P, G, Ds = cfg.prompts(batch), cfg.group, cfg.skill_dim
    D = Ds + cfg.drift_dim
    train, test = (tuple(np.asarray(v, dtype) for v in pool) for pool in make_problem(cfg))
    z0_tr, phi_tr, R_tr = train
    z0_te, phi_te, R_te = test
    rng = np.random.default_rng(seed)
    b1, b2, eps = _adam_hparams(opt, np.full(N, float(batch)), dtype)
    w = np.zeros((N, D), dtype)
    mu = np.zeros((N, D), dtype)
    nu = np.zeros((N, D), dtype)

    def softmax(logits):
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    def accuracy(w):
        p = softmax(z0_te + np.einsum("xkd,nd->nxk", phi_te, w))
        return (p * R_te).sum(axis=-1).mean(axis=-1)

    peak = accuracy(w)
    # the start: accuracy acc0 = peak, drift 0
    prog, fail = _First(peak - dtype(cfg.target)), _First(np.full(N, -cfg.drift_threshold))
    coll = _First(np.full(N, -cfg.collapse_drop))
    n_idx, p_idx = np.arange(N)[:, None, None], np.arange(P)[None, :, None]
    for t in range(1, n_steps + 1):
        x = rng.integers(0, cfg.n_train, size=(N, P))
        phi = phi_tr[x]                                                    # [N, P, K, D]
        pi = softmax(z0_tr[x] + np.einsum("npkd,nd->npk", phi, w))         # [N, P, K]
        u = rng.random((N, P, G), dtype=dtype)
        a = (np.cumsum(pi, axis=-1)[:, :, None, :] < u[..., None]).sum(-1)
        a = np.minimum(a, cfg.responses - 1)                                # [N, P, G]
        r = R_tr[x][n_idx, p_idx, a]
        cen = r - r.mean(axis=-1, keepdims=True)
        if cfg.advantage == "grpo":
            adv = cen / (r.std(axis=-1, keepdims=True) + dtype(cfg.adv_eps))
        elif cfg.advantage == "rloo":
            adv = cen * dtype(G / (G - 1))
        else:
            adv = cen
        # grad of -mean_G A log pi(a) = -mean_G A (phi_a - E_pi phi); E_G A = 0 drops E_pi phi
        phi_a = phi[n_idx, p_idx, a]                                       # [N, P, G, D]
        g_PD = -np.einsum("npg,npgd->npd", adv, phi_a) / G
        # M = E = 1: only the group mean of the shaping signal enters, N(b, c_d / G), drawn
        # directly as twoclock.bandit does (the same distribution as G draws averaged)
        xi_mean = dtype(cfg.drift_bias) + dtype(np.sqrt(cfg.drift_noise / G)) * \
            rng.standard_normal((N, P, cfg.drift_dim), dtype=dtype)
        g_PD[..., Ds:] -= xi_mean
        # per-response noise and signal per block (the engine's noise_stats)
        for sl in (slice(0, Ds), slice(Ds, D)):
            gb = g_PD[..., sl]
            m = gb.mean(axis=1)
            tr_group = gb.var(axis=1, ddof=1).sum(-1) if P > 1 else np.zeros(N, dtype)
            _noise, _signal = G * tr_group, (m * m).sum(-1) - tr_group / P  # noqa: F841
        g = g_PD.mean(axis=1)
        mu = b1 * mu + (1 - b1) * g
        nu = b2 * nu + (1 - b2) * g * g
        upd = (mu / (1 - b1 ** dtype(t))) / (np.sqrt(nu / (1 - b2 ** dtype(t))) + eps)
        w = w - lr_N1 * upd
        acc = accuracy(w)
        drift = w[:, Ds:].mean(axis=1)
        peak = np.maximum(peak, acc)
        prog.update(t, acc - dtype(cfg.target))
        fail.update(t, drift - dtype(cfg.drift_threshold))
        coll.update(t, peak - dtype(cfg.collapse_drop) - acc)
    return {"prog_t": prog.t_N, "fail_t": fail.t_N, "coll_t": coll.t_N, "w": w}


def bandit_sweep(cfg, opt: OptimConfig, sweep: SweepConfig, dtype=np.float32) -> dict:
    """The run_sweep grid of the bandit in NumPy: prog_n / fail_n / collapse_n [B, L, S]."""
    nB, nL, S = len(sweep.batches), len(sweep.lr0s), sweep.seeds
    out = {k: np.zeros((nB, nL, S)) for k in ("prog_n", "fail_n", "collapse_n")}
    for i, b in enumerate(sweep.batches):
        lr_N = np.repeat(opt.lr_grid([b], sweep.lr0s)[0], S)
        r = bandit_lanes(cfg, opt, b, lr_N, n_steps_for(sweep.budget, b),
                         seed=sweep.seed * 1_000_003 + i, dtype=dtype)
        for k, name in (("prog_t", "prog_n"), ("fail_t", "fail_n"), ("coll_t", "collapse_n")):
            out[name][i] = (r[k] * b).reshape(nL, S)
    return out
