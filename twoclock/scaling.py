"""Learning-rate rules lr(B) = lr0 * (B / B0)^p, their companions, and the optimizers they drive."""
import math

import jax.numpy as jnp
import optax

from twoclock.config import OptimConfig


def companions(opt: OptimConfig, batch, traced: bool = False) -> tuple:
    """Adam's (beta1, beta2, eps) at batch B. With opt.malladi, the square-root rule's
    companions of Malladi et al. 2022 (On the SDEs and Scaling Rules for Adaptive Gradient
    Algorithms), k = B / b0: 1 - beta -> k (1 - beta) (capped at 1), eps -> eps / sqrt(k).
    traced: batch may be a traced scalar (jnp arithmetic); otherwise Python floats."""
    if not opt.malladi:
        return opt.beta1, opt.beta2, opt.eps
    k = batch / opt.b0
    lo, sqrt = (jnp.minimum, jnp.sqrt) if traced else (min, math.sqrt)
    return (1.0 - lo(k * (1.0 - opt.beta1), 1.0), 1.0 - lo(k * (1.0 - opt.beta2), 1.0),
            opt.eps / sqrt(k))


def make_optimizer(opt: OptimConfig, lr, batch) -> optax.GradientTransformation:
    """The optax transform for one run; lr and batch may be traced scalars."""
    if opt.name == "sgd":
        return optax.sgd(lr)
    if opt.name == "momentum":
        return optax.sgd(lr, momentum=opt.momentum)  # heavy ball: v = g + mu v; x -= lr v
    beta1, beta2, eps = companions(opt, batch, traced=True)
    return optax.adam(lr, b1=beta1, b2=beta2, eps=eps)
