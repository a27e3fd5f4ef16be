"""A peer of the policy model (Model 3) written the way a user would with flax.nnx and optax:
the same network (pre-LN decoder, 2 layers, d 64, 4 heads, GELU MLP, learned positions, untied
unembedding) as nnx modules on [N, S, d] arrays, flax's own `nnx.dot_product_attention`, an
autoregressive sampler that runs the whole prefix again at every new token (no key-value cache),
and the GRPO update (the clipped token surrogate, seq_sum aggregation) stepped by
`nnx.Optimizer(optax.adam)` under `nnx.jit`. Only the task (prompts, verifier, advantages)
comes from twoclock.

`pip install -e '.[bench]'` installs flax. `bench_policy.py` times it beside twoclock's rollout
and update; `tests/models/test_policy_peer.py` checks that both compute the same loss and
gradient on the same batch.
"""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from twoclock import objectives as obj
from twoclock.models.policy import task


class Block(nnx.Module):
    def __init__(self, d: int, heads: int, d_mlp: int, rngs: nnx.Rngs):
        self.heads = heads
        self.ln1 = nnx.LayerNorm(d, epsilon=1e-5, rngs=rngs)
        self.qkv = nnx.Linear(d, 3 * d, use_bias=False, rngs=rngs)
        self.out = nnx.Linear(d, d, use_bias=False, rngs=rngs)
        self.ln2 = nnx.LayerNorm(d, epsilon=1e-5, rngs=rngs)
        self.fc1 = nnx.Linear(d, d_mlp, rngs=rngs)
        self.fc2 = nnx.Linear(d_mlp, d, rngs=rngs)

    def __call__(self, x, mask):
        N, S, d = x.shape
        q, k, v = jnp.split(self.qkv(self.ln1(x)), 3, axis=-1)
        q, k, v = (t.reshape(N, S, self.heads, d // self.heads) for t in (q, k, v))
        o = nnx.dot_product_attention(q, k, v, mask=mask)
        x = x + self.out(o.reshape(N, S, d))
        return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))


class Policy(nnx.Module):
    def __init__(self, vocab: int, seq_len: int, d: int = 64, layers: int = 2, heads: int = 4,
                 d_mlp: int = 256, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(vocab, d, rngs=rngs)
        self.pos = nnx.Param(jnp.zeros((seq_len, d)))
        self.blocks = nnx.List([Block(d, heads, d_mlp, rngs) for _ in range(layers)])
        self.ln = nnx.LayerNorm(d, epsilon=1e-5, rngs=rngs)
        self.unembed = nnx.Linear(d, vocab, use_bias=False, rngs=rngs)

    def __call__(self, tok):
        S = tok.shape[1]
        x = self.embed(tok) + self.pos[:S][None]
        mask = nnx.make_causal_mask(tok)
        for b in self.blocks:
            x = b(x, mask)
        return self.unembed(self.ln(x))


def _pairs(m, n_layers: int):
    """(nnx Variable, twoclock's name path) of every parameter."""
    yield m.embed.embedding, ("embed",)
    yield m.pos, ("pos",)
    yield m.ln.scale, ("ln_g",)
    yield m.ln.bias, ("ln_b",)
    yield m.unembed.kernel, ("unembed",)
    for i in range(n_layers):
        b, l = m.blocks[i], f"l{i}"
        for var, name in ((b.ln1.scale, "ln1_g"), (b.ln1.bias, "ln1_b"), (b.ln2.scale, "ln2_g"),
                          (b.ln2.bias, "ln2_b"), (b.qkv.kernel, "wqkv"), (b.out.kernel, "wo"),
                          (b.fc1.kernel, "w1"), (b.fc1.bias, "b1"), (b.fc2.kernel, "w2"),
                          (b.fc2.bias, "b2")):
            yield var, (l, name)


def from_twoclock(params: dict, arch) -> Policy:
    """A Policy holding twoclock's parameters (net.init's dict), name by name."""
    m = Policy(arch.vocab, arch.seq_len, arch.d_model, arch.n_layers, arch.n_heads, arch.d_mlp,
               rngs=nnx.Rngs(0))
    for var, path in _pairs(m, arch.n_layers):
        v = params
        for k in path:
            v = v[k]
        var[...] = v
    return m


def grads_as_twoclock(g, n_layers: int) -> dict:
    """The peer's gradient (an nnx.State of Params, the model's structure) in twoclock's dict
    layout."""
    out: dict = {}
    for var, path in _pairs(g, n_layers):
        (out.setdefault(path[0], {}) if len(path) == 2 else out)[path[-1]] = var[...]
    return out


def answer_logp(model: Policy, prompt, resp):
    """log pi(resp_t | prompt, resp_<t) [B, A], teacher-forced."""
    P, A = prompt.shape[1], resp.shape[1]
    logits = model(jnp.concatenate([prompt, resp[:, :-1]], axis=1))[:, P - 1:P - 1 + A]
    logp = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(logp, resp[..., None], axis=-1)[..., 0]


def grpo_loss(model: Policy, prompt, resp, mask, adv, logp_old, clip: float = 0.2):
    """Minus the clipped token surrogate, seq_sum: sum_i sum_t m_it j_it / (A B)."""
    ratio = jnp.exp(answer_logp(model, prompt, resp) - logp_old)
    a = adv[:, None]
    j = jnp.minimum(ratio * a, jnp.clip(ratio, 1 - clip, 1 + clip) * a)
    return -jnp.sum(mask * j) / (resp.shape[1] * resp.shape[0])


def make_rollout(train, group: int, B: int):
    """rollout(model, key) -> (prompt, resp, mask, adv, logp_old) of B responses on B / G
    prompts drawn from the train pool: each new token from a full forward of the prefix."""
    P = B // group

    @nnx.jit
    def rollout(model, key):
        kp, ks = jax.random.split(key)
        idx = jnp.repeat(jax.random.randint(kp, (P,), 0, train.total.shape[0]), group)
        seq = train.prompt[idx]
        lps = []
        for k in jax.random.split(ks, task.ANSWER_LEN):
            logp = jax.nn.log_softmax(model(seq)[:, -1], axis=-1)
            tok = jax.random.categorical(k, logp, axis=-1).astype(jnp.int32)
            lps.append(jnp.take_along_axis(logp, tok[:, None], axis=-1)[:, 0])
            seq = jnp.concatenate([seq, tok[:, None]], axis=1)
        resp = seq[:, train.prompt.shape[1]:]
        r = task.verify(resp, train.answer[idx], train.n_digits[idx], xp=jnp).astype(jnp.float32)
        adv = obj.advantages(r.reshape(P, group)).reshape(B)
        mask = task.response_mask(resp, jnp).astype(jnp.float32)
        return train.prompt[idx], resp, mask, adv, jax.lax.stop_gradient(jnp.stack(lps, 1))

    return rollout


def make_update(lr: float = 1e-4):
    """(optimizer for a model, update(model, optimizer, batch)): one Adam step on grpo_loss."""
    @nnx.jit
    def update(model, optimizer, batch):
        loss, g = nnx.value_and_grad(grpo_loss)(model, *batch)
        optimizer.update(model, g)
        return loss

    return (lambda model: nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)), update
