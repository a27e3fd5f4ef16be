"""Theory for the noisy quadratic model (Model 1), one import for every prediction.

- moments: exact SGD / heavy-ball moments (recursion and closed form), every x_t Gaussian;
- crossing: the exact first crossing of the expected loss (`steps_to_target`);
- first_passage: the median first-passage progress clock of the noisy loss (SGD / momentum);
- scales: McCandlish et al.'s gradient noise scales and Pareto front;
- drift: the failure clocks (Adam's exact step law and its first passage; SGD / momentum);
- adam_progress: mean-field Adam's progress clock and the critical-batch mechanisms.

Each prediction the project prints names its method (predict.py lists them).
"""
from twoclock.models.quadratic.adam_progress import (adam_progress_passage,
                                                     adam_progress_samples,
                                                     critical_batch_curvature,
                                                     critical_batch_mechanism,
                                                     critical_batch_passage,
                                                     critical_batch_saturation)
from twoclock.models.quadratic.crossing import steps_to_target, steps_to_target_many
from twoclock.models.quadratic.drift import (adam_failure_samples, adam_step_law, drift_path,
                                             linear_failure_samples)
from twoclock.models.quadratic.first_passage import (median_from_moments, median_steps,
                                                     median_steps_many)
from twoclock.models.quadratic.moments import expected_loss, expected_loss_at
from twoclock.models.quadratic.scales import b_noise, b_simple, pareto_fit

__all__ = ["expected_loss", "expected_loss_at", "steps_to_target", "steps_to_target_many",
           "b_noise", "b_simple", "pareto_fit", "adam_failure_samples", "adam_step_law",
           "drift_path", "linear_failure_samples", "adam_progress_samples",
           "adam_progress_passage", "critical_batch_curvature", "critical_batch_saturation",
           "critical_batch_passage", "critical_batch_mechanism",
           "median_steps", "median_steps_many", "median_from_moments"]
