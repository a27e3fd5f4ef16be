"""The noisy quadratic model's dynamics: one update of the optimizer on a minibatch gradient.

Progress block: L = 1/2 (x)^T Q diag(h) Q^T x with x = theta - theta*, h_i = h_max i^-alpha.
Minibatch gradient: Q diag(h) Q^T x + Q diag(sqrt(c / B)) z, c = sigma^2 h^gamma, so the
batch B is a scalar (traced, vmappable) rather than a shape. Drift block: gradient
-b + sqrt(c_d / B) z, no curvature, not in the loss. Update t's standard normals z are
fold_in(key, t)'s; a chunk of updates draws them in one vectorised call.
"""
import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.config import OptimConfig
from twoclock.model import Dynamics, RunState, initial_clocks, initial_margins
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.problem import (initial_loss, initial_offset, noise_variances,
                                               rotation, spectrum)
from twoclock.scaling import make_optimizer


def dynamics(cfg: QuadraticConfig, opt: OptimConfig, batch=None):
    """dyn(batch, key) -> Dynamics; the batch is a traced scalar, so `batch` here is unused."""
    del batch
    dtype = jnp.result_type(float)
    # NumPy constants (cast with the same rounding): a cast or a transfer by JAX, outside a
    # trace, would compile a small program of its own
    h_D = np.asarray(spectrum(cfg), dtype)
    c_D = np.asarray(noise_variances(cfg), dtype)
    q = rotation(cfg)
    q_DxD = None if q is None else np.asarray(q, dtype)
    D, Dd = cfg.dim, cfg.drift_dim
    L0 = initial_loss(cfg)
    target_loss = cfg.target * L0

    def to_eig(v):
        return v if q_DxD is None else q_DxD.T @ v

    def from_eig(v):
        return v if q_DxD is None else q_DxD @ v

    def loss_of(x):
        e = to_eig(x)
        return 0.5 * jnp.sum(h_D * e * e)

    def drift_of(d):
        if Dd == 0:
            return jnp.zeros((), dtype)
        return jnp.mean(d) if cfg.drift_stat == "mean" else jnp.linalg.norm(d)

    def dyn(batch, key) -> Dynamics:
        batch = jnp.asarray(batch, dtype)
        sd = jnp.sqrt(jnp.concatenate([c_D, jnp.full((Dd,), cfg.drift_noise, dtype)]) / batch)

        def draw(ts_T):
            """Standard normals [T, D + Dd]: update t's from fold_in(key, t)."""
            return jax.vmap(lambda t: jax.random.normal(jax.random.fold_in(key, t), (D + Dd,),
                                                        dtype))(ts_T)

        def advance(tx, state: RunState, ts_T, z_TxN):
            def update(carry, z):
                theta, opt_state = carry
                z = z * sd
                g_x = from_eig(h_D * to_eig(theta[:D]) + z[:D])
                g_d = -cfg.drift_bias + z[D:]
                upd, opt_state = tx.update(jnp.concatenate([g_x, g_d]), opt_state, theta)
                theta = optax.apply_updates(theta, upd)
                return (theta, opt_state), (loss_of(theta[:D]), drift_of(theta[D:]))

            (theta, opt_state), (loss_T, drift_T) = jax.lax.scan(
                update, (state.params, state.opt_state), z_TxN)
            hits = {"prog": target_loss - loss_T, "fail": drift_T - cfg.drift_threshold,
                    "div": ~(jnp.isfinite(loss_T) & jnp.isfinite(drift_T))}
            metrics = {"progress_frac": loss_T[-1] / L0, "drift": drift_T[-1]}
            return state._replace(params=theta, opt_state=opt_state), hits, metrics

        def init(tx) -> RunState:
            theta0 = jnp.concatenate([jnp.asarray(initial_offset(cfg), dtype),
                                      jnp.zeros((Dd,), dtype)])
            margin0 = {"prog": target_loss - L0,
                       "fail": drift_of(theta0[D:]) - cfg.drift_threshold}
            return RunState(theta0, tx.init(theta0), initial_clocks(),
                            margins=initial_margins(margin0))

        return Dynamics(lambda lr: make_optimizer(opt, lr, batch), init, draw, advance)

    return dyn
