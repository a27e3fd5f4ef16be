"""The progress clock as a first passage: the median over seeds of the first t with L_t <= target.

For SGD and heavy-ball momentum every eigen-coordinate x_t is Gaussian, with mean m_t, variance
V_t and lag-one covariance C_t = Cov(x_t, x_{t-1}) given exactly by the linear recursion, so
L_t = sum_i l_i, l_i = w_i x_{i,t}^2 (w = h/2), has known cumulants, cumulant generating function
K(theta) = sum_i [-1/2 log(1 - 2 theta w V) + theta w m^2 / (1 - 2 theta w V)] and covariance
at every lag (each l_i is a vector AR(1): Cov(l_{t+k}, l_t) = H^T (A (x) A)^k P_t H).

median_steps (SGD, momentum), two approximations (docs/theory.md measures them):
1. marginal: u_t = Phi^-1(P(L_t <= target)) at the saddle point (Barndorff-Nielsen's r*);
2. crossing: Z_t is a sum of Gaussian vector AR(1) components (coordinates binned by curvature)
   with the loss's exact lag structure, weighted by their share of Var(L) under half the
   saddle-point tilt (TILT); P(no crossing by t) by assumed-density filtering of the components
   given no crossing so far, in the family of Gaussians truncated to Z_t > u_t.
median_from_moments (mean-field Adam): a three-cumulant gamma marginal and a lag-one Markov
Gaussian copula, hazard_t = P(Z_t <= u_t, Z_{t-1} > u_{t-1}) / P(Z_{t-1} > u_{t-1}).
The median first passage is the first t with P(not crossed by t) <= 1/2. Nothing is sampled.
"""
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from twoclock.config import OptimConfig, require, require_int
from twoclock.models.quadratic.config import QuadraticConfig
from twoclock.models.quadratic.copula import adf_log_stay, adf_start
from twoclock.models.quadratic.gaussian import upper_lower
from twoclock.models.quadratic.moments import _require_linear
from twoclock.models.quadratic.problem import initial_loss, initial_offset, noise_variances, \
    rotation, spectrum

_BLOCK = 64  # updates per scan block between checks that every lane has its median
_CHUNK = 1024  # rows per compiled hazard evaluation
_BINS = 8  # AR(1) components of the copula (coordinates binned by log curvature)
_NEWTON = 8  # Newton steps of the saddle point per update (from the previous update's)
SLOTS = 8  # lanes advanced together; a finished lane's slot takes the next one
TILT = 0.5  # the copula's share of the saddle-point tilt (docs/theory.md measures it)


def _quantile_z(mean, k2, k3, x):
    """Phi^-1(P(L <= x)) for a shifted gamma with cumulants (mean, k2, k3), by the
    Wilson-Hilferty cube root (normal when nearly symmetric)."""
    sd = jnp.sqrt(k2)
    skew = jnp.maximum(k3 / jnp.maximum(k2, 1e-300) ** 1.5, 1e-6)
    shape = 4.0 / skew**2
    scale = skew * sd / 2.0
    g = jnp.maximum((x - (mean - shape * scale)) / (shape * scale), 0.0)  # gamma / its mean
    return (jnp.cbrt(g) - (1.0 - 1.0 / (9.0 * shape))) * jnp.sqrt(9.0 * shape)


def _loss_stats(w, m, V, m_prev, V_prev, C):
    """(mean, k2, k3, lag-one correlation) of L_t from coordinate moments (last axis summed)."""
    mean = jnp.sum(w * (m**2 + V), axis=-1)
    k2 = 2.0 * jnp.sum(w**2 * (V**2 + 2.0 * m**2 * V), axis=-1)
    k3 = 8.0 * jnp.sum(w**3 * (V**3 + 3.0 * m**2 * V**2), axis=-1)
    k2_prev = 2.0 * jnp.sum(w**2 * (V_prev**2 + 2.0 * m_prev**2 * V_prev), axis=-1)
    cov = jnp.sum(w**2 * (2.0 * C**2 + 4.0 * m * m_prev * C), axis=-1)
    rho = jnp.where(k2_prev > 0, cov / jnp.sqrt(jnp.maximum(k2 * k2_prev, 1e-300)), 0.0)
    return mean, k2, k3, rho


def _log_no_cross(stats, u_prev, target):
    """(u_t, log(1 - hazard_t)) of the Markov copula; u_prev = -inf at t = 1."""
    mean, k2, k3, rho = stats
    u = jnp.clip(_quantile_z(mean, k2, k3, target), -37.0, 8.2)
    p = ndtr(u)
    first = ~jnp.isfinite(u_prev)  # t = 1: the start is deterministic, above the target
    joint = upper_lower(jnp.where(first, 0.0, u_prev), u, rho)
    haz = jnp.where(first, p, joint / jnp.maximum(ndtr(-u_prev), 1e-300))
    return u, jnp.log1p(-jnp.clip(haz, 0.0, 1.0 - 1e-16))


def _log_stay(h, m, V, C, target, u0):
    """(log(1 - hazard_t) for t = 1..T, u_T) from rows 0..T of the coordinate moments; u0 is
    u at row 0 (-inf at the deterministic start)."""
    w = h[None, :] / 2.0
    stats = _loss_stats(w, m[1:], V[1:], m[:-1], V[:-1], C[1:])
    u, _ = _log_no_cross(stats, jnp.full(m.shape[0] - 1, -jnp.inf), target)
    u_prev = jnp.concatenate([u0[None], u[:-1]])
    return _log_no_cross(stats, u_prev, target)[1], u


_log_stay_jit = jax.jit(_log_stay)


def median_from_moments(h, m_TxD, V_TxD, C_TxD, target: float, extrapolate: bool = False):
    """Median first-passage step (1-based; 0 if beyond T) of L_t = 1/2 sum h x_t^2 with x_t
    Gaussian: m_TxD, V_TxD the means and variances of x_1..x_T, C_TxD = Cov(x_t, x_{t-1}),
    the start x_0 = m_0 deterministic is row 0 of m_TxD (so T + 1 rows of m, V, C).
    extrapolate: past T the hazard stays at its last value (a stationary loss), so the median
    is found in closed form (a float) if the survival has not yet reached 1/2."""
    stream = PassageStream(h, target)
    for row in zip(m_TxD, V_TxD, C_TxD):
        stream.add(*row)
    return stream.median(extrapolate)


ROW_ELEMENTS = 2**22  # a chunk of rows holds at most this many numbers per moment (32 MiB)


class PassageStream:
    """median_from_moments fed one row (m, V, C of x_t, [D] each) at a time, holding at most
    one chunk of rows: memory ~3 chunk D floats, whatever the length of the path. Chunks
    are _CHUNK rows, fewer where D is large (ROW_ELEMENTS); each row's hazard depends on the
    chunking only through the u carried over, so the result is that of one long array."""

    def __init__(self, h, target: float):
        self.h, self.target = np.asarray(h, np.float64), target
        self.chunk = max(16, min(_CHUNK, ROW_ELEMENTS // max(int(np.size(h)), 1)))
        self.rows, self.parts, self.u = [], [], -np.inf

    def add(self, m, V, C) -> None:
        self.rows.append((m, V, C))
        if len(self.rows) == self.chunk + 1:
            self._evaluate()

    def _evaluate(self) -> None:
        n = len(self.rows) - 1  # rows 1..n are new; row 0 was the last chunk's last
        pad = self.rows + [self.rows[-1]] * (self.chunk + 1 - len(self.rows))
        m, V, C = (np.stack([np.asarray(r[k], np.float64) for r in pad]) for k in range(3))
        with jax.enable_x64(True):  # one compilation for every length
            part, u_all = _log_stay_jit(jnp.asarray(self.h), m, V, C, self.target,
                                        jnp.asarray(self.u))
            self.parts.append(np.asarray(part)[:n])
            self.u = float(u_all[-1])
        self.rows = self.rows[-1:]

    def median(self, extrapolate: bool = False):
        """median_from_moments of the rows added so far."""
        if len(self.rows) > 1:
            self._evaluate()
        if not self.parts:
            return 0
        log_stay = np.concatenate(self.parts)
        log_surv = np.cumsum(log_stay)
        done = log_surv <= np.log(0.5)
        if done.any():
            return int(np.argmax(done)) + 1
        if extrapolate and log_stay[-1] < 0:
            T = log_surv.size
            return T + int(np.ceil((np.log(0.5) - log_surv[-1]) / float(log_stay[-1])))
        return 0


def _saddle(w, m, V, target, tilt, th):
    """(u_N, p_ND, theta_N) at the saddle point K'(theta) = target of L = sum w x^2:
    u = Phi^-1(P(L <= target)) by Barndorff-Nielsen's r* = r + log(v / r) / r (r the signed
    root of the likelihood ratio, v = theta sqrt(K'')); p each coordinate's share of Var(L)
    under the tilt tilt * theta, normalised to sum 1. th_N is the previous update's theta
    (Newton's start). Where the saddle point is not solved (a target far above E[L]) or
    theta ~ 0 (r* is 0/0 there), u falls back to the cube-root gamma."""
    wV = w * V
    th_max = 0.45 / jnp.maximum(jnp.max(wV, axis=1), 1e-300)  # keeps 1 - 2 theta w V >= 0.1

    def kprime(th):
        d = 1.0 - 2.0 * th[:, None] * wV
        f = jnp.sum(wV / d + w * m * m / d**2, axis=1) - target
        df = jnp.sum(2.0 * wV**2 / d**2 + 4.0 * w * wV * m * m / d**3, axis=1)
        return f, df

    def newton(th, _):  # K' is increasing and convex: Newton settles monotonically
        f, df = kprime(th)
        return jnp.minimum(th - f / jnp.maximum(df, 1e-300), th_max), None

    th = jax.lax.scan(newton, jnp.minimum(th, th_max), None, length=_NEWTON, unroll=True)[0]
    f, k2 = kprime(th)
    d = 1.0 - 2.0 * th[:, None] * wV
    K = jnp.sum(-0.5 * jnp.log(d) + th[:, None] * w * m * m / d, axis=1)
    r = jnp.sign(th) * jnp.sqrt(jnp.maximum(2.0 * (th * target - K), 0.0))
    v = th * jnp.sqrt(k2)
    ok = (jnp.abs(f) <= 1e-9 * target) & (jnp.abs(r) > 1e-3) & (v / r > 0)
    mean = jnp.sum(w * (m * m + V), axis=1)
    k3 = 8.0 * jnp.sum(w**3 * (V**3 + 3.0 * m**2 * V**2), axis=1)
    k2_0 = 2.0 * jnp.sum(w**2 * (V**2 + 2.0 * m**2 * V), axis=1)
    wh = _quantile_z(mean, k2_0, k3, target)
    r_safe = jnp.where(ok, r, 1.0)
    u = jnp.where(ok, r_safe + jnp.log(jnp.where(ok, v / r_safe, 1.0)) / r_safe, wh)
    dt = 1.0 - 2.0 * tilt * th[:, None] * wV
    k2_D = 2.0 * wV**2 / dt**2 + 4.0 * w * wV * m * m / dt**3
    p = k2_D / jnp.maximum(jnp.sum(k2_D, axis=1, keepdims=True), 1e-300)
    return jnp.clip(u, -37.0, 8.2), p, th


def _pool(update, init, params, n, T):
    """Median first-passage step of lanes 0..n-1 (0 if P(crossed) < 1/2 through T), [n] float64,
    through W slots (init's leading size): a slot whose lane is done takes the next lane, so the
    cost is the sum of the medians, not n times the longest. update(state, p) -> (state,
    log(1 - hazard_t), u_t); p: the slots' rows of params (leaves [n + 1, ...], row n for idle
    slots). Each lane's arithmetic is its own: the result depends on neither W nor order."""
    W = jax.tree_util.tree_leaves(init)[0].shape[0]
    zW = jnp.zeros(W)

    def step(s, _):
        state, log_surv, t, med, j, nxt, out = s
        state, log_stay, u = update(state, jax.tree_util.tree_map(lambda x: x[j], params))
        log_surv, t = log_surv + log_stay, t + 1.0
        # crossed by t at least when L_t <= target: P(crossed) >= P(L_t <= target) = Phi(u_t)
        crossed = (log_surv <= jnp.log(0.5)) | (u >= 0.0)
        med = jnp.where((med == 0) & crossed & (t <= T), t, med)
        done = (med > 0) | (t >= T)
        out = out.at[jnp.where(done, j, n)].set(med)
        j = jnp.where(done, jnp.minimum(nxt + jnp.cumsum(done) - 1, n), j)
        nxt = nxt + jnp.sum(done)
        reset = lambda x, x0: jnp.where(done.reshape((W,) + (1,) * (x.ndim - 1)), x0, x)
        state = jax.tree_util.tree_map(reset, state, init)
        log_surv, t, med = (jnp.where(done, 0.0, x) for x in (log_surv, t, med))
        return (state, log_surv, t, med, j, nxt, out), None

    def block(s):
        return jax.lax.scan(step, s, None, length=_BLOCK)[0]

    def cond(s):
        return jnp.any(s[4] < n)

    init_s = (init, zW, zW, zW, jnp.arange(W), jnp.asarray(W), jnp.zeros(n + 1))
    return jax.lax.while_loop(cond, block, init_s)[-1][:n]


def _lanes(x):  # [n, ...] lane parameters -> [n + 1, ...], the last row a copy for idle slots
    return jnp.concatenate([x, x[-1:]])


def _median_passage_sgd(h, c, e0, lr, batch, P_DxK, target, T, tilt, W):
    """Median first-passage step per SGD lane (0 if P(crossed) < 1/2 through T), [N] float64:
    each coordinate's loss is a scalar AR(1) with coefficient a^2. h, c, e0 [D]; lr, batch [N]."""
    N, K, D = lr.shape[0], P_DxK.shape[1], h.shape[0]
    w_D = h[None, :] / 2.0
    a = _lanes(1.0 - lr[:, None] * h[None, :])
    q = _lanes(lr[:, None] ** 2 * c[None, :] / batch[:, None])

    def update(s, p):
        m, V, p_prev, th, adf = s
        a, q = p
        m_new, V_new = a * m, a * a * V + q
        u, p, th = _saddle(w_D, m_new, V_new, target, tilt, th)
        # a coordinate's loss w x^2 has lag-one regression a^2 (Cov = a^2 Var(l_{t-1}), exact)
        bins = lambda x: (x @ P_DxK)[..., None, None]
        log_stay, adf = adf_log_stay(bins(p), bins(a * a * p_prev), bins(p_prev), u, adf)
        return (m_new, V_new, p, th, adf), log_stay, u

    z, zW = jnp.zeros((W, D)), jnp.zeros(W)
    adf0 = adf_start(W, K, 1)
    init = (jnp.broadcast_to(e0[None, :], z.shape), z, z, zW, adf0)
    return _pool(update, init, (a, q), N, T)


_median_sgd_jit = jax.jit(_median_passage_sgd, static_argnames="W")

# orthonormal basis of symmetric 2 x 2 tensors inside R^2 (x) R^2: e1e1, (e1e2 + e2e1)/sqrt 2, e2e2
_SYM = np.array([[1.0, 0, 0], [0, 0.5**0.5, 0], [0, 0.5**0.5, 0], [0, 0, 1.0]])


def _sym_kron(x, y):
    """X (x) Y + Y (x) X on the symmetric tensors for symmetric 2 x 2 X, Y given as their
    entries (x11, x12, x22), each [N, D]: the 6 entries (11, 12, 13, 22, 23, 33), each [N, D]."""
    r = 2.0**0.5
    return (2.0 * x[0] * y[0], r * (x[0] * y[1] + x[1] * y[0]), 2.0 * x[1] * y[1],
            x[0] * y[2] + x[2] * y[0] + 2.0 * x[1] * y[1], r * (x[1] * y[2] + x[2] * y[1]),
            2.0 * x[2] * y[2])


_SYM_INDEX = ((0, 1, 2), (1, 3, 4), (2, 4, 5))  # entry (i, j) of a symmetric 3 x 3 in the 6


def _median_passage_momentum(h, c, e0, lr, batch, mu, P_DxK, target, T, tilt, W):
    """The momentum lanes' median first passage with the multi-lag copula.

    A coordinate's state X_t = (x_t, x_{t-1}) moves by A = [[a, -mu], [1, 0]], so its loss
    w x_t^2 has Cov(l_{t+k}, l_t) = H^T (A (x) A)^k P_t H exactly, H = e1 (x) e1, with
    P_t = w^2 (2 S (x) S + 2 (M M^T (x) S + S (x) M M^T)) (S, M the covariance and mean of X_t):
    a 3-dimensional vector AR(1) on the symmetric tensors (the oscillation of complex roots
    included). Per coordinate everything is kept as [N, D] arrays of matrix entries (XLA fuses
    them); the bins are [W, K, 3, 3]."""
    N, K, D = lr.shape[0], P_DxK.shape[1], h.shape[0]
    w_D = h[None, :] / 2.0
    a = _lanes(1.0 + mu - lr[:, None] * h[None, :])
    q = _lanes(lr[:, None] ** 2 * c[None, :] / batch[:, None])
    A = jnp.stack([jnp.stack([a, jnp.full_like(a, -mu)], -1),
                   jnp.stack([jnp.ones_like(a), jnp.zeros_like(a)], -1)], -2)  # [N, D, 2, 2]
    AA = jnp.einsum("...ij,...kl->...ikjl", A, A).reshape(a.shape + (4, 4))
    Phi = jnp.einsum("ia,ndij,jb->ndab", _SYM, AA, _SYM)  # [N + 1, D, 3, 3]

    def bins(entries, idx):  # [W, D] entries -> [W, K, 3, 3]
        b = [x @ P_DxK for x in entries]
        return jnp.stack([jnp.stack([b[idx[i][j]] for j in range(3)], -1) for i in range(3)],
                         -2)

    def update(s, p):
        m, m_prev, V, V_prev, C, P_prev, scale_prev, th, adf = s
        a, q, Phi = p
        Phi = [[Phi[..., i, j] for j in range(3)] for i in range(3)]
        m_new = a * m - mu * m_prev
        V_new = a * a * V + mu * mu * V_prev - 2.0 * a * mu * C + q
        C_new = a * V - mu * C
        u, p, th = _saddle(w_D, m_new, V_new, target, tilt, th)
        S, MM = (V_new, C_new, V), (m_new * m_new, m_new * m, m * m)
        P = [0.5 * x + y for x, y in zip(_sym_kron(S, S), _sym_kron(MM, S))]  # P / (2 w^2)
        scale = p / jnp.maximum(P[0], 1e-300)  # Var(l_i) -> its share p_i
        P = tuple(x * scale for x in P)
        Pp = [[P_prev[_SYM_INDEX[i][j]] for j in range(3)] for i in range(3)]
        PhiP = [sum(Phi[i][k] * Pp[k][j] for k in range(3)) for i in range(3) for j in range(3)]
        # Cov(y_t, y_{t-1}) of the process y_t = sqrt(scale_t) vec_t: a valid joint covariance
        # (Phi P_prev alone made shrinking shares inflate Var(Z) through the innovation's clip)
        ratio = jnp.sqrt(scale / jnp.where(scale_prev > 0, scale_prev, 1.0))
        PhiP = [x * jnp.where(scale_prev > 0, ratio, 0.0) for x in PhiP]
        nine = ((0, 1, 2), (3, 4, 5), (6, 7, 8))
        log_stay, adf = adf_log_stay(bins(P, _SYM_INDEX), bins(PhiP, nine),
                                      bins(P_prev, _SYM_INDEX), u, adf)
        return (m_new, m, V_new, V, C_new, P, scale, th, adf), log_stay, u

    z, zW = jnp.zeros((W, D)), jnp.zeros(W)
    m0 = jnp.broadcast_to(e0[None, :], z.shape)
    adf0 = adf_start(W, K, 3)
    init = (m0, m0, z, z, z, (z,) * 6, z, zW, adf0)
    return _pool(update, init, (a, q, Phi), N, T)


_median_momentum_jit = jax.jit(_median_passage_momentum, static_argnames="W")


def _rate_bins(h) -> np.ndarray:
    """P_DxK: coordinates grouped into K <= _BINS bins of equal width in log h (SGD's rates
    1 - lr h are ordered as h, so one grouping serves every lane)."""
    lh = np.log(np.asarray(h, np.float64))
    K = min(lh.size, _BINS)
    edges = np.linspace(lh.min(), lh.max() + 1e-9, K + 1)
    idx = np.clip(np.searchsorted(edges, lh, side="right") - 1, 0, K - 1)
    return np.eye(K)[idx]


def _eig_offset0(cfg: QuadraticConfig) -> np.ndarray:
    x0 = initial_offset(cfg)
    q = rotation(cfg)
    return x0 if q is None else q.T @ x0


def median_steps_many(cfg: QuadraticConfig, opt: OptimConfig, batches, lrs,
                      max_steps: int, tilt: float = TILT) -> np.ndarray:
    """Median first-passage update of the noisy loss to target * L0 for arrays of batches and lrs
    (broadcast); int64 of the broadcast shape, 0 where the median lies beyond max_steps.
    tilt: 0 weighs the copula's components by their share of Var(L), 1 by their share under
    the law tilted to put E[L] at the target."""
    mu = _require_linear(opt)
    require_int("max_steps", max_steps)
    require(np.all(np.asarray(lrs) > 0), "lr", "> 0", lrs)
    require(np.all(np.asarray(batches) >= 1), "batch", ">= 1", batches)
    require(0 <= tilt <= 1, "tilt", "in [0, 1]", tilt)
    b, l = np.broadcast_arrays(np.asarray(batches, np.float64), np.asarray(lrs, np.float64))
    h = spectrum(cfg)
    args = (jnp.asarray(h), jnp.asarray(noise_variances(cfg)), jnp.asarray(_eig_offset0(cfg)),
            jnp.asarray(l.reshape(-1)), jnp.asarray(b.reshape(-1)))
    with jax.enable_x64(True):
        if mu == 0:
            out = _median_sgd_jit(*args, jnp.asarray(_rate_bins(h)),
                                  cfg.target * initial_loss(cfg), float(max_steps), float(tilt),
                                  W=min(b.size, SLOTS))
        else:
            out = _median_momentum_jit(*args, mu, jnp.asarray(_rate_bins(h)),
                                       cfg.target * initial_loss(cfg), float(max_steps),
                                       float(tilt), W=min(b.size, SLOTS))
        return np.asarray(out).astype(np.int64).reshape(b.shape)


def median_steps(cfg: QuadraticConfig, opt: OptimConfig, batch, lr, max_steps: int,
                 tilt: float = TILT) -> int:
    """Median over seeds of the first update with L_t <= target * L0 (0 if beyond max_steps)."""
    return int(median_steps_many(cfg, opt, batch, lr, max_steps, tilt))
