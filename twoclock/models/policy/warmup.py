"""The supervised warm-up: the reference policy that GRPO starts from, trained once per config.

Cross-entropy on the train pool's answers with noisy labels (each minibatch redraws them: with
probability warmup_noise a wrong sum, and END_B with probability warmup_end_b), Adam, until the
exact held-out accuracy first reaches warmup_acc at an evaluation (every warmup_eval_every
steps) or warmup_steps run out. The noise keeps the policy uncertain (token entropy ~1 nat or
more): a sharp start gives GRPO groups whose rewards are all equal, and nothing to learn from.

Deterministic given its config (its fields below). The params are cached as an .npz under
`cache_dir()` named by a sha256 of those fields, and reloaded by later runs.
"""
import hashlib
import io
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.models.policy import evaluate, net, task

VERSION = 1  # bump when the warm-up's code changes its result
CACHE_ENV = "TWOCLOCK_POLICY_CACHE"
FIELDS = ("n_train", "n_test", "pool_seed", "d_model", "n_layers", "n_heads", "d_mlp",
          "warmup_noise", "warmup_end_b", "warmup_lr", "warmup_batch", "warmup_steps",
          "warmup_acc", "warmup_eval_every", "warmup_seed")


def cache_dir() -> str:
    """$TWOCLOCK_POLICY_CACHE, else results/store/policy_warmup under the working directory."""
    return os.environ.get(CACHE_ENV) or os.path.join("results", "store", "policy_warmup")


def warmup_config(cfg) -> dict:
    return {"version": VERSION, **{f: getattr(cfg, f) for f in FIELDS}}


def key_of(cfg) -> str:
    blob = json.dumps(warmup_config(cfg), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def arch_of(cfg) -> net.Arch:
    return net.Arch(task.VOCAB, task.SEQ_LEN, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_mlp)


def train(cfg, log=None) -> tuple:
    """(params as a dict of NumPy arrays, info {steps, acc, entropy, ...}): the warm-up itself."""
    arch = arch_of(cfg)
    train_pool, test_pool, _ = task.make_pools(cfg.n_train, cfg.n_test, cfg.pool_seed)
    test_j = evaluate.as_jax(test_pool)
    params = net.init(arch, jax.random.PRNGKey(cfg.warmup_seed))
    tx = optax.adam(cfg.warmup_lr)
    state = tx.init(params)
    rng = np.random.default_rng(cfg.warmup_seed)

    def loss(p, prompt, lab, nd):
        logp = net.answer_logp(p, arch, prompt, lab)
        tok = jnp.take_along_axis(logp, lab[..., None], axis=-1)[..., 0]
        mask = (jnp.arange(task.ANSWER_LEN)[None] <= nd[:, None]).astype(tok.dtype)
        return -jnp.sum(tok * mask) / jnp.sum(mask)

    @jax.jit
    def step(p, s, prompt, lab, nd):
        val, g = jax.value_and_grad(loss)(p, prompt, lab, nd)
        upd, s = tx.update(g, s, p)
        return optax.apply_updates(p, upd), s, val

    stats_fn = jax.jit(lambda p: evaluate.pool_stats(p, arch, test_j))
    n, done, st = cfg.n_train, 0, None
    while done < cfg.warmup_steps:
        idx = rng.integers(0, n, cfg.warmup_batch)
        sub = task.Pool(*(v[idx] for v in train_pool))
        lab, nd = task.noisy_labels(sub, cfg.warmup_noise, cfg.warmup_end_b, rng)
        params, state, val = step(params, state, sub.prompt, lab, nd)
        done += 1
        if done % cfg.warmup_eval_every == 0 or done == cfg.warmup_steps:
            st = {k: float(v) for k, v in stats_fn(params).items()}
            if log:
                log(f"warm-up step {done}: loss {float(val):.3f} held-out acc {st['acc']:.3f} "
                    f"entropy {st['entropy']:.3f}")
            if st["acc"] >= cfg.warmup_acc:
                break
    info = {"steps": done, "heldout_acc": st["acc"], "entropy": st["entropy"],
            "null": st["null"], "n_params": net.n_params(params)}
    return {k: np.asarray(v) for k, v in flatten(params).items()}, info


def flatten(params, prefix="") -> dict:
    out = {}
    for k, v in params.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}/"))
        else:
            out[prefix + k] = v
    return out


def unflatten(flat: dict) -> dict:
    out = {}
    for k, v in flat.items():
        *path, leaf = k.split("/")
        d = out
        for p in path:
            d = d.setdefault(p, {})
        d[leaf] = v
    return out


def load_or_train(cfg, log=None) -> tuple:
    """(params pytree of jnp arrays in the default float type, info): from the cache if there,
    else trained and written there (atomically: a temporary file, then os.replace)."""
    path = os.path.join(cache_dir(), key_of(cfg) + ".npz")
    if os.path.exists(path):
        with np.load(path) as z:
            flat = {k: z[k] for k in z.files if k != "__info__"}
            info = json.loads(str(z["__info__"]))
    else:
        flat, info = train(cfg, log)
        info["config"] = warmup_config(cfg)
        buf = io.BytesIO()
        np.savez(buf, __info__=np.asarray(json.dumps(info)), **flat)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(buf.getvalue())
        os.replace(tmp, path)
    dtype = jnp.result_type(float)
    # cast by NumPy: a float64 -> float32 cast by JAX would compile a program
    return unflatten({k: jnp.asarray(np.asarray(v, dtype)) for k, v in flat.items()}), info
