"""The bandit's theory: the failure clock of the shaping pull, and measured noise scales."""
import math

from twoclock.config import OptimConfig, require_positive
from twoclock.models.bandit.config import BanditConfig
from twoclock.models.grpo import noise_scale
from twoclock.scaling import companions


def drift_noise_scale(cfg: BanditConfig) -> float:
    """Configured B_simple of the drift block in responses, tr(Sigma) / |g|^2 = c_d / b^2
    (inf without a pull); the verifier adds to it when drift_train_scale > 0."""
    return math.inf if cfg.drift_bias == 0 else cfg.drift_noise / cfg.drift_bias**2


def predicted_failure_samples(cfg: BanditConfig, opt: OptimConfig, lr0: float,
                              batch: int) -> float:
    """Theory's failure clock in responses: drift_threshold over the mean drift per response.

    Each update takes M x E optimizer steps on minibatches of B / M responses whose drift
    gradient has mean -b and variance c_d M / B per coordinate. Adam's mean step is then
    lr b / (sqrt(c_d M / B + b^2) + eps) (the smooth form: noise-dominated, B << c_d / b^2,
    it is lr b sqrt(B / (M c_d)) and under the sqrt rule N_fail = D* sqrt(c_d b0) / (lr0 b)
    for M = E = 1, whatever B; signal-dominated, sign descent at lr per step and
    N_fail ~ sqrt(B)); SGD's is lr b, heavy ball's lr b / (1 - momentum). Ignores the
    verifier's restoring force (drift_train_scale > 0), clipping and epoch reuse (E > 1
    counts as E fresh steps), and the noise, which makes the first crossing somewhat earlier.
    """
    cfg.prompts(batch)  # batch = P x G with M dividing P, else ValueError
    require_positive("lr0", lr0)
    if cfg.drift_bias == 0:
        return math.inf
    M, b = cfg.n_minibatches(batch), cfg.drift_bias
    lr = opt.lr(lr0, batch)
    if opt.name == "adam":
        eps = companions(opt, batch)[2]
        step = lr * b / (math.sqrt(cfg.drift_noise * M / batch + b * b) + eps)
    elif opt.name == "momentum":
        step = lr * b / (1.0 - opt.momentum)
    else:
        step = lr * b
    return float(cfg.drift_threshold / (cfg.inner_steps(batch) * step) * batch)


def noise_scales(ckpt_b: dict, axis=-1) -> dict:
    """Measured B_simple per direction, {"skill": [...], "drift": [...]} in responses, from one
    batch's checkpoints (e.g. SweepResult.ckpt[i], arrays [L, S, C]): noise and signal
    averaged over `axis` first (inf: no detectable signal). axis=-1 gives one value per run
    [L, S]; a noise-dominated direction's signal is then mostly noise (per-run values scatter
    widely), so pool the seeds too, axis=(-2, -1) -> [L], to report a regime."""
    return {d: noise_scale(ckpt_b[f"noise_{d}"], ckpt_b[f"signal_{d}"], axis=axis)
            for d in ("skill", "drift")}


def adam_noise_step(opt: OptimConfig) -> float:
    """|Adam step| / lr of a noise-dominated coordinate: mu / sqrt(nu) of white-noise gradients
    in steady state, sqrt((1 - beta1) / (1 + beta1)) (0.23 at beta1 = 0.9)."""
    return math.sqrt((1.0 - opt.beta1) / (1.0 + opt.beta1)) if opt.name == "adam" else math.nan


def drift_move_per_batch(cfg: BanditConfig, opt: OptimConfig, lr: float) -> float:
    """Predicted |w_d(after) - w_d(before)| over one rollout batch without clipping, for Adam on
    a noise-dominated drift block: each of the drift_dim coordinates moves adam_noise_step * lr
    per inner step, coherently over the batch's M x E steps (its minibatches recur and Adam's
    first moment carries the direction): M E lr sqrt(drift_dim) sqrt((1 - beta1)/(1 + beta1)).
    That coherence is beta1 0.9's: at M 4, E 2, lr 0.1 the measured move is 0.97 of this at
    beta1 0.9, 0.58 at 0.5 and 0.36 at 0 (64 seeds each)."""
    require_positive("lr", lr)
    return cfg.inner_steps() * lr * math.sqrt(cfg.drift_dim) * adam_noise_step(opt)


# RMS over sampled responses of dw_d . (phi_d(a) - E_pi phi_d) per unit s_tr |dw_d|: the
# sampled responses are mostly the correct ones, whose decorrelated drift features differ from
# the policy's mean by less than one feature scale (measured 0.47-0.60 at B = 64 ... 1024).
LOGRATIO_PER_MOVE = 0.5


def drift_logratio_per_batch(cfg: BanditConfig, opt: OptimConfig, lr: float) -> float:
    """Predicted RMS log-ratio pi_new / pi_behaviour of sampled train responses due to the
    drift block's unclipped movement over one rollout batch: LOGRATIO_PER_MOVE s_tr |dw_d|."""
    return LOGRATIO_PER_MOVE * cfg.drift_train_scale * drift_move_per_batch(cfg, opt, lr)


def clip_binds(cfg: BanditConfig, opt: OptimConfig, lr: float) -> bool:
    """The predicted boundary: cfg's clip of width eps = clip_low (a symmetric band's) binds on
    the drift where the drift's unclipped log-ratio per rollout batch exceeds eps, i.e.
    0.5 s_tr sqrt(D_d) 0.23 M E lr(B) > eps. Never where the band never binds (cfg.clip), nor
    with one inner step per batch (M = E = 1): that step is on-policy, every ratio 1."""
    return (cfg.clip.binds and cfg.inner_steps() > 1
            and drift_logratio_per_batch(cfg, opt, lr) > cfg.clip_low)


def binding_lr(cfg: BanditConfig, opt: OptimConfig, eps: float) -> float:
    """The learning rate above which clipping at eps binds on the drift (the boundary)."""
    require_positive("eps", eps)
    return eps / drift_logratio_per_batch(cfg, opt, 1.0)


# The fraction of the drift's push that the trust region stops once a sample has left the band:
# about the measured clip fraction of nonzero-advantage samples (10-30% in the clipping study).
CLIP_BITE = 0.25

# The least a clip leaves of the drift's move per batch, as a fraction of m_free. The clip is
# one-sided per sample: a sample stops only once its ratio has left the band in the direction
# its advantage pushes, and the samples pushed the other way keep their gradient whatever eps.
# With eps far below one batch's log-ratio the move measured 0.60-0.70 m_free (Adam, beta1 0.9,
# B 64; lr 0.05-0.2, eps 0.01, (M, E) in {(2, 2), (4, 2), (2, 3)}), not the eps-proportional
# cap; plain SGD keeps 0.40-0.74 of its unclipped move there (docs/bandit.md, "The floor").
CLIP_FLOOR = 0.6


def clipped_move_per_batch(cfg: BanditConfig, opt: OptimConfig, lr: float) -> float:
    """The drift's move per rollout batch under cfg's clip of width eps = clip_low (a symmetric
    band's; the flag itself, which 1 - clip.lo is only up to rounding): a soft trust-region cap,
    1 / m = 1 / m_free + 1 / m_cap with m_cap = eps / (0.5 s_tr CLIP_BITE), held above
    CLIP_FLOOR m_free; m_free itself where the band never binds (cfg.clip) or with one inner step
    per batch (M = E = 1), where nothing is clipped. A hard cap (every sample stops once the
    drift's RMS log-ratio reaches eps: m_cap = eps / (0.5 s_tr)) would ignore that only the
    samples past the band with a nonzero advantage stop; it predicts 4x less movement than
    measured at B = 1024, eps 0.2. Without the floor the soft cap under-predicted a narrow
    clip's move by up to 8.4x (eps 0.01). Measured over B 64, lr {0.05, 0.1, 0.2}, eps {0.01,
    ..., 0.5}, (M, E) in {(4, 2), (2, 2), (2, 3)}: the move is 0.96-1.36 times this (64 seeds
    per cell), the band the tests hold it to."""
    free = drift_move_per_batch(cfg, opt, lr)
    if not cfg.clip.binds or cfg.inner_steps() == 1:
        return free
    cap = cfg.clip_low / (LOGRATIO_PER_MOVE * cfg.drift_train_scale * CLIP_BITE)
    return max(1.0 / (1.0 / free + 1.0 / cap), CLIP_FLOOR * free)


def predicted_delay(cfg: BanditConfig, opt: OptimConfig, lr: float) -> float:
    """N_fail(cfg's clip) / N_fail(none) if the drift accumulated at its per-batch move (a
    directed drift): unclipped move / clipped move = 1 + m_free / m_cap, growing with lr(B) / eps
    up to 1 / CLIP_FLOOR; 1 unclipped or with one inner step per batch."""
    return drift_move_per_batch(cfg, opt, lr) / clipped_move_per_batch(cfg, opt, lr)
