"""Model 1: the noisy quadratic model with a drift block."""
from twoclock.model import Model
from twoclock.models.quadratic import theory
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.dynamics import dynamics
from twoclock.models.quadratic.phase import phase_boundary
from twoclock.models.quadratic.predict import predict
from twoclock.models.quadratic.problem import (initial_loss, initial_offset, noise_variances,
                                               rotation, spectrum)

MODEL = Model(
    name="quadratic", config=QuadraticConfig, dynamics=dynamics, predict=predict,
    describe_batch=lambda cfg, batch: {},
    default_sweep=dict(batches=(8, 16, 32, 64, 128, 256), lr0s=(5e-3, 1e-2, 2e-2), seeds=16,
                       budget=200_000),
    static_batch=False, unit="samples", batch_unit="samples per update",
    progress_label="loss / initial loss", quick_codegen_exact=True,
    title="quadratic model (NQM)", phase_boundary=phase_boundary)

__all__ = ["MODEL", "QuadraticConfig", "dynamics", "predict", "phase_boundary", "theory",
           "spectrum", "noise_variances", "rotation", "initial_offset", "initial_loss"]
