"""Self-audit: one-line bugs of the four kinds the suite used to miss, each against its tests.

    python tools/self_audit.py                 # every bug; prints a table and the score
    python tools/self_audit.py --only 3,17     # chosen bugs (1-based, as in the table)
    python tools/self_audit.py --markdown      # the table as Markdown (docs/testing.md)

The kinds (issue 25): "trivial" - the tests ran only the setting where the bug does nothing
(equal batches, size 1, sorted or monotone input, no noise, a group of one); "self" - the
expected value came from the code under test; "glue" - the code that carries a formula's value
into a result, the engine's grouping, a writer's branch for another container type;
"narrow" - a failing region that 25 hypothesis examples miss (a boundary, a tie).
A plain wrong formula (a lost square root, an exponent with the wrong sign) is listed as
"self": a test whose expected value came from the code would pass it.

Each bug is a one-line edit made in a private copy of the working tree (never in the tree
itself); its selection (test files, `-k` allowed) runs with `-x` and a bound on its time. A
bug is killed when pytest reports a failure (exit 1); a timeout or another exit status is
reported, and is not a kill. Before the bugs, the union of every selection runs once on the
unedited copy and must pass. Selection files missing in the copy are left out (an older tree).
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile
import time

from mutation import copy_tree  # a script beside this one

A = "tests/analysis/"
E = "tests/engine/"
M = "tests/models/"
P = "tests/pilot/"
S = "tests/studies/"
CLOCKS = f"{A}test_clocks.py {A}test_results_values.py"
REPORT = f"{A}test_report.py {S}test_studies_schedule.py"
SWITCH = f"{A}test_switch.py {E}test_schedule.py -k planner {S}test_studies_schedule.py"
THROUGHPUT = f"{A}test_throughput.py {S}test_studies_time_phase.py"
LAYOUT = f"{E}test_grouping.py {E}test_store.py -k chunked {E}test_sweep.py"
STAGES = (f"{E}test_schedule.py -k 'carry or each_lr0' {E}test_schedule.py -k 'not planner' "
          f"{E}test_stages.py")
PILOT = f"{P}test_pilot_glue.py {P}test_pilot.py -k 'not script and not figure and not csv'"
LOGS = (f"{P}test_pilot_glue.py {P}test_pilot_logs.py "
        "-k 'not command and not figure and not bad_logs'")
GLUE = "tests/test_result_glue.py"
ATOMIC = f"{A}test_report.py {A}test_results_values.py"
# issue 34: the policy's glue, its theory, its study's statistics, the log planner's censoring
ORACLES = f"{M}test_policy_oracles.py"
ROLLOUT = f"{ORACLES} -k rollout"
SURROGATE = f"{ORACLES} -k 'kl_penalty or loss_and'"
# both cases: the one that kills "the last step only on a multiple" is marked slow by
# tests/slow_in_ci.txt (>= 3 s), which the default run leaves out
WARMUP = f"{ORACLES} -k warmup -m 'slow or not slow'"
NOISE = f"{ORACLES} -k noise -m slow"
PTHEORY = f"{M}test_policy_theory.py"
PSTUDY = f"{S}test_policy_study_stats.py"
CENSOR = f"{P}test_logs_censoring.py"
QORACLES = f"{M}test_quadratic_oracles.py"
FLAGS = "tests/cli/test_flags_reach_outputs.py"
# issue 56: numbers no test read (the noise-scale bias, the null shift, the KL root, same batches)
EST = f"{M}test_policy_estimator_oracles.py"
SAME = f"{S}test_policy_same_batches.py"
# issue 56: the planner's choices (which clock, which end of a CI) and which studies a model gets
CHOICES = f"{P}test_pilot_choices.py"
APPLIES = f"{S}test_study_applies.py"
# issue 56: the code this round added (the one clock, the clip band, the trainer settings
# readers, a table in memory, the typed plan, the cached logs' manifest)
CLOCK = "tests/test_toy_clock.py"
CROSSED = f"{CLOCK} {E}test_stages.py"
BAND = "tests/test_clip_band.py"
TRAINER = f"{P}test_trainer_batches.py {P}test_hostile_trainer_files.py"
TABLE = f"{P}test_plan_api.py {P}test_plan_schema.py"
CACHE = f"{S}test_calibration_cache.py"

# this round's modules: the Adam form, several targets, the lr rule, K per batch, the bands'
# reasons, the mixed share, the practitioner's design, the claims table, shapes, regime theory
ADAM = f"{P}test_adam_form.py {P}test_adam_form_audit.py"
LEVELS = f"{P}test_levels.py {P}test_levels_audit.py"
RULE = f"{P}test_rule_audit.py {P}test_input_files.py -k rule"
UPDATES = f"{P}test_updates.py"
BANDS = f"{P}test_bands.py {P}test_bands_audit.py"
MIXED = f"{A}test_mixed.py"
PRACT = f"{S}test_practitioner_design.py"
CLAIMS = "tests/test_claims_audit.py tests/test_claims_table.py tests/test_claims.py"
SHAPES = f"{S}test_shapes.py"
REGIME = f"{S}test_regime_map.py"
REAL = f"{P}test_real_sweeps.py {P}test_score_real_audit.py"
RUNBAND = f"{P}test_runband.py"
FLOOR = f"{P}test_single_run_floor.py"
ONESEED = f"{P}test_one_seed_bias.py"
DESIGN = f"{S}test_practitioner_design.py"
LEVELS = f"{P}test_levels.py"
PLEVELS = f"{S}test_practitioner_levels.py"
# the study command lines as a new user reads them (--help, refusals, printouts)
HELP = "tests/cli/test_help_text.py"
CLI = "tests/cli/test_cli.py"

# (bug, kind, file, original text, buggy text, selection)
BUGS = [
    # ------------------------------------------------------------------ analysis
    ("critical batch without sorting the batches", "trivial", "twoclock/analysis/clocks.py",
     "order = np.argsort(batches)", "order = np.arange(len(batches))", CLOCKS),
    ("critical batch relative to the fastest batch, not the smallest", "trivial",
     "twoclock/analysis/clocks.py",
     "r_B = med_B / med_B[0]", "r_B = med_B / np.min(med_B)", CLOCKS),
    ("critical-batch CI dropped when a single resample found one", "narrow",
     "twoclock/analysis/clocks.py",
     "if got.size and point is not None:", "if got.size > 1 and point is not None:", CLOCKS),
    ("table: rows in file order, not by batch", "trivial", "twoclock/analysis/report.py",
     'rows = sorted((r for r in runs if r["lr0"] == lr0), key=lambda r: r["batch"])',
     'rows = [r for r in runs if r["lr0"] == lr0]', REPORT),
    ("table: ratio to the smallest batch inverted", "trivial", "twoclock/analysis/report.py",
     'return f"x{a / b:.2f}"', 'return f"x{b / a:.2f}"', REPORT),
    ("table: 'diverged' only when more than half the seeds diverged", "narrow",
     "twoclock/analysis/report.py",
     '2 * d.get("runs", 0) >= p["seeds"]', '2 * d.get("runs", 0) > p["seeds"]', REPORT),
    ("critical table: CI ends swapped", "glue", "twoclock/analysis/report.py",
     "f\"{cb['batch']:.1f} [{fmt_num(cb['ci'][0], '.1f')}, {fmt_num(cb['ci'][1], '.1f')}]\"",
     "f\"{cb['batch']:.1f} [{fmt_num(cb['ci'][1], '.1f')}, {fmt_num(cb['ci'][0], '.1f')}]\"",
     REPORT),
    ("schedule seconds: stage 2 priced at B1's throughput", "trivial",
     "twoclock/analysis/switch.py",
     "np.maximum(n - s1, 0) * seconds_per_sample(sched.batch2)",
     "np.maximum(n - s1, 0) * seconds_per_sample(sched.batch1)", SWITCH),
    ("reached first on a tie with the failure clock", "narrow", "twoclock/analysis/switch.py",
     "return (p > 0) & ((f == 0) | (p < f))", "return (p > 0) & ((f == 0) | (p <= f))", SWITCH),
    ("planner: failure fraction of stage 2 on B1's clock", "self", "twoclock/analysis/switch.py",
     "g = S / small.n_fail + (0.0 if rest == 0 else rest / large.n_fail)",
     "g = S / small.n_fail + (0.0 if rest == 0 else rest / small.n_fail)", SWITCH),
    ("curve planner: B2's curve not made monotone", "trivial", "twoclock/analysis/switch.py",
     "run_min2 = np.minimum.accumulate(m2)", "run_min2 = m2", SWITCH),
    ("planner: the earliest safe switch, not the fastest", "trivial",
     "twoclock/analysis/switch.py",
     "options.append(min(ok, key=key))", "options.append(ok[0])", SWITCH),
    ("phase panel: failure clock always fail_n", "glue", "twoclock/analysis/phase.py",
     "fail = getattr(res, fail_key) if hasattr(res, fail_key) else res.extra[fail_key]",
     "fail = res.fail_n", f"{S}test_studies_time_phase.py"),
    ("scaled throughput: simulated batch not converted to responses", "self",
     "twoclock/analysis/throughput.py",
     "return self.model.throughput(_batch_array(batch) * r) / r",
     "return self.model.throughput(_batch_array(batch)) / r", THROUGHPUT),
    ("scaled critical generation batch in responses", "glue", "twoclock/analysis/throughput.py",
     "return b / self.responses_per_sample", "return b", THROUGHPUT),
    ("plateau batch: exponent k for 1 / k", "trivial", "twoclock/analysis/throughput.py",
     "u = (frac**self.knee / (1 - frac**self.knee)) ** (1 / self.knee)",
     "u = (frac**self.knee / (1 - frac**self.knee)) ** self.knee", THROUGHPUT),
    ("training slope through the origin as a ratio of sums", "trivial",
     "twoclock/analysis/throughput.py",
     "slope = float(np.dot(B, y) / np.dot(B, B))", "slope = float(np.sum(y) / np.sum(B))",
     THROUGHPUT),
    # ------------------------------------------------------------------ engine
    ("chunks not a multiple of the device count", "trivial", "twoclock/engine/layout.py",
     "size = math.ceil(math.ceil(total / n_chunks) / n_dev) * n_dev",
     "size = math.ceil(total / n_chunks)", LAYOUT),
    ("chunk size ignores the lr0s sharing a lane", "trivial", "twoclock/engine/layout.py",
     "max_streams = max(1, max_lanes // len(sweep.lr0s))", "max_streams = max(1, max_lanes)",
     LAYOUT),
    ("estimate counts padded lanes as work", "trivial", "twoclock/engine/estimate.py",
     "run_updates += g.streams * nL * g.n_steps",
     "run_updates += g.n_chunks * g.lanes * nL * g.n_steps", LAYOUT),
    ("sweep: keys of a group seed-major", "trivial", "twoclock/engine/sweep.py",
     "key_N = np.tile(keys_S, (g, 1))", "key_N = np.repeat(keys_S, g, axis=0)", LAYOUT),
    ("sweep: learning rates of a group seed-major", "trivial", "twoclock/engine/sweep.py",
     "lr_NxL = np.repeat(lrs_BxL[list(c.batch_idx)], S, axis=0).astype(np.float32)",
     "lr_NxL = np.tile(lrs_BxL[list(c.batch_idx)], (S, 1)).astype(np.float32)", LAYOUT),
    ("sweep: padding counted over real lanes only", "self", "twoclock/engine/sweep.py",
     "scanned += c.lanes * nL * every * math.ceil(c.n_steps / every)",
     "scanned += (c.stop - c.start) * nL * every * math.ceil(c.n_steps / every)", LAYOUT),
    ("schedule carry: Adam's nu rescaled by B2 / B1", "trivial", "twoclock/engine/stages.py",
     "    k = b_from / b_to\n", "    k = b_to / b_from\n", STAGES),
    ("schedule carry: Adam's betas swapped", "trivial", "twoclock/engine/stages.py",
     "batch_K[k - 1], batch_K[k], carry, opt.beta1,\n                        opt.beta2))",
     "batch_K[k - 1], batch_K[k], carry, opt.beta2,\n                        opt.beta1))",
     STAGES),
    ("run_schedule: keys lr0-major", "trivial", "twoclock/engine/schedule.py",
     "keys = jnp.tile(seed_keys(seed, seeds), (L, 1))",
     "keys = jnp.repeat(seed_keys(seed, seeds), L, axis=0)", STAGES),
    ("run_schedule: B1 for both stages", "trivial", "twoclock/engine/schedule.py",
     "f32([bs[0]] * L), f32([bs[1]] * L)", "f32([bs[0]] * L), f32([bs[0]] * L)", STAGES),
    # ------------------------------------------------------------------ pilot
    ("pilot fit: saturation shape constant 1.2^a - 1", "trivial", "twoclock/pilot/fit.py",
     "c = 1.2 ** (m / a) - 1.0", "c = 1.2 ** (a / m) - 1.0", PILOT),
    ("pilot bands: the plausible forms' lower ends by max", "trivial", "twoclock/pilot/fit.py",
     'o["ci"] = [min(lo, x["ci"][0]) if None not in (lo, x["ci"][0]) else None,',
     'o["ci"] = [max(lo, x["ci"][0]) if None not in (lo, x["ci"][0]) else None,', PILOT),
    ("pilot throughput: knee fitted from 3 rows at 2 batches", "trivial",
     "twoclock/pilot/fit.py",
     "knee = None if len(np.unique(B)) >= 3 else", "knee = None if len(B) >= 3 else", PILOT),
    ("pilot rule: b0 the first row's batch", "trivial", "twoclock/pilot/rule.py",
     "b0 = float(batch_R[on].min())", "b0 = float(batch_R[on][0])", PILOT),
    ("pilot plan: hours without the batch (seconds per update as per sample)", "glue",
     "twoclock/pilot/plan.py",
     '"median": band["median"] * spu / b / 3600,', '"median": band["median"] * spu / 3600,',
     PILOT),
    ("pilot recommendation: a batch exactly at the margin is unsafe", "narrow",
     "twoclock/pilot/plan.py",
     'safe = [e for e in est if e.progress <= (1 - margin) * e.failure]',
     'safe = [e for e in est if e.progress < (1 - margin) * e.failure]', PILOT),
    ("pilot estimates: off-rule runs measured at their batch", "trivial",
     "twoclock/pilot/plan.py",
     "at = on & (runs.batch_R == b)", "at = runs.batch_R == b", PILOT),
    ("logs: EMA weight of the first interval for every interval", "trivial",
     "twoclock/pilot/clocks.py",
     "out[i] = out[i - 1] + a[i - 1] * (v[i] - out[i - 1])",
     "out[i] = out[i - 1] + a[0] * (v[i] - out[i - 1])", LOGS),
    ("logs: window leaves out the point on its left edge", "narrow", "twoclock/pilot/clocks.py",
     'lo = np.searchsorted(s, s - w / 2, side="left")',
     'lo = np.searchsorted(s, s - w / 2, side="right")', LOGS),
    # ------------------------------------------------------------------ lr rules, writers
    ("Malladi eps scaled by sqrt(k), not 1 / sqrt(k)", "trivial", "twoclock/scaling.py",
     "opt.eps / sqrt(k))", "opt.eps * sqrt(k))",
     f"{M}test_theory_mutants.py -k 'malladi or companion' {GLUE}"),
    ("Malladi beta2 from beta1", "trivial", "twoclock/scaling.py",
     "1.0 - lo(k * (1.0 - opt.beta2), 1.0)", "1.0 - lo(k * (1.0 - opt.beta1), 1.0)",
     f"{M}test_theory_mutants.py -k 'malladi or companion' {GLUE}"),
    ("JSON: a dataclass's fields not made strict", "glue", "twoclock/atomic.py",
     "return plain(asdict(obj), found, lenient, where)", "return asdict(obj)", ATOMIC),
    ("JSON: an array's values not made strict", "glue", "twoclock/atomic.py",
     "return plain(obj.tolist(), found, lenient, where)", "return obj.tolist()", ATOMIC),
    # ------------------------------------------------------------------ models' theory columns
    ("quadratic: progress theory at lr0, not the batch's lr", "glue",
     "twoclock/models/quadratic/predict.py",
     't = theory.median_steps(cfg, opt, B, r["lr"], steps)',
     't = theory.median_steps(cfg, opt, B, r["lr0"], steps)', GLUE),
    ("quadratic: failure theory given the batch's lr as lr0", "glue",
     "twoclock/models/quadratic/predict.py",
     '\n        th["failure_samples"] = theory.linear_failure_samples(cfg, opt, r["lr0"], B)',
     '\n        th["failure_samples"] = theory.linear_failure_samples(cfg, opt, r["lr"], B)',
     GLUE),
    ("quadratic: Adam failure theory given the batch's lr as lr0", "glue",
     "twoclock/models/quadratic/predict.py",
     'theory.adam_failure_samples(\n            cfg, opt, r["lr0"], r["batch"],',
     'theory.adam_failure_samples(\n            cfg, opt, r["lr"], r["batch"],', GLUE),
    ("quadratic: mean progress theory in updates", "glue", "twoclock/models/quadratic/predict.py",
     '"progress_samples_mean": t_mean * B if t_mean else None}',
     '"progress_samples_mean": t_mean if t_mean else None}', GLUE),
    ("quadratic: critical-batch theory from the mean clock", "glue",
     "twoclock/models/quadratic/predict.py",
     'pred = [[r["theory"]["progress_samples"] or 0] for r in rows]',
     'pred = [[r["theory"]["progress_samples_mean"] or 0] for r in rows]', GLUE),
    ("bandit: noise scales of the first lr0's checkpoints", "trivial",
     "twoclock/models/bandit/predict.py",
     'ck = {k: v[j] for k, v in res.ckpt[i].items()}',
     'ck = {k: v[0] for k, v in res.ckpt[i].items()}', GLUE),
    ("bandit: drift scale measured up to the progress clock", "glue",
     "twoclock/models/bandit/predict.py",
     'keep = measured_until(ck["samples"][0], r[clock]["median"])',
     'keep = measured_until(ck["samples"][0], r["progress_samples"]["median"])', GLUE),
    ("bandit: noise scale as the mean of per-checkpoint ratios", "trivial",
     "twoclock/models/grpo.py",
     "return np.where(s > 0, n / np.where(s > 0, s, 1.0), np.inf)",
     "return np.where(s > 0, np.mean(noise / np.where(signal > 0, signal, 1.0), axis=axis), "
     "np.inf)", f"{M}test_grpo.py -k noise_scale {GLUE} {M}test_bandit.py -k noise"),
    ("bandit: configured drift scale c_d / b", "trivial", "twoclock/models/bandit/theory.py",
     "cfg.drift_noise / cfg.drift_bias**2", "cfg.drift_noise / cfg.drift_bias",
     f"{GLUE} {M}test_bandit.py -k noise"),
    # ------------------------------------------------------------------ issue 34: policy glue
    ("rollout: prompts tiled, not repeated G times", "glue", "twoclock/models/policy/dynamics.py",
     "idx_B = jnp.repeat(idx_P, G)", "idx_B = jnp.tile(idx_P, G)", ROLLOUT),
    ("rollout: rewards grouped G x P", "glue", "twoclock/models/policy/dynamics.py",
     "xp=jnp).astype(dtype).reshape(P, G)", "xp=jnp).astype(dtype).reshape(G, P).T", ROLLOUT),
    ("rollout: KL reference is the behaviour policy", "glue",
     "twoclock/models/policy/dynamics.py",
     "logref = (token_logp(s.ref, s.arch, prompt, resp, G) if cfg.kl_coef > 0",
     "logref = (token_logp(w, s.arch, prompt, resp, G) if cfg.kl_coef > 0", ROLLOUT),
    ("rollout: dynamic sampling's keep tiled over the rows", "glue",
     "twoclock/models/policy/dynamics.py",
     "keep = jnp.repeat(~zero_P if cfg.dynamic_sampling else jnp.ones(P, bool), G)",
     "keep = jnp.tile(~zero_P if cfg.dynamic_sampling else jnp.ones(P, bool), G)", ROLLOUT),
    ("GRPO advantages centred over the prompts' axis", "glue", "twoclock/objectives.py",
     "centred = r_PxG - jnp.mean(r_PxG, axis=-1, keepdims=True)",
     "centred = r_PxG - jnp.mean(r_PxG, axis=0, keepdims=True)", ROLLOUT),
    ("GRPO advantages with the sample std (ddof 1)", "trivial", "twoclock/objectives.py",
     'ddof = 0 if kind == "grpo" else 1', "ddof = 1", ROLLOUT),
    ("k3 KL estimator with its arguments swapped", "trivial",
     "twoclock/objectives.py", "d = logref - logp", "d = logp - logref", SURROGATE),
    ("KL penalty measured against the behaviour policy", "glue",
     "twoclock/models/policy/surrogate.py",
     "cfg.kl_coef * obj.sampled_kl(logp, ro.logp_old, ro.logref, cfg.kl_estimator)",
     "cfg.kl_coef * obj.sampled_kl(logp, ro.logp_old, ro.logp_old, cfg.kl_estimator)",
     SURROGATE),
    ("seq_mean: a response's mean over the length bound", "trivial",
     "twoclock/models/policy/surrogate.py",
     "per = jnp.sum(ro.mask * j, axis=1) / jnp.maximum(jnp.sum(ro.mask, axis=1), 1.0)",
     "per = jnp.sum(ro.mask * j, axis=1) / j.shape[1]", SURROGATE),
    ("seq_sum: dropped groups counted in the mean", "trivial",
     "twoclock/models/policy/surrogate.py",
     "(j.shape[1] * jnp.maximum(jnp.sum(ro.keep), 1.0))", "(j.shape[1] * j.shape[0])",
     SURROGATE),
    ("group objectives: rows split G-major", "glue", "twoclock/models/policy/surrogate.py",
     "split = lambda v: v.reshape((-1, group) + v.shape[1:])",
     "split = lambda v: v.reshape((group, -1) + v.shape[1:])", SURROGATE),
    ("fixed_size: M = B / mb_ref, the minibatches dropped", "trivial",
     "twoclock/models/policy/config.py",
     "return max(1, self.minibatches * batch // self.mb_ref)",
     "return max(1, batch // self.mb_ref)", f"{ORACLES} -k minibatch"),
    ("fixed_size: M = M mb_ref / B (inverted)", "trivial", "twoclock/models/policy/config.py",
     "return max(1, self.minibatches * batch // self.mb_ref)",
     "return max(1, self.minibatches * self.mb_ref // batch)", f"{ORACLES} -k minibatch"),
    ("verifier: an end token anywhere after the digits", "narrow",
     "twoclock/models/policy/task.py", "end_ok = xp.any((pos == nd) & is_end, axis=1)",
     "end_ok = xp.any((pos >= nd) & is_end, axis=1)", f"{ORACLES} -k verifier"),
    ("verifier: only END_A ends an answer", "trivial", "twoclock/models/policy/task.py",
     "is_end = (resp_NxA == END_A) | (resp_NxA == END_B)\n    digits_ok",
     "is_end = resp_NxA == END_A\n    digits_ok", f"{ORACLES} -k verifier"),
    # ------------------------------------------------------------------ issue 34: every k
    ("warm-up: the last step evaluated only on a multiple", "narrow",
     "twoclock/models/policy/warmup.py",
     "if done % w.eval_every == 0 or done == w.steps:",
     "if done % w.eval_every == 0:", WARMUP),
    ("warm-up: evaluated one step after each multiple", "narrow",
     "twoclock/models/policy/warmup.py",
     "if done % w.eval_every == 0 or done == w.steps:",
     "if done % w.eval_every == 1 or done == w.steps:", WARMUP),
    ("noise: a chunk ending on a multiple not measured", "narrow",
     "twoclock/models/policy/dynamics.py", "((t0 - 1) * B) // cfg.noise_every",
     "(t0 * B) // cfg.noise_every", NOISE),
    ("noise: the first chunk not measured", "narrow", "twoclock/models/policy/dynamics.py",
     "| (t0 == 1)", "| (t0 == 0)", NOISE),
    ("noise: measured at the updated policy", "glue", "twoclock/models/policy/dynamics.py",
     "noise_stats(w_last, ro_last, cfg, s, clip)", "noise_stats(w, ro_last, cfg, s, clip)",
     NOISE),
    # ------------------------------------------------------------------ issue 34: adam_noise
    ("Adam walk: the group factor lost", "trivial", "twoclock/models/policy/adam_noise.py",
     "np.sqrt(group * np.var(x_P, ddof=1) / batch)", "np.sqrt(np.var(x_P, ddof=1) / batch)",
     PTHEORY),
    ("Adam normaliser: eps inside the root", "trivial", "twoclock/models/policy/adam_noise.py",
     "1.0 / (np.sqrt(self.mu2 + self.sig2 / batch) + eps)",
     "1.0 / np.sqrt(self.mu2 + self.sig2 / batch + eps)", PTHEORY),
    ("moments: mu^2's bias over G, not the groups measured", "trivial",
     "twoclock/models/policy/adam_noise.py", "np.maximum(m ** 2 - var / Pt, 0.0)",
     "np.maximum(m ** 2 - var / group, 0.0)", PTHEORY),
    ("moments: sigma^2 per group, not per response", "trivial",
     "twoclock/models/policy/adam_noise.py", "0.0), group * var)", "0.0), var)", PTHEORY),
    ("Adam clocks: lr0 at every batch", "trivial", "twoclock/models/policy/adam_noise.py",
     "lr = opt.lr(lr0, int(b))", "lr = lr0", PTHEORY),
    ("Adam KL clock: the 2 of (1/2) a n^2 lost", "trivial",
     "twoclock/models/policy/adam_noise.py", "np.sqrt(2 * th / a)", "np.sqrt(th / a)", PTHEORY),
    ("Adam KL clock: 4 a theta for 8 a theta in the root", "trivial",
     "twoclock/models/policy/adam_noise.py", "np.sqrt(c ** 2 + 8 * a * th)",
     "np.sqrt(c ** 2 + 4 * a * th)", PTHEORY),
    ("Adam walk clock: theta for theta^2", "trivial", "twoclock/models/policy/adam_noise.py",
     '("walk", th ** 2 / sd ** 2)', '("walk", th / sd ** 2)', PTHEORY),
    ("Adam acc clock: distance from 0, not from the start", "glue",
     "twoclock/models/policy/adam_noise.py",
     'theta = {"acc": cfg.target - s.start["acc"], "entropy"',
     'theta = {"acc": cfg.target, "entropy"', PTHEORY),
    ("Adam KL walk: the G / B factor as 1 / B", "trivial", "twoclock/models/policy/adam_noise.py",
     "G / b * float(np.mean(", "1 / b * float(np.mean(", PTHEORY),
    ("signal share: B_i <= B counted", "narrow", "twoclock/models/policy/adam_noise.py",
     "(b_i < b)", "(b_i <= b)", PTHEORY),
    # ------------------------------------------------------------------ issue 34: policy study
    ("study: 90% intervals", "trivial", "twoclock/analysis/paired.py",
     'lo, hi = np.quantile(boot, [0.025, 0.975], method="lower")',
     'lo, hi = np.quantile(boot, [0.05, 0.95], method="lower")', PSTUDY),
    ("study: the fixed rule starts at lr0", "glue", "twoclock/studies/policy_study/cells.py",
     '"fixed": (fixed, sqrt.lr(st.lr0, min(st.batches)))', '"fixed": (fixed, st.lr0)', PSTUDY),
    ("study: clipping cells' mb_ref the largest batch", "glue",
     "twoclock/studies/policy_study/cells.py",
     "mb_convention=conv,\n                                      mb_ref=b0, clip_low=cl",
     "mb_convention=conv,\n                                      mb_ref=b1, clip_low=cl", PSTUDY),
    ("study: clipping cells at lr0", "glue", "twoclock/studies/policy_study/cells.py",
     "lr_clip = st.lr0 * st.clip_lr_factor", "lr_clip = st.lr0", PSTUDY),
    ("study: every rule's gap against the sqrt cell", "glue",
     "twoclock/studies/policy_study/answers.py",
     '{r: progress_gap(c[r], b0, idx) for r in rules}',
     '{r: progress_gap({**c[r], "per_seed": {**c[r]["per_seed"], '
     'b0: c["sqrt"]["per_seed"][b0]}}, b0, idx) for r in rules}', PSTUDY),
    ("study: clipping delay against clip-higher", "glue",
     "twoclock/studies/policy_study/answers.py",
     'eps_over_none(ps, n("eps0.2"), n("none"),',
     'eps_over_none(ps, n("eps0.2"), n("higher"),', PSTUDY),
    ("study: clip-higher's failure against unclipped", "glue",
     "twoclock/studies/policy_study/answers.py",
     'ps(n("higher"), b, k), ps(n("eps0.2"), b, k), idx) for k in DRIFT}',
     'ps(n("higher"), b, k), ps(n("none"), b, k), idx) for k in DRIFT}', PSTUDY),
    ("study: collapse clock's zeros as crossings", "trivial",
     "twoclock/studies/policy_study/answers.py",
     'median_ci(censored(ps(cell, b, "collapse")),', 'median_ci(ps(cell, b, "collapse"),', PSTUDY),
    ("study: exponent over uncensored clocks", "trivial",
     "twoclock/analysis/paired.py",
     "x = {b: censored(per_batch[b][clock]) for b in bs}",
     "x = {b: np.asarray(per_batch[b][clock], float) for b in bs}", PSTUDY),
    # ------------------------------------------------------------------ issue 34: log planner
    ("logs: a censored failure as failing at its last log", "trivial", "twoclock/pilot/logs.py",
     "take(lambda i: fail[i].samples if fail[i].crossed else math.inf),",
     "take(lambda i: fail[i].samples),", CENSOR),
    ("logs: the latest failure condition at each batch", "trivial", "twoclock/pilot/logs.py",
     'k = _earliest(outs, j, "estimates", lambda x: x.failure)',
     'k = max(range(len(outs)), key=lambda k: _inf(outs[k].estimates[j].failure))',
     CENSOR),
    ("logs: a run fails at its latest condition", "trivial", "twoclock/pilot/logs.py",
     '"failure_samples": min(got) if got else None',
     '"failure_samples": max(got) if got else None', CENSOR),
    ("logs: a run's censored condition reported as a failure", "glue", "twoclock/pilot/logs.py",
     'failures = {f.text: (fl[at[name]].samples if fl[at[name]].crossed else None)',
     'failures = {f.text: (fl[at[name]].samples)', CENSOR),
    ("logs: every clock marked crossed", "trivial", "twoclock/pilot/clocks.py",
     "out.append(Clock(at, i is not None,", "out.append(Clock(at, True,", CENSOR),
    ("logs: failed runs counted as every run", "trivial", "twoclock/pilot/logs.py",
     "for r, c in zip(runs, crossings) if c.crossed]", "for r, c in zip(runs, crossings)]",
     CENSOR),
    # ------------------------------------------------------------------ issue 34: still open
    ("quadratic: gradient noise not rotated with the curvature", "glue",
     "twoclock/models/quadratic/dynamics.py",
     "g_x = from_eig(h_D * to_eig(theta[:D]) + z[:D])",
     "g_x = from_eig(h_D * to_eig(theta[:D])) + z[:D]", QORACLES),
    ("quadratic: drift norm as the block's RMS", "trivial",
     "twoclock/models/quadratic/dynamics.py",
     'jnp.mean(d) if cfg.drift_stat == "mean" else jnp.linalg.norm(d)',
     'jnp.mean(d) if cfg.drift_stat == "mean" else jnp.sqrt(jnp.mean(d * d))', QORACLES),
    ("bandit: drift RMS as the norm", "trivial", "twoclock/models/bandit/dynamics.py",
     "jnp.sqrt(jnp.mean(w_d * w_d, axis=-1))", "jnp.sqrt(jnp.sum(w_d * w_d, axis=-1))",
     f"{QORACLES} -k bandit"),
    ("SGD failure clock: momentum's 1 - mu lost", "trivial", "twoclock/models/quadratic/drift.py",
     "return B * cfg.drift_threshold * (1.0 - mu) / (float(opt.lr(lr0, B)) * cfg.drift_bias)",
     "return B * cfg.drift_threshold / (float(opt.lr(lr0, B)) * cfg.drift_bias)",
     f"{QORACLES} -k failure_column"),
    ("SGD failure clock at lr0, not the batch's lr", "trivial",
     "twoclock/models/quadratic/drift.py",
     "return B * cfg.drift_threshold * (1.0 - mu) / (float(opt.lr(lr0, B)) * cfg.drift_bias)",
     "return B * cfg.drift_threshold * (1.0 - mu) / (float(lr0) * cfg.drift_bias)",
     f"{QORACLES} -k failure_column"),
    ("rotation: QR's signs not fixed (not Haar)", "trivial", "twoclock/models/quadratic/problem.py",
     "return q * np.sign(np.diag(r))", "return q", f"{QORACLES} -k sgd_update"),
    ("rotated start loss in the wrong basis", "trivial", "twoclock/models/quadratic/problem.py",
     "e0 = x0 if q is None else q.T @ x0", "e0 = x0 if q is None else q @ x0",
     f"{QORACLES} -k sgd_update"),
    ("SGD progress column at lr0 (the slow oracle)", "glue",
     "twoclock/models/quadratic/predict.py",
     't = theory.median_steps(cfg, opt, B, r["lr"], steps)',
     't = theory.median_steps(cfg, opt, B, r["lr0"], steps)',
     f"{QORACLES} -k 'progress_column and sqrt and sgd' -m slow"),
    # ------------------------------------------------------------------ issue 34: flags
    ("--delta recorded but not used for the critical batch", "glue",
     "twoclock/studies/headline.py",
     "runs, crit = assemble(model, model_cfg, opt, sweep, res, delta=cfg.delta)",
     "runs, crit = assemble(model, model_cfg, opt, sweep, res)", f"{FLAGS} -k delta -m slow"),
    ("--drift-noise used by the theory only", "glue", "twoclock/models/quadratic/dynamics.py",
     "jnp.full((Dd,), cfg.drift_noise, dtype)", "jnp.full((Dd,), 1.0, dtype)",
     f"{FLAGS} -k drift-noise -m slow"),
    ("--margin not used for the recommendation", "glue", "twoclock/pilot/plan.py",
     "rec = recommend(est, margin, objective=", "rec = recommend(est, 0.1, objective=",
     f"{FLAGS} -k margin"),
    ("--level not used for the progress bands", "glue", "twoclock/pilot/plan.py",
     "return _enveloped(clock.band(bs, level), bs,",
     "return _enveloped(clock.band(bs, 0.95), bs,",
     f"{FLAGS} -k level"),
    ("--smooth not passed to the log planner", "glue", "twoclock/pilot/config.py",
     "smoothing=lg.smooth,", "smoothing=None,", f"{FLAGS} -k smoothing"),
    # ------------------------------------------------------------------ issue 56
    ("noise: the signal's bias - Var / P dropped", "self", "twoclock/models/policy/dynamics.py",
     'out[f"signal_{k}"] = mean[i] ** 2 - var[i] / P', 'out[f"signal_{k}"] = mean[i] ** 2',
     f"{EST} -k 'unbiased or regime'"),
    ("noise: the signal's bias over G, not P", "trivial", "twoclock/models/policy/dynamics.py",
     'out[f"signal_{k}"] = mean[i] ** 2 - var[i] / P',
     'out[f"signal_{k}"] = mean[i] ** 2 - var[i] / G', f"{EST} -k 'unbiased or regime'"),
    ("null clock: the shift measured from 0, not the reference", "glue",
     "twoclock/models/policy/dynamics.py", 'shift_T = jnp.abs(ev["null"] - st0["null"])',
     'shift_T = jnp.abs(ev["null"])', f"{EST} -k null -m slow"),
    ("null metric: the log-odds, not their shift", "glue", "twoclock/models/policy/dynamics.py",
     'null=ev["null"][-1] - st0["null"],', 'null=ev["null"][-1],', f"{EST} -k null -m slow"),
    ("Adam KL clock: the root over a, not 2 a", "trivial", "twoclock/models/policy/adam_noise.py",
     "np.sqrt(c ** 2 + 8 * a * th))\n                                              / (2 * a))",
     "np.sqrt(c ** 2 + 8 * a * th))\n                                              / a)",
     f"{EST} -k kl"),
    ("Adam KL clock: 2 c for c outside the root", "trivial",
     "twoclock/models/policy/adam_noise.py", "(-c + np.sqrt(c ** 2 + 8 * a * th))",
     "(-2 * c + np.sqrt(c ** 2 + 8 * a * th))", f"{EST} -k kl"),
    ("Adam KL walk: c halved", "trivial", "twoclock/models/policy/adam_noise.py",
     "G / b * float(np.mean(", "G / (2 * b) * float(np.mean(", f"{EST} -k kl"),
    ("prereg: the prediction's exponent over every batch", "trivial",
     "twoclock/studies/policy_study/prereg.py", 'e = exponent_of(p[kind], meas["batches"])',
     "e = exponent_of(p[kind])", SAME),
    ("study: Adam's same-batches exponent over every batch", "glue",
     "twoclock/studies/policy_study/answers.py",
     'v["measured"]["batches"], [by_b.get(str(b)) for b in v["measured"]["batches"]])',
     "[int(b) for b in by_b], list(by_b.values()))", SAME),
    # ------------------------------------------------------------------ issue 56: choices
    ("logs: the fit of the condition measured earliest, not the earliest fit", "glue",
     "twoclock/pilot/logs.py", 'kf = _earliest(outs, j, "estimates", lambda x: x.failure_fit)',
     'kf = _earliest(outs, j, "estimates", lambda x: x.failure)', CHOICES),
    ("logs: the fit-only recommendation on the measured failure clocks", "glue",
     "twoclock/pilot/logs.py",
     "fit_only = pilot.recommend([replace(e, progress=e.progress_fit, failure=e.failure_fit)",
     "fit_only = pilot.recommend([replace(e, progress=e.progress_fit, failure=e.failure)",
     CHOICES),
    ("plan: the fit-only recommendation on the measured failure clock", "glue",
     "twoclock/pilot/plan.py",
     "fit_only = recommend([replace(e, progress=e.progress_fit, failure=e.failure_fit)",
     "fit_only = recommend([replace(e, progress=e.progress_fit, failure=e.failure)", CHOICES),
    ("form rule: flat rejected on the exponent CI's upper end", "trivial",
     "twoclock/pilot/forms.py", 'exponent(TEST_LEVEL)["ci"][0] > 0',
     'exponent(TEST_LEVEL)["ci"][1] > 0', CHOICES),
    ("form rule: flat rejected when the CI's lower end is 0", "narrow",
     "twoclock/pilot/forms.py", 'exponent(TEST_LEVEL)["ci"][0] > 0',
     'exponent(TEST_LEVEL)["ci"][0] >= 0', CHOICES),
    ("applies: the grouping of 'no models or this one' dropped", "trivial",
     "twoclock/studies/protocol.py",
     "return (not study.models or model.name in study.models) and ",
     "return not study.models or model.name in study.models and ", APPLIES),
    # ------------------------------------------------------------------ issue 56: this round's code
    ("clock: the fraction over v1 - level, not v1 - v0", "trivial", "twoclock/clock.py",
     "f = (self.level - v0) / (v1 - v0)", "f = (self.level - v0) / (v1 - self.level)", CLOCK),
    ("clock: between with x1 - x0 reversed", "trivial", "twoclock/clock.py",
     "return x0 + f * (x1 - x0)", "return x0 + f * (x0 - x1)", CLOCK),
    ("clock: '>' read as '>='", "narrow", "twoclock/clock.py",
     '">": operator.gt,', '">": operator.ge,', CLOCK),
    ("engine: a later chunk's crossing replaces the first", "glue", "twoclock/engine/stages.py",
     "jnp.where((prev == NEVER) & jnp.any(hit_T), at, prev)",
     "jnp.where(jnp.any(hit_T), at, prev)", CROSSED),
    ("engine: a chunk's first margin not carried from the last chunk", "glue",
     "twoclock/engine/stages.py",
     "before_T = jnp.concatenate([margins[name][None].astype(dtype), m_T[:-1]])",
     "before_T = jnp.concatenate([m_T[:1], m_T[:-1]])", CROSSED),
    ("damage study: the deficit clock not from 0 at 0 responses", "trivial",
     "twoclock/clock.py",
     "stored(first_crossing(np.r_[0.0, s[i]], np.r_[x0, x[i]], clock))",
     "stored(first_crossing(s[i], x[i], clock))", CLOCK),
    ("clip band: the high end defaulting to 0, not the low eps", "trivial",
     "twoclock/objectives.py",
     "return ClipBand(1 - clip_low, 1 + (clip_low if clip_high is None else clip_high))",
     "return ClipBand(1 - clip_low, 1 + (clip_high or 0.0))", BAND),
    ("clip band: binds reads the high end only", "trivial", "twoclock/objectives.py",
     "return bool(self.lo > -math.inf or self.hi < math.inf)", "return bool(self.hi < math.inf)",
     BAND),
    ("clip band: a zero advantage above the band counted clipped", "narrow",
     "twoclock/objectives.py", "out = ((adv > 0) & (ratio > clip.hi))",
     "out = ((adv >= 0) & (ratio > clip.hi))", BAND),
    ("TRL batch: the product without steps per generation", "trivial", "twoclock/pilot/batches.py",
     'return per * procs * spg, ""', 'return per * procs, ""', TRAINER),
    ("--batch globs: two of one value for a run refused", "narrow", "twoclock/pilot/batches.py",
     "if len(set(hits.values())) > 1:", "if len(hits) > 1:", TRAINER),
    ("--batch globs matched by their prefix only", "trivial", "twoclock/pilot/batches.py",
     "and fnmatch.fnmatchcase(name, k)}", "and name.startswith(k.split('*')[0])}", TRAINER),
    ("--batch-from-name: group 1, not the whole match of a pattern without one", "trivial",
     "twoclock/pilot/batches.py", "raw = m.group(rx.groups)", "raw = m.group(1)", TRAINER),
    ("JSON depth bound off by one", "narrow", "twoclock/pilot/limits.py",
     "if json_depth(text) > MAX_DEPTH:", "if json_depth(text) >= MAX_DEPTH:", TRAINER),
    ("TensorBoard keep-last keeps the first copy", "glue", "twoclock/pilot/tbfiles.py",
     "row[tag] = x  # keep-last", "row.setdefault(tag, x)  # keep-last", TRAINER),
    ("table in memory: a row with an empty cell skipped", "trivial", "twoclock/pilot/memory.py",
     "if not all(_empty(v) for v in r.values())]", "if not any(_empty(v) for v in r.values())]",
     TABLE),
    ("table in memory: a row of spaces not skipped as a blank line", "trivial",
     "twoclock/pilot/memory.py",
     "return v is None or (isinstance(v, str) and not v.strip())",
     "return v is None or (isinstance(v, str) and not v)", TABLE),
    ("plan.json of the log planner without its schema", "glue", "twoclock/pilot/result.py",
     '        out = {"schema": PLAN_SCHEMA, **super().to_json()}\n        for name in ("progress_only"',
     '        out = super().to_json()\n        for name in ("progress_only"', TABLE),
    ("manifest: the size checked, not the sha256", "trivial", "twoclock/atomic.py",
     "if got != want:", 'if got["bytes"] != want["bytes"]:', CACHE),
    ("cache: the pilots' seconds lost when the held-out logs are simulated anew", "glue",
     "twoclock/studies/planner/calibrate.py",
     'secs = (found["seconds"] or 0.0) if found["kept"] else 0.0', "secs = 0.0", CACHE),
    # ------------------------------------------------------ this round's modules (issue 56's method)
    ("Adam form: sqrt(m (m + B_n)) as m + B_n", "self", "twoclock/pilot/adam.py",
     "return 0.5 * np.log(m * (m + b_n)) - np.log(lr)", "return np.log(m + b_n) - np.log(lr)",
     ADAM),
    ("Adam form: 1/lr as 1/sqrt(lr)", "self", "twoclock/pilot/adam.py",
     "return 0.5 * np.log(m * (m + b_n)) - np.log(lr)",
     "return 0.5 * np.log(m * (m + b_n)) - 0.5 * np.log(lr)", ADAM),
    ("Adam fit: a pilot's lr brought to lr0 as sqrt(lr / lr0)", "trivial", "twoclock/pilot/adam.py",
     "n_sqrt = np.asarray(N, np.float64) * (lr / lr0) / np.sqrt(m / b0)",
     "n_sqrt = np.asarray(N, np.float64) * np.sqrt(lr / lr0) / np.sqrt(m / b0)", ADAM),
    ("Adam form: K applied as sqrt(K)", "trivial", "twoclock/pilot/adam.py",
     "return np.asarray(B, np.float64) / np.asarray(K, np.float64)",
     "return np.asarray(B, np.float64) / np.sqrt(np.asarray(K, np.float64))", ADAM),
    ("Adam form: local exponent with + p", "trivial", "twoclock/pilot/adam.py",
     "return 0.5 - p + 0.5 * m / (m + b_n)", "return 0.5 + p + 0.5 * m / (m + b_n)", ADAM),
    ("Adam fit: B_n from a critical batch at 1.1, not 1.2", "self", "twoclock/pilot/adam.py",
     "math.exp(lbc) / (1.2 ** (2 * s) - 1.0) ** (1.0 / s)",
     "math.exp(lbc) / (1.1 ** (2 * s) - 1.0) ** (1.0 / s)", ADAM),
    ("Adam form: the sqrt rule's critical batch (1.1^2 - 1) B_n", "self", "twoclock/pilot/adam.py",
     "SQRT_C = 1.2**2 - 1.0", "SQRT_C = 1.1**2 - 1.0", f"{ADAM} {LEVELS}"),
    ("Adam fit: the critical batch not multiplied by K_pred", "glue", "twoclock/pilot/adam.py",
     'return {"batch": None if c["batch"] is None else c["batch"] * k,',
     'return {"batch": None if c["batch"] is None else c["batch"],', ADAM),
    ("Adam fit: the band's high end not brought back to the rule", "glue",
     "twoclock/pilot/adam.py",
     "return lo + self._back(m, self.lr(B)), hi + self._back(m, self.lr(B))",
     "return lo + self._back(m, self.lr(B)), hi", ADAM),
    ("Adam fit: predictions under the sqrt rule whatever p", "trivial", "twoclock/pilot/adam.py",
     "return self.lr0 * (np.asarray(B, np.float64) / self.b0) ** self.p",
     "return self.lr0 * (np.asarray(B, np.float64) / self.b0) ** 0.5", ADAM),
    ("levels: the noise scale's slope with its sign flipped", "self", "twoclock/pilot/levels.py",
     "return float(self.C0[self.best] + self.C1[self.best] * self.x[l])",
     "return float(self.C0[self.best] - self.C1[self.best] * self.x[l])", LEVELS),
    ("levels: the shape log(m + B_n), not 1/2 log(m (m + B_n))", "self", "twoclock/pilot/levels.py",
     "return 0.5 * np.log(m) + 0.5 * np.logaddexp(np.log(m), c0 + c1 * x)",
     "return np.logaddexp(np.log(m), c0 + c1 * x)", LEVELS),
    ("levels: m = B, K ignored", "glue", "twoclock/pilot/levels.py",
     'm.append(r["batch"] / r.get("updates", 1.0))', 'm.append(r["batch"])', LEVELS),
    ("levels: 'grows' read off the CI's high end", "narrow", "twoclock/pilot/levels.py",
     '"the noise scale grows with the level" if lo is not None and lo > 0 else',
     '"the noise scale grows with the level" if hi is not None and hi > 0 else', LEVELS),
    ("levels: the region's threshold with t for t^2", "self", "twoclock/pilot/fit.py",
     "return (sse_min * (1 + t * t / dof) if floor * dof <= sse_min",
     "return (sse_min * (1 + t / dof) if floor * dof <= sse_min", LEVELS),
    ("levels: predictions at the sqrt rule's lr whatever p", "trivial", "twoclock/pilot/levels.py",
     'lr_B = scaled_lr(rule["lr0"], B, rule["b0"], rule["p"])',
     'lr_B = scaled_lr(rule["lr0"], B, rule["b0"], 0.5)', LEVELS),
    ("rule: lr0 at B = 1, not at b0", "self", "twoclock/pilot/rule.py",
     "lr0 = float(np.exp(np.median(ll[on] - p * (lb[on] - math.log(b0)))))",
     "lr0 = float(np.exp(np.median(ll[on] - p * lb[on])))", RULE),
    ("rule: a tie broken away from the sqrt rule", "narrow", "twoclock/pilot/rule.py",
     "score = (int(on.sum()), len(np.unique(lb[on])), -abs(p - 0.5))",
     "score = (int(on.sum()), len(np.unique(lb[on])), abs(p - 0.5))", RULE),
    ("updates: verl's K as mini / train", "trivial", "twoclock/pilot/updates.py",
     "k = _count(prompts / mini * epochs)", "k = _count(mini / prompts * epochs)", UPDATES),
    ("updates: verl's ppo_epochs ignored", "trivial", "twoclock/pilot/updates.py",
     'epochs = batches.setting(s, "actor_rollout_ref.actor.ppo_epochs") or 1.0', "epochs = 1.0",
     UPDATES),
    ("updates: TRL's K without num_iterations", "trivial", "twoclock/pilot/updates.py",
     "k = _count((iters or 1.0) * spg / acc)", "k = _count(spg / acc)", UPDATES),
    ("updates: TRL's logged steps per batch 1, not K", "glue", "twoclock/pilot/updates.py",
     'return k, k, (f"TRL:', 'return k, 1.0, (f"TRL:', UPDATES),
    ("updates: a row's K the first of minibatches, epochs given", "trivial",
     "twoclock/pilot/updates.py", "k = (m or 1.0) * (e or 1.0)", "k = m or e or 1.0", UPDATES),
    ("updates: two sources agreeing on K refused", "narrow", "twoclock/pilot/updates.py",
     "if len(set(got.values())) > 1:", "if len(got) > 1:", UPDATES),
    ("updates: mixed K refused under the Adam form too", "glue", "twoclock/pilot/updates.py",
     "if len(ks) < 2 or accounted:", "if len(ks) < 2:", UPDATES),
    ("bands: the width as high / low", "self", "twoclock/pilot/bands.py",
     "return max(m / lo, hi / m)", "return hi / lo", BANDS),
    ("bands: pilots rising with the batch named as falling", "trivial", "twoclock/pilot/bands.py",
     "if fell is None and p2 < p1:", "if fell is None and p2 > p1:", BANDS),
    ("bands: the farthest pilot only above the curve", "trivial", "twoclock/pilot/bands.py",
     "key=lambda x: abs(math.log(x[1] / x[2])))", "key=lambda x: math.log(x[1] / x[2]))", BANDS),
    ("p_mix as 1 - p^G", "self", "twoclock/analysis/mixed.py",
     "out = 1.0 - a ** G - (1.0 - a) ** G", "out = 1.0 - a ** G", MIXED),
    ("p_mix of the mean pass rate, not the mean of p_mix", "trivial", "twoclock/analysis/mixed.py",
     "m = np.atleast_1d(p_mix(pass_rates, G))", "m = np.atleast_1d(p_mix(np.mean(pass_rates), G))",
     MIXED),
    ("p_mix: weights not normalised", "trivial", "twoclock/analysis/mixed.py",
     "return float(np.sum(w * m) / np.sum(w))", "return float(np.mean(w * m))", MIXED),
    ("practitioner: the evaluation's binomial with n = 100", "self",
     "twoclock/studies/planner/practitioner.py",
     "draw = lambda p: rng.binomial(EVAL_ITEMS, np.clip(p, 0.0, 1.0)) / EVAL_ITEMS",
     "draw = lambda p: rng.binomial(100, np.clip(p, 0.0, 1.0)) / 100", PRACT),
    ("practitioner: a share's noise not divided by 1 - accuracy", "self",
     "twoclock/studies/planner/practitioner.py",
     "return v * (1.0 - draw(acc)) / err", "return v * (1.0 - draw(acc))", PRACT),
    ("claims: the ratio's bootstrap unpaired", "glue", "twoclock/analysis/claims_base.py",
     "self.seeds(clock, b_ref, lr0),\n", "self.seeds(clock, b_ref, lr0)[::-1],\n", CLAIMS),
    ("claims: the baseline's rules swapped", "trivial",
     "twoclock/analysis/claims_theory.py",
     'seen * (b / b_seen if src.d["lr_rule"] == "fixed" else 1.0)',
     'seen * (b / b_seen if src.d["lr_rule"] == "sqrt" else 1.0)', CLAIMS),
    ("claims: 'within' holds where the CI overlaps the range", "trivial",
     "twoclock/analysis/claims_base.py", 'return "holds" if a <= lo and hi <= b else',
     'return "holds" if a <= hi and lo <= b else', CLAIMS),
    ("shapes: local exponent over (first, B), not adjacent batches", "trivial",
     "twoclock/studies/shapes/curves.py",
     "np.log(med(hi) / med(lo)) / w, x[k + 1], x[k], idx=idx,",
     "np.log(med(hi) / med(lo)) / w, x[k + 1], x[0], idx=idx,", SHAPES),
    ("shapes: the secant exponent without its 1/2", "self", "twoclock/studies/shapes/curves.py",
     "return 0.5 + np.log((b2 + b_noise) / (b1 + b_noise)) / (2.0 * np.log(b2 / b1))",
     "return 0.5 + np.log((b2 + b_noise) / (b1 + b_noise)) / np.log(b2 / b1)", SHAPES),
    ("shapes: the sqrt rule's critical batch at (1 + delta), not squared", "self",
     "twoclock/studies/shapes/curves.py",
     "return (1.0 + delta) ** 2 * (b_min + b_noise) - b_noise",
     "return (1.0 + delta) * (b_min + b_noise) - b_noise", SHAPES),
    ("regime theory: the stretch inverted", "trivial", "twoclock/studies/regime_theory.py",
     "return {b: n[b] / n[bs[0]] for b in bs}", "return {b: n[bs[0]] / n[b] for b in bs}", REGIME),
    ("regime theory: the clock not scaled back by s", "trivial", "twoclock/studies/regime_theory.py",
     "return s * float(np.interp(a_star / s, A, rr))", "return float(np.interp(a_star / s, A, rr))",
     REGIME),
    ("regime theory: active responses by the right end, not the trapezoid", "trivial",
     "twoclock/studies/regime_theory.py",
     "np.cumsum(np.diff(r) * 0.5 * (m[1:] + m[:-1]))", "np.cumsum(np.diff(r) * m[1:])", REGIME),
    ("score_real: the obvious rule with B^(1/2 - p)", "self", "tools/real_sweep.py",
     "return n_pilot * (b / b_pilot) ** (1 - p)", "return n_pilot * (b / b_pilot) ** (0.5 - p)",
     REAL),
    ("score_real: the band factor as high / low", "self", "tools/score_real.py",
     'return bands.width({"median": median, "ci": band})', "return band[1] / band[0]", REAL),
    ("score_real: the paired CI's half-width with the SD, not the SE", "self",
     "tools/score_real.py",
     "half = t_quantile(0.975, v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)",
     "half = t_quantile(0.975, v.size - 1) * float(v.std(ddof=1))", REAL),
    # ------------------------------------------------------------------ a survivor found late
    ("--level not used for the drawn curves' bands", "glue", "twoclock/pilot/plan.py",
     "prog_band = lambda bs, keep=False: _enveloped(progress.band(bs, level), bs, env, keep)",
     "prog_band = lambda bs, keep=False: _enveloped(progress.band(bs, 0.95), bs, env, keep)",
     f"{FLAGS} -k level"),
    # ------------------------------------------------------------------ this round's last additions
    ("planner K note: its cost range not the study's", "self", "twoclock/pilot/report.py",
     "K32_COST = (1.4, 5.1)", "K32_COST = (1.3, 5.1)", f"{P}test_predict_updates.py -k cost_range"),
    ("mean-field clock above the floor: the floor added, not taken out", "self",
     "twoclock/models/quadratic/adam_progress.py", "loss = loss - loss[t]",
     "loss = loss + loss[t]", f"{P}test_adam_form.py -k bend -m slow"),
    # the floor taken out (--floor-out): the law's square root, the shift's sign, the plateau's
    # tail, the refusal of a moving tail, the plateaus' law, and K carried into phi
    ("floor law: lr / m instead of lr / sqrt(m)", "self", "twoclock/pilot/adam.py",
     "return optimum + phi * np.asarray(lr, np.float64) / np.sqrt(per_update(B, K))",
     "return optimum + phi * np.asarray(lr, np.float64) / per_update(B, K)",
     f"{P}test_adam_floor.py"),
    ("floor levels: the target's distance added with the wrong sign", "self",
     "twoclock/pilot/adam.py",
     "return np.asarray(asymptote, np.float64) + (float(target) - float(predicted))",
     "return np.asarray(asymptote, np.float64) - (float(target) - float(predicted))",
     f"{P}test_adam_floor.py {P}test_floorout.py"),
    ("plateau: the whole run's mean, not its tail's", "trivial", "twoclock/pilot/floorout.py",
     "    s, v = s[-n:], v[-n:]", "    s, v = s, v", f"{P}test_floorout.py"),
    ("a still-moving tail kept (the refusal never fires)", "narrow",
     "twoclock/pilot/floorout.py",
     "if abs(drift) > max(STILL * se, CLOSE * abs(target - mean)):",
     "if abs(drift) > max(STILL * se, CLOSE * abs(target - mean)) * 1e6:",
     f"{P}test_floorout.py"),
    ("plateaus' law: the slope's sign test dropped", "glue", "twoclock/pilot/floorout.py",
     "    if not slope < 0:", "    if not slope < 1:", f"{P}test_floorout.py"),
    ("floor_scale: K ignored (B, not B / K)", "trivial", "twoclock/pilot/adam.py",
     "return np.log(d * np.sqrt(per_update(B, K)) / np.asarray(lr, np.float64))",
     "return np.log(d * np.sqrt(np.asarray(B, np.float64)) / np.asarray(lr, np.float64))",
     f"{P}test_adam_floor.py"),
    ("floor law's chi-square guard never fires", "glue", "twoclock/pilot/floorout.py",
     "    if dof >= 1 and chi2 > chi2_999(dof):", "    if dof >= 1 and chi2 > 1e9 * chi2_999(dof):",
     f"{P}test_floorout.py"),
    ("floor law's chi-square: the plateau's error absolute, not relative", "self",
     "twoclock/pilot/floorout.py",
     "w = 1.0 / ((np.asarray(se_R, np.float64) / d) ** 2 + LAW**2)",
     "w = 1.0 / (np.asarray(se_R, np.float64) ** 2 + LAW**2)", f"{P}test_floorout.py"),
    ("a trough past the target taken for a floor", "narrow", "twoclock/pilot/floorout.py",
     "reached = np.any((r.metrics[metric][ok] - target) * (target - optimum) <= 0)",
     "reached = np.any((r.metrics[metric][ok] - target) * (target - optimum) < -1e9)",
     f"{P}test_floorout.py"),
    # this stop: the goal per model, the whole curve on the practitioner's sweep
    ("goal: an 8x error at 15% counted a miss", "narrow",
     "twoclock/studies/planner/practitioner.py",
     'if s[k] is not None and s[k] > GOAL]', 'if s[k] is not None and s[k] >= GOAL]', PRACT),
    ("goal: never-reached predictions never counted", "glue",
     "twoclock/studies/planner/practitioner.py",
     "nev is not None and nev < COVER <= s[\"coverage_95\"]) else []",
     "nev is not None and nev < COVER <= s[\"coverage_95\"] - 1) else []", PRACT),
    ("whole curve: the levels a fraction of the start, not of the way back", "self",
     "twoclock/studies/planner/whole_curve.py",
     "vals = [c.threshold + f * (v0 - c.threshold) for f in fractions]",
     "vals = [c.threshold + f * v0 for f in fractions]", f"{S}test_practitioner_levels.py"),
    ("whole curve: each run's last value read as its first", "trivial",
     "twoclock/studies/planner/whole_curve.py",
     'first.setdefault(row["run"], float(row[metric]))',
     'first[row["run"]] = float(row[metric])', f"{S}test_practitioner_levels.py"),
    ("whole curve: claim 1 scored on the CI's lower end", "self", "tools/practitioner_levels.py",
     'return [(1, c["quadratic"][1] < 0.0)', 'return [(1, c["quadratic"][0] < 0.0)',
     f"{S}test_practitioner_levels.py"),
    # this stop: the bandit's drift cells
    ("drift cells: kappa without the noise's square root", "narrow", "tools/bandit_drift.py",
     'return c["drift_scale"] * c["drift_bias"] / math.sqrt(c["drift_noise"])',
     'return c["drift_scale"] * c["drift_bias"] / c["drift_noise"]', f"{S}test_bandit_drift.py"),
    ("drift cells: the first design left out of the scored ones", "trivial",
     "tools/bandit_drift.py", 'rs = [r for r in rows if r["seed"] >= first]',
     'rs = [r for r in rows if r["seed"] > first]', f"{S}test_bandit_drift.py"),
    ("drift cells: a miss at -15% exactly", "narrow", "tools/bandit_drift.py",
     'sqrt["signed_error_8x"] < -practitioner.GOAL and',
     'sqrt["signed_error_8x"] <= -practitioner.GOAL and', f"{S}test_bandit_drift.py"),
    ("practitioner: the log keeps the design's 25 whatever --eval-every says", "glue",
     "twoclock/studies/planner/practitioner.py",
     "if round(smp / b) % every:  # a run's end between evaluations",
     "if round(smp / b) % EVAL_EVERY:  # a run's end between evaluations", PRACT),
    ("two grids: a truth above its band counted below it", "narrow", "tools/eval_every.py",
     'out["above" if r["measured"] > r["ci"][1] else "below"] += 1',
     'out["above" if r["measured"] < r["ci"][1] else "below"] += 1', f"{S}test_eval_every.py"),
    # this stop: a real sweep read from its curves, and the knee-width prior
    ("real curves: a level one pilot meets at its first point kept as a target", "trivial",
     "tools/real_curves.py",
     "first = [b for b in pilots if any(i == 0 for _, i in got[b])]",
     "first = [b for b in pilots[:-1] if any(i == 0 for _, i in got[b])]",
     f"{P}test_real_curves.py"),
    ("real curves: a truth that never comes counted as covered", "glue", "tools/real_curves.py",
     's["covered"] = truth is not None and band[0] is not None and \\',
     's["covered"] = truth is None or band[0] is not None and \\', f"{P}test_real_curves.py"),
    ("real curves: the obvious rule scaled from the smallest pilot", "trivial",
     "tools/real_curves.py", '"obvious_rule": obvious_rule(pilots[-1], n_p[-1], b, p)}',
     '"obvious_rule": obvious_rule(pilots[0], n_p[0], b, p)}', f"{P}test_real_curves.py"),
    ("real curves: the clock read at the first point past the level", "self",
     "tools/real_curves.py", 'return (float(at) if i is not None else None), i',
     'return (float(run["samples"][i]) if i is not None else None), i',
     f"{P}test_real_curves.py"),
    ("knee-width prior: the nearest grid point on a line, not in log m", "narrow",
     "tools/practitioner_sharpness.py",
     "return float(grid[np.argmin(np.abs(np.log(grid) - math.log(med)))])",
     "return float(grid[np.argmin(np.abs(grid - med))])", f"{P}test_practitioner_sharpness.py"),
    ("bands: a pilot pair's growth read against the envelope's low end", "self",
     "twoclock/pilot/bands.py", 'info["exponents"][1] if info else None)',
     'info["exponents"][0] if info else None)', f"{P}test_bands.py"),
    ("ingest: the first launch of a run kept, not the last", "trivial",
     "tools/real_curves.py",
     "order = lambda v: sorted(v, key=lambda f: (launched(f), f), reverse=True)",
     "order = lambda v: sorted(v, key=lambda f: (launched(f), f))", f"{P}test_real_curves.py"),
    ("ingest: the second design repeating the first", "narrow", "tools/real_curves.py",
     "if len(big) >= 4 and big[:3] != bs[:3]:", "if len(big) >= 4:",
     f"{P}test_real_curves.py"),
    ("set: a held-out batch at exactly 2x pooled beyond it", "narrow", "tools/real_curves.py",
     "lo, hi = next((a, b) for a, b in BUCKETS if a < x <= b)",
     "lo, hi = next((a, b) for a, b in BUCKETS if a <= x < b)", f"{P}test_real_curves.py"),
    ("seeds: a batch's clock the mean of its runs", "self", "tools/real_curves.py",
     "med = float(np.median([math.inf if n is None else n for n, _ in got]))",
     "med = float(np.mean([math.inf if n is None else n for n, _ in got]))",
     f"{P}test_real_curves.py"),
    ("seeds: a run at exactly half the longest run's steps left out", "narrow",
     "tools/real_curves.py", "return {r for r, n in counts.items() if 2 * n < top}",
     "return {r for r, n in counts.items() if 2 * n <= top}", f"{P}test_real_curves.py"),
    ("seeds: the seeds of a batch read as launches of one run", "glue", "tools/real_curves.py",
     'seed = m.groupdict().get("seed")', "seed = None", f"{P}test_real_curves.py"),
    ("one run a batch: a batch with two runs counted once", "trivial", "twoclock/pilot/logs.py",
     "return bool(bs) and len(set(bs)) == len(bs)", "return bool(bs)", f"{P}test_bands.py"),
    # one run's band (pilot/runband.py) and what one run a batch allows (tools/single_run_floor)
    ("run band: the scatter's dof counts every run, not the runs less one a batch", "self",
     "twoclock/pilot/runband.py", "ss, dof = ss + float(((x - x.mean()) ** 2).sum()), dof + "
     "x.size - 1", "ss, dof = ss + float(((x - x.mean()) ** 2).sum()), dof + x.size", RUNBAND),
    ("run band: the run's scatter added to the band's half-width, not in quadrature", "self",
     "twoclock/pilot/runband.py", "widen = lambda h: math.sqrt(h * h + qs * qs)",
     "widen = lambda h: h + qs", RUNBAND),
    ("run band: the normal's quantile where the pilots measured the scatter", "narrow",
     "twoclock/pilot/runband.py",
     "return float(stats.norm.ppf(p)) if dof is None else pf.t_quantile(p, dof)",
     "return float(stats.norm.ppf(p))", RUNBAND),
    ("run band: first-point runs used at their bound counted as seeds", "glue",
     "twoclock/pilot/logs.py", "if c.timed and c.bound is None]", "if c.timed]", RUNBAND),
    ("single-run floor: the cells' scatter taken on clocks, not log clocks", "self",
     "tools/single_run_floor.py", "sigma, dof = runband.pooled_sd(cs)",
     "sigma, dof = runband.pooled_sd(np.exp(c) for c in cs)", FLOOR),
    ("single-run floor: one run's truth read as the median", "glue", "tools/single_run_floor.py",
     'err[(t, "run")].append(abs(m / r - 1))', 'err[(t, "run")].append(abs(m / n - 1))', FLOOR),
    ("one-seed bias: a run that never arrived kept in the fit to every run", "glue",
     "tools/one_seed_bias.py", "S, ok = N_PxS.shape[1], N_PxS > 0",
     "S, ok = N_PxS.shape[1], np.isfinite(N_PxS)", ONESEED),
    ("one-seed bias: a truth that never came scored as a miss of -100%", "glue",
     "tools/one_seed_bias.py", "err = lambda pred: {float(h): (None if not truth.get(float(h)) "
     "else", "err = lambda pred: {float(h): (-1.0 if not truth.get(float(h)) else", ONESEED),
    # the two forms from one simulation, the median's CI, the knee over the levels
    ("compare forms: a refused second plan scored with the first plan's error", "glue",
     "twoclock/studies/planner/practitioner.py",
     "return [{**{k: r[k] for k in keep}, **r[key]} for r in rows]",
     "return [{**r, **r[key]} for r in rows]", DESIGN),
    ("median's CI: rows at every held-out batch resampled, not those at the batch", "glue",
     "twoclock/studies/planner/practitioner.py",
     "if r[\"times_largest_pilot\"] == times and r.get(\"rel_error\") is not None]\n    if len(e)",
     "if r.get(\"rel_error\") is not None]\n    if len(e)", DESIGN),
    ("knee over the levels: the bands and medians at s = 1 whatever the fitted sharpness",
     "glue", "twoclock/pilot/levels.py",
     "self.S[self.best] if self.sharp else None)",
     "None)", LEVELS),
    ("knee over the levels: the sharpness's grid exponent c_s = 1.2^s - 1, not 1.2^(2 s) - 1",
     "self", "twoclock/pilot/levels.py", "c = 1.2 ** (2.0 * s) - 1.0", "c = 1.2 ** s - 1.0",
     LEVELS),
    ("--fit-knee not passed to the joint fit", "glue", "twoclock/pilot/config.py",
     "cfg.level, lg.fit_knee)", "cfg.level)", LEVELS),
    ("compare forms: the whole curve's knee read at the first held-out batch for every row",
     "trivial", "twoclock/studies/planner/practitioner.py",
     'row["knee"] = banded(knee, b, answers[b], "knee")',
     'row["knee"] = banded(knee, held[0], answers[b], "knee")', DESIGN),
    ("last-slope baseline: the slope of the two smallest pilots", "trivial",
     "tools/practitioner_levels.py", "for b in sorted(by)[-2:]]", "for b in sorted(by)[:2]]",
     PLEVELS),
    # this stop: a metric that turns back (--progress-form auto)
    ("turns back: the trend read from the whole run, not its last half", "trivial",
     "twoclock/pilot/erosion.py", "n = max(MIN_POINTS, int(math.ceil(SHARE * s.size)))",
     "n = s.size", f"{P}test_erosion.py"),
    ("turns back: the runs' t averaged, not pooled as Stouffer's z", "self",
     "twoclock/pilot/erosion.py", "z = sum(t for _, t in ts) / math.sqrt(len(ts))",
     "z = sum(t for _, t in ts) / len(ts)", f"{P}test_erosion.py"),
    ("turns back: the sign taken toward the target", "trivial", "twoclock/pilot/erosion.py",
     'away = 1.0 if op in ("<=", "<") else -1.0', 'away = -1.0 if op in ("<=", "<") else 1.0',
     f"{P}test_erosion.py"),
    ("auto: Adam's form where the metric turns back", "glue", "twoclock/pilot/logs.py",
     "    if not ero.turns_back:\n        return \"adam\"",
     "    if ero.turns_back:\n        return \"adam\"", f"{P}test_erosion.py"),
    ("compare forms: auto always the knee", "glue", "twoclock/studies/planner/practitioner.py",
     'answers[b]) if back else row["knee"]', 'answers[b]) if False else row["knee"]', DESIGN),
    ("whole curve: levels past the target kept", "narrow",
     "twoclock/studies/planner/whole_curve.py",
     'if (v0 - c.threshold) * (1.0 if c.op in ("<=", "<") else -1.0) <= 0:',
     'if (v0 - c.threshold) * (1.0 if c.op in ("<=", "<") else -1.0) == 0:', PLEVELS),
    # this stop: a local quadratic through noisy evaluations (--smooth quad:N)
    ("quad smoothing: a straight line through the window, not a quadratic", "self",
     "twoclock/pilot/clocks.py", "X = np.stack([np.ones_like(x), x, x * x], axis=-1)",
     "X = np.stack([np.ones_like(x), x], axis=-1)", f"{P}test_smoothing.py"),
    ("quad smoothing: the window's spacing taken as even", "trivial", "twoclock/pilot/clocks.py",
     "x = s[idx] - s[idx[:, h]][:, None]",
     "x = (idx - idx[:, h][:, None]).astype(np.float64)", f"{P}test_smoothing.py"),
    ("quad smoothing: the ends smoothed off-centre", "narrow", "twoclock/pilot/clocks.py",
     "    if v.size < n:\n        return out",
     "    if v.size < n:\n        return out\n    out[:h] = out[h]", f"{P}test_smoothing.py"),
    ("quad smoothing: the study's plans read as logged", "glue",
     "twoclock/studies/planner/whole_curve.py",
     "plans = [adam_plan(path, target, held, **reading)]",
     "plans = [adam_plan(path, target, held)]",
     f"{S}test_practitioner_design.py -k smooth"),
    # this stop: an evaluation's noise in the joint fit (--eval-items with several targets)
    ("joint floor: the residuals' threshold kept where the floor is larger", "self",
     "twoclock/pilot/fit.py", "return (sse_min * (1 + t * t / dof) if floor * dof <= sse_min",
     "return (sse_min * (1 + t * t / dof) if floor * dof >= sse_min",
     f"{P}test_levels.py -k floor"),
    ("joint floor: the targets' variances averaged, not weighted by their runs", "trivial",
     "twoclock/pilot/levels.py", "return sum(k * sd * sd for k, sd in got) / n if n else 0.0",
     "return sum(sd * sd for k, sd in got) / len(got) if n else 0.0",
     f"{P}test_levels.py -k floor"),
    ("eval noise: the study's plans not told the evaluation's size", "glue",
     "twoclock/studies/planner/practitioner.py",
     '"eval_items": EVAL_ITEMS if eval_noise else None}', '"eval_items": None}',
     f"{S}test_practitioner_design.py -k eval_noise"),
    # this stop: practitioner runs on several fresh design sets, pooled
    ("pool: a design of one set paired with the same-numbered design of another", "glue",
     "tools/practitioner_pool.py",
     'return [{**r, "seed": f"{design_seed}/{r[\'seed\']}"} for r in rows]',
     "return [dict(r) for r in rows]", f"{S}test_practitioner_pool.py"),
    ("pool: an option's absent key and its None read as different settings", "trivial",
     "tools/practitioner_pool.py", "got = [r.get(k) or None for r in runs]",
     "got = [r.get(k) for r in runs]", f"{S}test_practitioner_pool.py"),
    ("pool: the bias claim read over every set, not the two new ones", "self",
     "tools/practitioner_pool.py",
     'new = [r for r in rows if int(r["seed"].split("/")[0]) in NEW_SETS]',
     "new = list(rows)", f"{S}test_practitioner_pool.py"),
    ("pool: a column against another, the contrast's sides swapped", "self",
     "tools/practitioner_pool.py", '"contrast": paired.contrast(other, rows, groups=groups),',
     '"contrast": paired.contrast(rows, other, groups=groups),', f"{S}test_practitioner_pool.py"),
    ("pool: a rule's coverage read over every rule", "trivial", "tools/practitioner_pool.py",
     'sc = [r for r in rows if r["rule"] == rule and r.get("rel_error") is not None]',
     'sc = [r for r in rows if r.get("rel_error") is not None]', f"{S}test_practitioner_pool.py"),
    ("levels: the joint critical batch band in B_n, not 0.44 B_n", "trivial",
     "twoclock/pilot/levels.py",
     "crit = {\"ci\": [None if v is None else adam.SQRT_C * math.exp(v)",
     "crit = {\"ci\": [None if v is None else math.exp(v)", "tests/pilot/test_levels.py"),
    ("levels: the joint row's pilots read against their own plan's curve", "self",
     "twoclock/pilot/levels.py",
     'return [{**e, "progress_fit": float(f)} for e, f in zip(got, med)]',
     "return got", "tests/pilot/test_levels.py"),
    ("levels: the joint band's open end read at the other end", "trivial",
     "twoclock/pilot/levels.py", "return [None if open_lo else lo, None if open_hi else hi]",
     "return [None if open_hi else lo, None if open_lo else hi]", "tests/pilot/test_levels.py"),
    ("adam_floor: the head start put back on the plain form only", "trivial",
     "tools/adam_floor.py",
     "float(np.exp(fit(levels).log_median(np.array([float(b)])))[0]) - head * b)",
     "float(np.exp(fit(levels).log_median(np.array([float(b)])))[0]))",
     f"{P}test_adam_floor.py"),
    ("several targets: one target the pilots cannot plan refuses them all", "trivial",
     "twoclock/pilot/config.py", "        if len(plans) < 2:", "        if left or len(plans) < 2:",
     f"{P}test_levels.py"),
    ("several targets: a target left out without its name", "trivial",
     "twoclock/pilot/config.py", '"left_out": left}', '"left_out": []}', f"{P}test_levels.py"),
    ("openrlhf preset: the held-out accuracy read from any pass@k", "trivial",
     "twoclock/pilot/presets.py", '"heldout_acc": ("eval/eval_*_pass1",),',
     '"heldout_acc": ("eval/eval_*_pass*",),', f"{P}test_trainer_logs.py"),
    ("openrlhf preset: the logged rollout size not read as the batch", "glue",
     "twoclock/pilot/presets.py", '"batch": ("train/rollout/num_samples",),', "",
     f"{P}test_trainer_logs.py"),
    ("adam_remains: the head start in 1 / (1 - beta1), not beta1 / (1 - beta1)", "trivial",
     "tools/adam_remains.py", "return beta1 / (1.0 - beta1) * 0.5",
     "return 1.0 / (1.0 - beta1) * 0.5", f"{P}test_adam_remains.py"),
    ("adam_remains: one coordinate's first moment without Adam's bias correction", "trivial",
     "tools/adam_remains.py", "nxt = x - r * m / (1 - b1**t)", "nxt = x - r * m",
     f"{P}test_adam_remains.py"),
    ("adam_remains: a gap read as simulated minus form", "trivial", "tools/adam_remains.py",
     "**{k: _exp(v) - truth for k, v in m.items()}}",
     "**{k: truth - _exp(v) for k, v in m.items()}}", f"{P}test_adam_remains.py"),
    ("momentum_head: momentum's saving put back by adding it", "trivial", "tools/momentum_head.py",
     "return np.asarray(u0, np.float64) - head_curve(beta1, target)(u0)",
     "return np.asarray(u0, np.float64) + head_curve(beta1, target)(u0)",
     f"{P}test_momentum_head.py"),
    ("momentum_head: the held baseline from the smallest pilot", "trivial",
     "tools/momentum_head.py", "np.atleast_1d(clocks[PILOTS[-1]])",
     "np.atleast_1d(clocks[PILOTS[0]])", f"{P}test_momentum_head.py"),
    ("momentum_head: the form fitted and brought back under a fixed lr", "glue",
     "tools/momentum_head.py", "np.ones(Bp.size), 0.5, lr0, B0, sharp=True)",
     "np.ones(Bp.size), 0.0, lr0, B0, sharp=True)", f"{P}test_momentum_head.py"),
    ("adam_remains: the closed-form count one update late", "narrow", "tools/adam_remains.py",
     "        return t - 1 + (x - end) / (x - nxt)\n\n    lo, hi",
     "        return t + (x - end) / (x - nxt)\n\n    lo, hi", f"{P}test_adam_remains.py"),
    ("openrlhf: the unread-K note shown where --updates gave K", "glue", "twoclock/pilot/logs.py",
     'return None if note is None or reading.get("updates") or any(',
     'return None if note is None or any(', f"{P}test_trainer_logs.py"),
    ("floor over the target: read from the plateau, not its distance from the optimum", "trivial",
     "twoclock/pilot/floorout.py", "np.abs(np.asarray(a_R, np.float64) - optimum) / abs(",
     "np.abs(np.asarray(a_R, np.float64)) / abs(", f"{P}test_floorout.py"),
    ("floor over the target: the smallest of the runs reported", "glue",
     "twoclock/pilot/floorout.py", "top = int(np.argmax(ratio_R))", "top = int(np.argmin(ratio_R))",
     f"{P}test_floorout.py"),
    ("floor over the target: the plain form's bound taken as held past it", "narrow",
     "twoclock/pilot/floorout.py", "if ratio <= PLAIN_HELD:", "if ratio <= CHECKED[0]:",
     f"{P}test_floorout.py"),
    ("a batch where half its runs arrived kept in the fits", "narrow", "twoclock/pilot/clocks.py",
     "if 0 < arrived[b] <= len(cs) / 2]",
     "if 0 < arrived[b] < len(cs) / 2]", f"{P}test_logs_minority.py"),
    ("a batch's measured median without its never-arrived runs", "trivial",
     "twoclock/pilot/plan.py", "p_meas = _measured(runs.prog_R, at, runs.never_B.count(b))",
     "p_meas = _measured(runs.prog_R, at)", f"{P}test_logs_minority.py"),
    ("a minority batch's arrivals still timed", "glue", "twoclock/pilot/clocks.py",
     "is not None) and \\\n            not self.minority",
     "is not None)", f"{P}test_logs_minority.py"),
    ("a knee below the pilots not said to be extrapolated", "trivial", "twoclock/pilot/report.py",
     'below = cb["batch"] is not None and fitted and cb["batch"] < min(fitted)',
     'below = cb["batch"] is not None and fitted and cb["batch"] < min(fitted) / 100',
     f"{P}test_critical_line.py"),
    ("a prediction inside its first rollout batch read against B / K", "trivial",
     "twoclock/pilot/logs.py", "if med is None or med >= b:", "if med is None or med >= b / k:",
     f"{P}test_logs_minority.py"),
    ("a band's reason named by its rollout batch alone", "glue", "twoclock/pilot/bands.py",
     "band at B {at or format(b, 'g')} for", "band at B {format(b, 'g')} for",
     f"{P}test_bands.py"),
    ("--predict-rule: a pilot batch read from runs at another lr", "glue",
     "twoclock/pilot/plan.py", "on_pred = on if same else np.isclose(",
     "on_pred = on if True else np.isclose(",
     f"{P}test_adam_form.py -k pilots_own_rule"),
    ("a planner's schedule switched before one rollout batch of B1", "glue",
     "twoclock/pilot/plan.py", "                         min_switch=s.batch)",
     "                         min_switch=0.0)", f"{P}test_pilot.py -k whole_rollout"),
    ("two forms within 0.1% said to differ", "narrow", "twoclock/pilot/fit.py",
     "if b > a * (1 + 1e-3) else", "if b >= a else", f"{P}test_printout_words.py"),
    ("one failed run counted in the plural", "trivial", "twoclock/pilot/logs.py",
     "{n} run{'s' * (n != 1)} crossed", "{n} runs crossed", f"{P}test_printout_words.py"),
    # ------------------------------------------------------------------ the study command lines
    ("shapes: --n-ckpt taken and replaced unseen", "glue", "twoclock/studies/shapes/__init__.py",
     '    FIXED_SWEEP = {"n_ckpt": ', '    _FIXED_SWEEP = {"n_ckpt": ', f"{SHAPES} -k n_ckpt"),
    ("several models' --help: SweepConfig's defaults, not each model's", "trivial",
     "twoclock/cli/run_study.py",
     "shown, helps = _sweep_defaults(study, models) if one is None else (d.sweep, {})",
     "shown, helps = (d.sweep, {})", f"{HELP} -k several_models"),
    ("--no-figure offered by a study that draws no figure", "glue", "twoclock/cli/run_study.py",
     "figure=study.figure is not None)", "figure=True)", f"{HELP} -k no_no_figure"),
    ("time_to_target: the figure skipped unsaid", "trivial", "twoclock/studies/time_to_target.py",
     '    if out["reference_seconds"] is not None:\n        return time_to_target_figure(out)',
     '    if True:\n        return None if out["reference_seconds"] is None else '
     'time_to_target_figure(out)',
     f"{S}test_studies_time_phase.py -k 'nothing_reached or which_batch or says_in_one_line'"),
    ("twoclock run with no study: the usage and exit 2, no error line", "trivial",
     "twoclock/cli/main.py",
     '            return _refuse("run: give a study to run: one of "\n'
     "                           f\"{', '.join(sorted(studies))}\")",
     "            print(_usage())\n            return 2", "tests/cli/test_console.py -k unknown"),
    ("--seeds 2.5: argparse's int, no range named", "glue", "twoclock/cli/flags.py",
     "    return (whole_number if t is int else t), None", "    return t, None",
     f"{CLI} -k integer"),
    ("a refusal names the config field, not the flag typed", "glue", "twoclock/cli/run_study.py",
     "raise ValueError(flagged(str(e), p, ns)) from None", "raise ValueError(str(e)) from None",
     f"{CLI} -k refusal_names"),
    ("--help lists every model, the study refuses all but its own", "trivial",
     "twoclock/cli/run_study.py", 'help="the model: " + " | ".join(ok))',
     'help="the model: " + " | ".join(MODELS))', f"{HELP} -k model_lists"),
    ("critical batch: 'measured none in range' where no run reached the target", "trivial",
     "twoclock/analysis/report.py",
     '        unreached = _unreached(result, cb["lr0"]) if cb["batch"] is None else None',
     "        unreached = None", f"{A}test_report.py -k no_run_reached"),
    ("shapes: 'B_crit > 256' where the smallest batch never reached the target", "trivial",
     "twoclock/studies/shapes/report.py",
     '        elif r["samples_at_b_min"] is not None:  # no slowdown up to the largest batch',
     "        elif True:", f"{SHAPES} -k no_batch_reached_has"),
    ("a clock table's second lr0 block without its label", "trivial",
     "twoclock/analysis/report.py",
     "        if len(lr0s) > 1:  # one block per lr0, each labelled (the lr column is lr(B))",
     "        if len(lr0s) > 1 and lr0 == lr0s[0]:", f"{S}test_bandit_regimes.py"),
]


def _selection(sel: str, root: str) -> list:
    """pytest arguments of a selection, leaving out files the copy does not have: a `-k` (or
    `-m`) applies to the file before it, so each file with its own -k runs as its own group."""
    groups, cur = [], None
    words = shlex.split(sel)
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("-k", "-m"):  # -m: a marker expression ('slow': a test left out by default)
            cur[1 if w == "-k" else 2] = words[i + 1]
            i += 2
            continue
        cur = [w, None, None]
        groups.append(cur)
        i += 1
    return [(f, k, m) for f, k, m in groups
            if os.path.exists(os.path.join(root, f.split("::")[0]))]


def _pytest(root: str, groups: list, timeout: float) -> tuple:
    """(status, seconds, last line) of the groups run in turn, stopping at the first failure."""
    t0 = time.perf_counter()
    last = ""
    for f, k, m in groups:
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", f] + \
              (["-k", k] if k else []) + ["-m", m or "slow or not slow"]  # slow checks kill too
        left = timeout - (time.perf_counter() - t0)
        try:
            r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=max(left, 1),
                               env={**os.environ, "PYTHONPATH": root})
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - t0, f
        out = r.stdout.strip().splitlines()
        last = out[-1] if out else r.stderr.strip()[-200:]
        failed = [ln.split()[1] for ln in out if ln.startswith(("FAILED ", "ERROR "))]
        if r.returncode == 5:  # -k selected nothing in this file
            continue
        if r.returncode != 0:
            return ("killed" if r.returncode == 1 else f"error {r.returncode}",
                    time.perf_counter() - t0, failed[0] if failed else f"{f}: {last}")
    return "survived", time.perf_counter() - t0, last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated bug numbers (1-based)")
    ap.add_argument("--timeout", type=float, default=400.0, help="seconds per bug")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the unedited run of every selection")
    ns = ap.parse_args()
    chosen = (range(1, len(BUGS) + 1) if not ns.only
              else [int(x) for x in ns.only.split(",")])
    rows = []
    with tempfile.TemporaryDirectory(prefix="self-audit-") as root:
        copy_tree(root, None)  # the working tree, as tools/mutation.py copies it
        if not ns.no_baseline:
            seen, groups = set(), []
            for n in chosen:
                for g in _selection(BUGS[n - 1][5], root):
                    g = tuple(g)
                    if g not in seen:
                        seen.add(g)
                        groups.append(g)
            status, secs, last = _pytest(root, groups, 3 * ns.timeout)
            print(f"baseline (unedited): {status} in {secs:.0f} s  {last}", flush=True)
            if status != "survived":
                print("the selections fail without a bug: fix that first", file=sys.stderr)
                return 2
        for n in chosen:
            bug, kind, path, old, new, sel = BUGS[n - 1]
            p = os.path.join(root, path)
            src = open(p).read()
            if src.count(old) != 1:
                rows.append((n, bug, kind, path, "n/a", 0.0, f"{src.count(old)} matches"))
                print(f"{n:>3} n/a       {bug}: {path} has {src.count(old)} of {old!r}", flush=True)
                continue
            open(p, "w").write(src.replace(old, new))
            try:
                groups = _selection(sel, root)
                status, secs, last = _pytest(root, groups, ns.timeout) if groups else \
                    ("no tests", 0.0, sel)
            finally:
                open(p, "w").write(src)
            rows.append((n, bug, kind, path, status, secs, last))
            print(f"{n:>3} {status:<9} {secs:5.0f} s  [{kind}] {bug}  ({path})  {last}",
                  flush=True)
    killed = sum(r[4] == "killed" for r in rows)
    valid = sum(r[4] != "n/a" for r in rows)
    print(f"\nscore: {killed} / {valid} killed ({100 * killed / max(valid, 1):.0f}%)")
    if ns.markdown:
        print("\n| # | bug | kind | file | result | killed by |\n|---|---|---|---|---|---|")
        for n, bug, kind, path, status, _, last in rows:
            by = last.split(" - ")[0] if status == "killed" else "-"
            print(f"| {n} | {bug} | {kind} | `{path.removeprefix('twoclock/')}` | {status} "
                  f"| `{by}` |")
    return 0 if killed == valid else 1


if __name__ == "__main__":
    sys.exit(main())
