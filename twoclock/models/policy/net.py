"""A tiny decoder-only transformer in pure JAX: params are a plain dict pytree.

Pre-layer-norm blocks (causal multi-head attention, GELU MLP), learned positions, an untied
unembedding. `forward` gives teacher-forced logits of whole sequences; `sample` decodes with a
key-value cache under `lax.scan`. Both `answer_logp` and `sample` run a prompt shared by a
group of responses once. Every dense layer runs on 2-D arrays ([N*S, d] @ [d, d']):
XLA's CPU gradients of 3-D contractions are several times slower.
"""
from typing import NamedTuple

import jax
import jax.numpy as jnp


class Arch(NamedTuple):
    vocab: int
    seq_len: int
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_mlp: int = 256


def init(arch: Arch, key) -> dict:
    """Gaussian weights (std 1/sqrt(fan_in); residual outputs also / sqrt(2 n_layers))."""
    d, f, dtype = arch.d_model, arch.d_mlp, jnp.result_type(float)
    keys = iter(jax.random.split(key, 3 + 4 * arch.n_layers))
    normal = lambda shape, std: std * jax.random.normal(next(keys), shape, dtype)
    res = 1.0 / (2 * arch.n_layers) ** 0.5
    p = {"embed": normal((arch.vocab, d), 1.0), "pos": normal((arch.seq_len, d), 0.1),
         "ln_g": jnp.ones((d,), dtype), "ln_b": jnp.zeros((d,), dtype),
         "unembed": normal((d, arch.vocab), d ** -0.5)}
    for i in range(arch.n_layers):
        p[f"l{i}"] = {
            "ln1_g": jnp.ones((d,), dtype), "ln1_b": jnp.zeros((d,), dtype),
            "wqkv": normal((d, 3 * d), d ** -0.5), "wo": normal((d, d), d ** -0.5 * res),
            "ln2_g": jnp.ones((d,), dtype), "ln2_b": jnp.zeros((d,), dtype),
            "w1": normal((d, f), d ** -0.5), "b1": jnp.zeros((f,), dtype),
            "w2": normal((f, d), f ** -0.5 * res), "b2": jnp.zeros((d,), dtype)}
    return p


def n_params(params) -> int:
    return sum(int(v.size) for v in jax.tree_util.tree_leaves(params))


def _ln(x, g, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g[None] + b[None]


def _mlp(lp, x_Rxd):
    return jax.nn.gelu(x_Rxd @ lp["w1"] + lp["b1"][None]) @ lp["w2"] + lp["b2"][None]


def _heads(x_RxD, N, S, H):
    """[N*S, H*dh] -> [N, H, S, dh]."""
    return x_RxD.reshape(N, S, H, -1).transpose(0, 2, 1, 3)


def _embed(params, tok_NxS, start: int = 0):
    S = tok_NxS.shape[1]
    return params["embed"][tok_NxS] + params["pos"][start:start + S][None]


def forward(params, arch: Arch, tok_NxS, return_kv: bool = False, out_from: int = 0):
    """Logits [N, S - out_from, V] of the next token at positions out_from.. (position s sees
    tokens <= s); with return_kv also each layer's keys and values [N, H, S, dh] (the prefill
    of `sample`). The last layer runs its attention output and MLP only where logits are
    asked for: the earlier positions there give keys and values, nothing else."""
    N, S = tok_NxS.shape
    H, d = arch.n_heads, arch.d_model
    x_Rxd = _embed(params, tok_NxS).reshape(N * S, d)
    causal = jnp.tril(jnp.ones((S, S), bool))[None, None]
    kv = []
    for i in range(arch.n_layers):
        lp = params[f"l{i}"]
        qkv = _ln(x_Rxd, lp["ln1_g"], lp["ln1_b"]) @ lp["wqkv"]
        q, k, v = (_heads(t, N, S, H) for t in jnp.split(qkv, 3, axis=-1))
        kv.append((k, v))
        if i == arch.n_layers - 1 and out_from:
            q, causal = q[:, :, out_from:], causal[:, :, out_from:]
            x_Rxd = x_Rxd.reshape(N, S, d)[:, out_from:].reshape(-1, d)
        s_NxHxSxS = jnp.einsum("nhsd,nhtd->nhst", q, k) * (d // H) ** -0.5
        a = jax.nn.softmax(jnp.where(causal, s_NxHxSxS, -1e30), axis=-1)
        o = jnp.einsum("nhst,nhtd->nhsd", a, v).transpose(0, 2, 1, 3).reshape(-1, d)
        x_Rxd = x_Rxd + o @ lp["wo"]
        x_Rxd = x_Rxd + _mlp(lp, _ln(x_Rxd, lp["ln2_g"], lp["ln2_b"]))
    logits = _ln(x_Rxd, params["ln_g"], params["ln_b"]) @ params["unembed"]
    logits = logits.reshape(N, S - out_from, -1)
    return (logits, kv) if return_kv else logits


def answer_logp(params, arch: Arch, prompt_QxP, answer_NxA, full: bool = False):
    """Teacher-forced log-probabilities [N, A, V] of each answer position's next token. Each of
    the Q prompts is answered by N / Q consecutive rows of answer_NxA (Q = N: one each), and
    its positions run once for all of them: a GRPO group shares its prompt's keys, values and
    first-token logits, which is most of a short response's work. full (Q = N only): every
    position through the whole last layer, the form the warm-up trains with (its cached and
    published weights are that form's, bit for bit)."""
    Q, P = prompt_QxP.shape
    N, A = answer_NxA.shape
    if N % Q:
        raise ValueError(f"answer rows N = {N} must be a multiple of prompt rows Q = {Q}")
    if Q == N:
        seq = jnp.concatenate([prompt_QxP, answer_NxA[:, :-1]], axis=1)
        if full:
            logits = forward(params, arch, seq)[:, P - 1:P - 1 + A]
        else:
            logits = forward(params, arch, seq, out_from=P - 1)
        return jax.nn.log_softmax(logits, axis=-1)
    G, T = N // Q, A - 1
    H, d = arch.n_heads, arch.d_model
    logits_Qx1xV, kv = forward(params, arch, prompt_QxP, return_kv=True, out_from=P - 1)
    x_Rxd = _embed(params, answer_NxA[:, :-1], start=P).reshape(N * T, d)
    causal = jnp.tril(jnp.ones((T, T), bool))[None, None]
    scale = (d // H) ** -0.5
    for i, (k_QxHxPxh, v_QxHxPxh) in enumerate(kv):
        lp = params[f"l{i}"]
        qkv = _ln(x_Rxd, lp["ln1_g"], lp["ln1_b"]) @ lp["wqkv"]
        q, k, v = (_heads(t, N, T, H) for t in jnp.split(qkv, 3, axis=-1))
        q_QxGxHxTxh = q.reshape(Q, G, H, T, -1)
        # scores against the group's shared prompt keys, then the answer's own (causal)
        s_p = jnp.einsum("qghtd,qhsd->qghts", q_QxGxHxTxh, k_QxHxPxh).reshape(N, H, T, P)
        s_a = jnp.where(causal, jnp.einsum("nhtd,nhsd->nhts", q, k), -1e30)
        a = jax.nn.softmax(jnp.concatenate([s_p, s_a], axis=-1) * scale, axis=-1)
        o_p = jnp.einsum("qghts,qhsd->qghtd", a[..., :P].reshape(Q, G, H, T, P), v_QxHxPxh)
        o = o_p.reshape(N, H, T, -1) + jnp.einsum("nhts,nhsd->nhtd", a[..., P:], v)
        x_Rxd = x_Rxd + o.transpose(0, 2, 1, 3).reshape(N * T, d) @ lp["wo"]
        x_Rxd = x_Rxd + _mlp(lp, _ln(x_Rxd, lp["ln2_g"], lp["ln2_b"]))
    logits = (_ln(x_Rxd, params["ln_g"], params["ln_b"]) @ params["unembed"]).reshape(N, T, -1)
    first_NxV = jnp.repeat(logits_Qx1xV[:, 0], G, axis=0)
    return jax.nn.log_softmax(jnp.concatenate([first_NxV[:, None], logits], axis=1), axis=-1)


def _decode_step(params, arch: Arch, cache, tok_N, pos):
    """Logits [N, V] after feeding tok_N at position pos, and the cache with its keys/values."""
    N, H, d = tok_N.shape[0], arch.n_heads, arch.d_model
    x = params["embed"][tok_N] + jax.lax.dynamic_index_in_dim(params["pos"], pos, 0, True)
    new = []
    S = cache[0][0].shape[2]
    seen = (jnp.arange(S) <= pos)[None, None]
    for i in range(arch.n_layers):
        lp = params[f"l{i}"]
        qkv = _ln(x, lp["ln1_g"], lp["ln1_b"]) @ lp["wqkv"]
        q, k, v = (t.reshape(N, H, -1) for t in jnp.split(qkv, 3, axis=-1))
        ck = jax.lax.dynamic_update_index_in_dim(cache[i][0], k, pos, axis=2)
        cv = jax.lax.dynamic_update_index_in_dim(cache[i][1], v, pos, axis=2)
        new.append((ck, cv))
        s_NxHxS = jnp.einsum("nhd,nhsd->nhs", q, ck) * (d // H) ** -0.5
        a = jax.nn.softmax(jnp.where(seen, s_NxHxS, -1e30), axis=-1)
        x = x + jnp.einsum("nhs,nhsd->nhd", a, cv).reshape(N, d) @ lp["wo"]
        x = x + _mlp(lp, _ln(x, lp["ln2_g"], lp["ln2_b"]))
    return _ln(x, params["ln_g"], params["ln_b"]) @ params["unembed"], new


def sample(params, arch: Arch, prompt_QxP, n_new: int, key, per_prompt: int = 1):
    """Sampled continuations (tokens int32 [N, n_new], their log-probabilities [N, n_new]),
    N = Q per_prompt, each prompt's per_prompt consecutive rows: a prefill forward over each
    prompt once, then n_new - 1 cached decode steps under lax.scan. Step j's tokens are
    jax.random.categorical(split(key, n_new)[j], logits [N, V])."""
    Q, P = prompt_QxP.shape
    logits, kv = forward(params, arch, prompt_QxP, return_kv=True, out_from=P - 1)
    S = P + n_new - 1  # the last sampled token is never fed back
    rep = lambda t: jnp.repeat(t, per_prompt, axis=0) if per_prompt > 1 else t
    logits, kv = rep(logits[:, -1]), [(rep(k), rep(v)) for k, v in kv]
    pad = lambda t: jnp.pad(t, ((0, 0), (0, 0), (0, S - P), (0, 0)))
    cache = [(pad(k), pad(v)) for k, v in kv]
    keys = jax.random.split(key, n_new)

    def draw(logits_NxV, k):
        logp = jax.nn.log_softmax(logits_NxV, axis=-1)
        tok = jax.random.categorical(k, logp, axis=-1).astype(jnp.int32)
        return tok, jnp.take_along_axis(logp, tok[:, None], axis=-1)[:, 0]

    def step(carry, xs):
        cache, logits_NxV = carry
        k, pos = xs
        tok, lp = draw(logits_NxV, k)
        logits_NxV, cache = _decode_step(params, arch, cache, tok, pos)
        return (cache, logits_NxV), (tok, lp)

    (_, last), (tok_JxN, lp_JxN) = jax.lax.scan(
        step, (cache, logits), (keys[:-1], P + jnp.arange(n_new - 1)))
    tok_N, lp_N = draw(last, keys[-1])
    return (jnp.concatenate([tok_JxN.T, tok_N[:, None]], axis=1),
            jnp.concatenate([lp_JxN.T, lp_N[:, None]], axis=1))
