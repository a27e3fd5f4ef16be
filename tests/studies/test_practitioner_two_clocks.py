"""Why the practitioner design's bandit under a fixed lr has no answer at 8x (B 2048): the two
clocks cross. Under a fixed lr the progress clock grows about as B^1 in samples past the knee,
the drift clock about as B^(1/2) (on the drift coordinates Adam is noise-dominated, so its drift
per update grows as sqrt(B)), so at a large enough batch the drift has worn the held-out
accuracy down before it reaches the target: the best accuracy a run reaches falls with B, and at
2048 it stays below 0.75 in every seed (docs/plan.md, "A practitioner's sweep"). Simulates
(slow); `python -m tests.studies.test_practitioner_two_clocks` prints the table."""
import math

import numpy as np
import pytest

BATCHES, LR0, SEEDS, BUDGET = (512, 1024, 2048), 0.02, 16, 1_600_000  # the design's lr0


def _median(n):
    """The median over the last axis, a run that never got there (0) later than any."""
    return np.median(np.where(n > 0, n, math.inf), axis=-1)


def two_clocks() -> dict:
    """The bandit (defaults, Adam, fixed lr0 0.02) at BATCHES, 16 seeds, 1.6M samples each:
    per batch the seeds' best held-out accuracy, and the medians of the progress and the
    failure clocks (inf where fewer than half the seeds reach)."""
    from twoclock import OptimConfig
    from twoclock.models.bandit import MODEL, BanditConfig
    from twoclock.studies.planner import logs_check
    cfg = BanditConfig()
    res = logs_check.simulate(MODEL, cfg, OptimConfig(name="adam", lr_rule="fixed"), BATCHES,
                              LR0, SEEDS, BUDGET, 400)
    return {"target": cfg.target,
            "best": [res.ckpt[i]["heldout_acc"][0].max(axis=1) for i in range(len(BATCHES))],
            "progress": [float(x) for x in _median(res.prog_n[:, 0])],
            "failure": [float(x) for x in _median(res.fail_n[:, 0])]}


@pytest.fixture(scope="module")
def clocks():
    return two_clocks()


@pytest.mark.slow
def test_the_best_accuracy_falls_with_the_batch_and_misses_the_target_at_8x(clocks):
    # by the theory: nothing a run does after drift wins brings it back, so the best it
    # reaches is the ceiling; every seed at 512 passes 0.75 and every seed at 2048 does not
    best = clocks["best"]
    assert (best[0] >= clocks["target"]).all() and (best[-1] < clocks["target"]).all()
    assert np.median(best[0]) > np.median(best[1]) > np.median(best[2])


@pytest.mark.slow
def test_the_drift_clock_grows_slower_in_the_batch_than_the_progress_clock(clocks):
    # 512 -> 1024: the failure clock's exponent below the progress clock's; at 2048 the
    # failure clock is finite (its threshold is crossed) and the progress clock is not
    prog, fail = clocks["progress"], clocks["failure"]
    e = lambda c: math.log2(c[1] / c[0])
    assert e(fail) < e(prog), (e(fail), e(prog))
    assert math.isfinite(fail[-1]) and math.isinf(prog[-1])


def pilots_best() -> list:
    """The design's bandit pilots (B 64, 128, 256, its plan-check budget, fixed lr0 0.02, 16
    seeds): per batch the seeds' best held-out accuracy within the budget and the median
    samples at which it was reached."""
    from twoclock import OptimConfig
    from twoclock.models.bandit import MODEL, BanditConfig
    from twoclock.studies.plan_check import entry
    from twoclock.studies.planner import logs_check
    e = entry(MODEL)
    res = logs_check.simulate(MODEL, BanditConfig(), OptimConfig(name="adam", lr_rule="fixed"),
                              e.pilots, e.lr0, SEEDS, int(e.budget), 200)
    out = []
    for i, b in enumerate(e.pilots):
        acc, smp = res.ckpt[i]["heldout_acc"][0], res.ckpt[i]["samples"][0, 0]
        out.append((b, acc.max(axis=1), float(np.median(smp[acc.argmax(axis=1)])),
                    float(smp[-1])))
    return out


# Past the sign-like regime: Adam's form lets a clock grow at most as B^(1 - p) (B^1 at a fixed
# lr, B^(1/2) under the sqrt rule). The bandit's grows faster at its large batches, at the
# design's sqrt-rule lr at 2048 (0.32) and at its pilot lr at 256 (0.113), while 1/lr still
# holds there (not a saturated lr): its sqrt-rule 8x miss (docs/plan.md, "A practitioner's sweep").
FIXED_LRS, WIDE_BATCHES, ELASTIC_LRS = (0.113, 0.32), (256, 512, 1024, 2048), (0.16, 0.32, 0.64)


def _fixed_lr_clocks(batches, lr, **model):
    """The bandit (defaults but `model`, Adam, a fixed lr) at `batches`, SEEDS seeds, 600 000
    samples each: the engine's progress clocks, batch x seed (0: never)."""
    from twoclock import OptimConfig
    from twoclock.models.bandit import MODEL, BanditConfig
    from twoclock.studies.planner import logs_check
    return np.asarray(logs_check.simulate(MODEL, BanditConfig(**model), OptimConfig(
        name="adam", lr_rule="fixed"), batches, lr, SEEDS, 600_000, 64).prog_n[:, 0], np.float64)


def past_sign_like(resamples: int = 2000, **model) -> dict:
    """The bandit (defaults but `model`) at fixed lrs FIXED_LRS over WIDE_BATCHES: per lr the
    median clocks, the exponent per doubling and the last doubling's 95% percentile CI (seeds
    resampled jointly across batches)."""
    rng, out = np.random.default_rng(0), {}
    for lr in FIXED_LRS:
        n = _fixed_lr_clocks(WIDE_BATCHES, lr, **model)
        boot = [np.log2(_median(n[-1, i]) / _median(n[-2, i]))
                for i in rng.integers(0, SEEDS, (resamples, SEEDS))]
        out[lr] = {"clock": _median(n), "exponent": np.diff(np.log2(_median(n))),
                   "ci": np.percentile(boot, [2.5, 97.5])}
    return out


def elasticity() -> np.ndarray:
    """At B 2048 the clock's lr elasticity d log N / d log lr between ELASTIC_LRS (-1: the
    form's 1/lr). Printed only: the slow test does not pay for it."""
    n = [_median(_fixed_lr_clocks((2048,), lr)[0]) for lr in ELASTIC_LRS]
    return np.diff(np.log(n)) / np.diff(np.log(ELASTIC_LRS))


@pytest.mark.slow
def test_the_bandits_fixed_lr_clock_grows_faster_than_b_at_its_largest_batches():
    # by the form: at most B^1 at a fixed lr; measured past it from 1024 to 2048 at both lrs,
    # the 95% CI's lower end above 1
    for lr, r in past_sign_like().items():
        assert r["ci"][0] > 1.0, (lr, r["exponent"][-1], r["ci"])


@pytest.mark.slow
def test_with_the_drift_out_of_the_metric_the_fixed_lr_clock_grows_no_faster_than_b():
    # the knob (docs/plan.md): drift_scale 0, the held-out metric blind to the drift, the same
    # seeds and lrs; by the form, B^1 past the knee and no faster. Measured 0.992 [0.987, 1.002]
    # at lr 0.113 and 0.998 [0.991, 1.006] at 0.32 from 1024 to 2048 (1.136 and 1.150 with it):
    # the 95% CI's lower end at most 1, and the exponent past 0.9 (sign-like, not below the knee)
    for lr, r in past_sign_like(drift_scale=0.0).items():
        assert r["ci"][0] <= 1.0 and r["exponent"][-1] > 0.9, (lr, r["exponent"][-1], r["ci"])


if __name__ == "__main__":
    for scale in (0.25, 0.0):
        for lr, r in past_sign_like(drift_scale=scale).items():
            print(f"drift_scale {scale:g}, fixed lr {lr:g}: clocks at B {WIDE_BATCHES}: "
                  + ", ".join(f"{c:.0f}" for c in r["clock"]) + "; exponent per doubling "
                  + ", ".join(f"{e:.3f}" for e in r["exponent"])
                  + f" (last [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}])")
    print(f"B 2048, lr elasticity {ELASTIC_LRS}: " + ", ".join(f"{e:.3f}" for e in
                                                                elasticity()))
    print("| pilot batch | best held-out accuracy: median [min, max] | at (median) | run's end |")
    for b, best, at, end in pilots_best():
        print(f"| {b} | {np.median(best):.4f} [{best.min():.4f}, {best.max():.4f}] | {at:.0f} | "
              f"{end:.0f} |")
    c = two_clocks()
    print("| batch | best held-out accuracy: median [min, max] | progress clock | failure clock |")
    for b, best, p, f in zip(BATCHES, c["best"], c["progress"], c["failure"]):
        print(f"| {b} | {np.median(best):.4f} [{best.min():.4f}, {best.max():.4f}] | "
              f"{p:.0f} | {f:.0f} |")
