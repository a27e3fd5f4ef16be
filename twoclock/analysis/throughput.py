"""Wall-clock throughput of an RLVR step: roofline generation plus linear training.

One step with a rollout batch of B responses takes

    t_step(B) = t_gen(B) + t_train(B)
    t_gen(B)  = t_lat * (1 + (b / B_gen)^k)^(1/k) * B / b,   b = min(B, max_concurrent)
    t_train(B) = train_overhead + B * train_per_sample

t_gen is a smoothed roofline: at low concurrency decoding is bound by reading the weights
(t_lat per batch whatever B, so throughput grows ~B); at high concurrency it is compute
bound (time grows ~B, throughput plateaus at B_gen / t_lat). B_gen, where the two terms are
equal, is the *critical generation batch*; k sets how sharp the knee is (k = 1: additive
latency + compute, k -> inf: the hard roofline max). An optional memory cap
`max_concurrent` bounds the batch decoded at once (KV cache); a larger rollout batch is
generated in waves at the throughput of the cap. Training already exposes all token
positions at once, so its time is linear in B.

Calibration of the defaults, to the GRPO measurements published in "When Do Larger Batches
Help Scale LLM Reinforcement Learning?" (G = 8 responses per prompt, batch counted in
responses, so P = 128 prompts is B = 1024):
- actor update 101.3 s at P = 128 and 208.6 s at P = 256. The two-point line has a
  negative intercept (-6.0 s), so the overhead is set to 0 and the slope is the least-squares
  fit through the origin: 0.10127 s per response (predicts 103.7 s and 207.4 s, within 2.4%).
- generation throughput x1.31 at 2x and x1.36 at 4x prompts (relative to P = 128). Solving
  both ratios for the knee gives k = 3.74 and B_gen = 1264 responses (158 prompts); the
  model then predicts x1.310, x1.360 and a plateau at x1.364.
- absolute generation time: the article reports 11.90 h for 122.88K responses at P = 128, i.e.
  357 s per 1024-response step; minus the modelled 103.7 s update leaves t_gen(1024) =
  253.3 s (everything that is not the actor update is booked as generation), so t_lat =
  229.1 s.
- PPO (a different model and system): collection 39 s -> 68 s when the batch grows
  256 -> 1024 (throughput x2.29). `calibrate_ppo()` keeps k and fits B_gen and t_lat to these
  two points (B_gen = 601 responses, t_lat = 38.6 s).
Cross-check, not fitted: end-to-end throughput at P = 256 is predicted +19% (article: +17%).
The article's +41% at P = 1024 is not reproduced (the model's end-to-end ceiling is +25%,
because training is linear in B); see docs/throughput.md.

`fit_generation`, `fit_training` and `fit` recover the parameters from a user's own
(batch, seconds) measurements with numpy only (a grid search that zooms in, plus closed-form
least squares for the scale parameters).
"""
from dataclasses import dataclass, replace
import math

import numpy as np

from twoclock.config import param, require, require_positive

# The GRPO calibration of the article (see the module docstring; tests re-derive these numbers).
GRPO_RESPONSES_PER_PROMPT = 8
GRPO_REF_BATCH = 1024          # P = 128 prompts x G = 8
GRPO_STEP_SECONDS_REF = 357.0  # 11.90 h * 3600 / (122880 / 1024 steps)
GRPO_TRAIN_SECONDS = ((1024, 101.3), (2048, 208.6))
GRPO_GEN_RATIOS = ((2, 1.31), (4, 1.36))
GRPO_PPO_COLLECT = ((256, 39.0), (1024, 68.0))


@dataclass(frozen=True)
class ThroughputModel:
    """Seconds per RLVR step as a function of the rollout batch B (responses)."""
    gen_latency: float = param(229.1, "t_lat: weight-read-bound generation seconds per batch")
    critical_gen_batch: float = param(1264.0, "B_gen: the roofline knee, in responses")
    knee: float = param(3.74, "k: sharpness of the knee (1 = additive)")
    max_concurrent: float | None = param(None, "memory cap on responses decoded at once "
                                               "('none': no cap)")
    train_per_sample: float = param(0.10127, "update seconds per response")
    train_overhead: float = param(0.0, "update seconds per step independent of the batch")

    def __post_init__(self):
        require_positive("gen_latency", self.gen_latency)
        require_positive("critical_gen_batch", self.critical_gen_batch)
        require_positive("knee", self.knee)
        if self.max_concurrent is not None:
            require_positive("max_concurrent", self.max_concurrent)
        require(isinstance(self.train_per_sample, (int, float)) and self.train_per_sample >= 0
                and math.isfinite(self.train_per_sample), "train_per_sample",
                "a finite number >= 0", self.train_per_sample)
        require(isinstance(self.train_overhead, (int, float)) and self.train_overhead >= 0
                and math.isfinite(self.train_overhead), "train_overhead",
                "a finite number >= 0", self.train_overhead)

    def gen_seconds(self, batch):
        """t_gen(B): seconds to generate one rollout batch."""
        B = _batch_array(batch)
        b = B if self.max_concurrent is None else np.minimum(B, self.max_concurrent)
        per_wave = self.gen_latency * _gen_shape(b, self.critical_gen_batch, self.knee)
        return per_wave * B / b

    def train_seconds(self, batch):
        """t_train(B): seconds of the optimizer update on one rollout batch."""
        return self.train_overhead + self.train_per_sample * _batch_array(batch)

    def step_seconds(self, batch):
        return self.gen_seconds(batch) + self.train_seconds(batch)

    def gen_throughput(self, batch):
        """Responses generated per second."""
        return _batch_array(batch) / self.gen_seconds(batch)

    def throughput(self, batch):
        """End-to-end responses per second (generation + update)."""
        return _batch_array(batch) / self.step_seconds(batch)

    def seconds_for(self, samples, batch):
        """Wall-clock seconds to consume `samples` responses at a constant batch."""
        return np.asarray(samples, np.float64) / self.throughput(batch)

    def gen_plateau(self) -> float:
        """Generation throughput as B -> infinity (or at the memory cap)."""
        if self.max_concurrent is not None:
            return float(self.gen_throughput(self.max_concurrent))
        return self.critical_gen_batch / self.gen_latency

    def feasible(self, batch) -> np.ndarray:
        """Whether the whole batch is decoded concurrently (below the memory cap)."""
        B = _batch_array(batch)
        return np.ones_like(B, bool) if self.max_concurrent is None else B <= self.max_concurrent

    def plateau_batch(self, frac: float = 0.9) -> float:
        """Smallest B whose generation throughput reaches `frac` of the plateau."""
        require(0 < frac < 1, "frac", "in (0, 1)", frac)
        # B / (t_lat (1 + (B/B_gen)^k)^(1/k)) = frac * B_gen / t_lat  <=>  u^k = f^k / (1 - f^k)
        u = (frac**self.knee / (1 - frac**self.knee)) ** (1 / self.knee)
        b = u * self.critical_gen_batch
        return float(b if self.max_concurrent is None else min(b, self.max_concurrent))

    def scaled(self, responses_per_sample: float) -> "ScaledThroughput":
        return ScaledThroughput(self, responses_per_sample)


@dataclass(frozen=True)
class ScaledThroughput:
    """A throughput model seen from a simulation whose one sample stands for several responses.

    Simulated batch B <-> real batch B * responses_per_sample; seconds for N simulated
    samples = N * responses_per_sample / throughput(B * responses_per_sample).
    """
    model: ThroughputModel
    responses_per_sample: float

    def __post_init__(self):
        require_positive("responses_per_sample", self.responses_per_sample)

    def throughput(self, batch):
        """Simulated samples per second."""
        r = self.responses_per_sample
        return self.model.throughput(_batch_array(batch) * r) / r

    def seconds_for(self, samples, batch):
        return np.asarray(samples, np.float64) / self.throughput(batch)

    def critical_gen_batch(self) -> float:
        """The critical generation batch (roofline knee) in simulated samples."""
        b = self.model.critical_gen_batch
        if self.model.max_concurrent is not None:
            b = min(b, self.model.max_concurrent)
        return b / self.responses_per_sample


def _batch_array(batch) -> np.ndarray:
    B = np.asarray(batch, np.float64)
    require(bool(np.all(np.isfinite(B) & (B > 0))), "batch", "finite and > 0", batch)
    return B


# ---------------------------------------------------------------------------- calibration

def _gen_ratio(m, x, k):
    """Generation throughput at m * B relative to B, with x = B / B_gen."""
    return m * ((1 + x**k) / (1 + (m * x) ** k)) ** (1 / k)


def _solve_x(m, ratio, k):
    """x = B / B_gen such that the throughput grows by `ratio` at m x B (bisection on log x)."""
    lo, hi = -20.0, 20.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _gen_ratio(m, math.exp(mid), k) > ratio else (lo, mid)
    return math.exp(0.5 * (lo + hi))


def calibrate_grpo() -> ThroughputModel:
    """Re-derive the GRPO defaults from the article's measurements (see the module docstring)."""
    (m2, r2), (m4, r4) = GRPO_GEN_RATIOS
    best = None
    for k in np.exp(np.linspace(math.log(0.5), math.log(50.0), 3000)):
        x = _solve_x(m2, r2, k)
        err = abs(_gen_ratio(m4, x, k) - r4)
        if best is None or err < best[0]:
            best = (err, float(k), x)
    _, k, x = best
    b_gen = GRPO_REF_BATCH / x
    slope, overhead = fit_training(*zip(*GRPO_TRAIN_SECONDS))
    gen_ref = GRPO_STEP_SECONDS_REF - (overhead + slope * GRPO_REF_BATCH)
    t_lat = gen_ref / (1 + x**k) ** (1 / k)
    return ThroughputModel(gen_latency=t_lat, critical_gen_batch=b_gen, knee=k,
                           train_per_sample=slope, train_overhead=overhead)


def calibrate_ppo(knee: float = 3.74) -> ThroughputModel:
    """Generation part fitted to the article's PPO collection times (39 s -> 68 s at 4x batch).

    Only collection was measured for PPO, so the training part is the GRPO default.
    """
    (b1, s1), (b4, s4) = GRPO_PPO_COLLECT
    x = _solve_x(b4 / b1, (b4 / b1) * s1 / s4, knee)
    return ThroughputModel(gen_latency=s1 / (1 + x**knee) ** (1 / knee),
                           critical_gen_batch=b1 / x, knee=knee)


# ---------------------------------------------------------------------------- fitting

def fit_training(batch, seconds) -> tuple:
    """(train_per_sample, train_overhead) by least squares, overhead constrained >= 0."""
    B, y = _pairs(batch, seconds, "training")
    if B.size >= 2 and np.ptp(B) > 0:
        A = np.stack([B, np.ones_like(B)], axis=1)
        slope, overhead = np.linalg.lstsq(A, y, rcond=None)[0]
        if overhead >= 0 and slope >= 0:
            return float(slope), float(overhead)
    slope = float(np.dot(B, y) / np.dot(B, B))  # through the origin
    return max(slope, 0.0), 0.0


def _gen_shape(B, b_gen, k):
    return np.exp(_log_gen_shape(B, b_gen, k))


def _log_gen_shape(B, b_gen, k):
    # log (1 + (B/b_gen)^k)^(1/k), overflow-free for large k
    return np.logaddexp(0.0, k * np.log(B / b_gen)) / k


def fit_generation(batch, seconds, knee: float | None = None, zoom_steps: int = 10) -> tuple:
    """(gen_latency, critical_gen_batch, knee) minimising squared error in log seconds.

    Needs batches on both sides of the knee to identify B_gen and k; with `knee` given only
    B_gen and the latency are fitted. No memory cap is fitted.
    """
    B, y = _pairs(batch, seconds, "generation")
    require(B.size >= (2 if knee is not None else 3), "batch",
            "at least 3 measurements (2 with a fixed knee)", B.size)
    logy = np.log(y)
    lo_b, hi_b = math.log(B.min()) - 4.0, math.log(B.max()) + 4.0
    lo_k, hi_k = (math.log(knee),) * 2 if knee is not None else (math.log(0.3), math.log(100.0))
    best = None
    for _ in range(zoom_steps):
        lb_G = np.linspace(lo_b, hi_b, 61)
        lk_K = np.linspace(lo_k, hi_k, 41 if knee is None else 1)
        bg, kk = np.meshgrid(np.exp(lb_G), np.exp(lk_K), indexing="ij")
        shape = _log_gen_shape(B[None, None, :], bg[..., None], kk[..., None])
        log_lat = np.mean(logy - shape, axis=-1)
        sse = np.sum((logy - shape - log_lat[..., None]) ** 2, axis=-1)
        i, j = np.unravel_index(np.argmin(sse), sse.shape)
        best = (float(np.exp(log_lat[i, j])), float(bg[i, j]), float(kk[i, j]))
        db, dk = (hi_b - lo_b) / 60 * 3, (hi_k - lo_k) / 40 * 3
        lo_b, hi_b = lb_G[i] - db, lb_G[i] + db
        if knee is None:
            lo_k, hi_k = lk_K[j] - dk, lk_K[j] + dk
    return best


def fit(gen_batch, gen_seconds, train_batch, train_seconds, knee: float | None = None,
        max_concurrent: float | None = None) -> ThroughputModel:
    """A ThroughputModel fitted to measured generation and training times per step."""
    t_lat, b_gen, k = fit_generation(gen_batch, gen_seconds, knee=knee)
    slope, overhead = fit_training(train_batch, train_seconds)
    return ThroughputModel(gen_latency=t_lat, critical_gen_batch=b_gen, knee=k,
                           max_concurrent=max_concurrent, train_per_sample=slope,
                           train_overhead=overhead)


def _pairs(batch, seconds, what):
    B = np.asarray(batch, np.float64).ravel()
    y = np.asarray(seconds, np.float64).ravel()
    require(B.size == y.size and B.size >= 1, f"{what} measurements",
            "equal-length, non-empty batch and seconds lists", (B.size, y.size))
    require(bool(np.all(np.isfinite(B) & (B > 0))), "batch", "finite and > 0", B.tolist())
    require(bool(np.all(np.isfinite(y) & (y > 0))), "seconds", "finite and > 0", y.tolist())
    return B, y


__all__ = ["ThroughputModel", "ScaledThroughput", "calibrate_grpo", "calibrate_ppo",
           "fit_training", "fit_generation", "fit", "replace"]
