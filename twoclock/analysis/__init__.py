"""From simulated clocks to answers, without JAX: censored medians and CIs, the critical batch,
result files, tables, the small-then-large switch planner, phase data, the throughput model."""
