"""Model 1: the noisy quadratic model with a drift block."""
from twoclock.model import Model, PlanCheck, Studies, StudyDefaults
from twoclock.models.quadratic import theory
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.dynamics import dynamics
from twoclock.models.quadratic.phase import phase_boundary
from twoclock.models.quadratic.predict import predict
from twoclock.models.quadratic.problem import (initial_loss, initial_offset, noise_variances,
                                               rotation, spectrum)

# this model's defaults in the studies (flags given win)
STUDIES = Studies(
    # the failure threshold from 1.0 to 0.2, so that failure falls between the two targets
    schedule=StudyDefaults(study=dict(batch_small=8, batch_large=256, lr0=1e-2,
                                      responses_per_sample=32.0),
                           sweep=dict(seeds=16, budget=20_000, n_ckpt=64),
                           model=dict(drift_threshold=0.2)),
    # threshold 0.2 puts the boundary N_fail = N_prog inside the grid
    phase=StudyDefaults(sweep=dict(batches=(8, 16, 32, 64, 128, 256),
                                   lr0s=(2.5e-3, 5e-3, 1e-2, 2e-2, 4e-2), seeds=8,
                                   budget=30_000, n_ckpt=8),
                        model=dict(drift_threshold=0.2)),
    time_to_target=StudyDefaults(sweep=dict(batches=(8, 16, 32, 64, 128, 256), seeds=16,
                                            budget=100_000, n_ckpt=16)),
    plan_check=PlanCheck(lr0=1e-2, pilots=(8, 16, 32, 64), heldout=(128, 256),
                         budget=200_000),
)

MODEL = Model(
    name="quadratic", config=QuadraticConfig, dynamics=dynamics, predict=predict,
    describe_batch=lambda cfg, batch: {},
    default_sweep=dict(batches=(8, 16, 32, 64, 128, 256), lr0s=(5e-3, 1e-2, 2e-2), seeds=16,
                       budget=200_000),
    static_batch=False, unit="samples", batch_unit="samples per update",
    progress_label="loss / initial loss", quick_codegen_exact=True,
    title="quadratic model (NQM)", studies=STUDIES, phase_boundary=phase_boundary)

__all__ = ["MODEL", "QuadraticConfig", "dynamics", "predict", "phase_boundary", "theory", "spectrum",
           "noise_variances", "rotation", "initial_offset", "initial_loss"]
