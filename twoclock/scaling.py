"""Learning-rate rules lr(B) = lr0 * (B / B0)^p and the optimizers they drive."""
import jax.numpy as jnp
import optax

from twoclock.config import OptimConfig, require_positive

RULE_EXPONENT = {"fixed": 0.0, "sqrt": 0.5, "linear": 1.0}


def lr_for_batch(lr0, batch, b0, rule: str):
    """lr0 * (batch / b0)^p with p = 0, 1/2, 1 for the fixed, sqrt and linear rules."""
    return lr0 * (batch / b0) ** RULE_EXPONENT[rule]


def make_optimizer(opt: OptimConfig, lr, batch) -> optax.GradientTransformation:
    """The optax transform for one run; lr and batch may be traced scalars."""
    if opt.name == "sgd":
        return optax.sgd(lr)
    if opt.name == "momentum":
        return optax.sgd(lr, momentum=opt.momentum)  # heavy ball: v = g + mu v; x -= lr v
    b1, b2, eps = opt.b1, opt.b2, opt.eps
    if opt.malladi:
        # Malladi et al. 2022 sqrt-rule companions with k = B / B0.
        k = batch / opt.b0
        b1 = 1.0 - jnp.minimum(k * (1.0 - b1), 1.0)
        b2 = 1.0 - jnp.minimum(k * (1.0 - b2), 1.0)
        eps = eps / jnp.sqrt(k)
    return optax.adam(lr, b1=b1, b2=b2, eps=eps)


def check_lr(lr) -> None:
    require_positive("lr", float(lr))
