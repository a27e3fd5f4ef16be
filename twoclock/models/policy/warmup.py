"""The supervised warm-up: the reference policy that GRPO starts from, trained once per config.

Cross-entropy on the train pool's answers with noisy labels (each minibatch redraws them: with
probability warmup.noise a wrong sum, and END_B with probability warmup.end_b), Adam, until the
exact held-out accuracy first reaches warmup.acc at an evaluation (every warmup.eval_every
steps) or warmup.steps run out. The noise keeps the policy uncertain (token entropy ~1 nat or
more): a sharp start gives GRPO groups whose rewards are all equal, and nothing to learn from.

Deterministic given the network, the pools and its `WarmupConfig` (`identity`). `prepare`
loads or trains it where the caller sees it (the engine calls it, through `Model.prepare`,
after a sweep's memory check and before it compiles); `ready` is what this process prepared.
The params are cached as <folder>/<key>.npz, key a sha256 of the identity; the folder follows
the one cache rule (`twoclock.atomic.cache_dir`): $TWOCLOCK_POLICY_CACHE, else
<store root>/policy_warmup, and no cache without a store. As the store's chunks do, each file
carries its key and a sha256 of its arrays: one that is unreadable, foreign, altered or of
other shapes is named in one line and trained again. It is written through atomic_write under
the folder's lock (which removes a killed writer's temporary files); a cache that cannot be
written keeps the trained params in memory, with one line saying so.
"""
from dataclasses import asdict
import hashlib
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

from twoclock.atomic import (atomic_write, cache_dir, check_reusable_folder, checksum,
                             folder_lock, one_line)
from twoclock.models.policy import evaluate, net, task

VERSION = 2  # bump when the warm-up's code changes its result (2: the file carries a checksum)
CACHE_ENV = "TWOCLOCK_POLICY_CACHE"
FOLDER = "policy_warmup"  # under the store's root
DEFAULT_ROOT = os.path.join("results", "store")  # the command line's default store root
_READY: dict = {}  # key -> (flat NumPy params, info): the warm-ups prepared in this process


class CorruptCache(Exception):
    """A cached warm-up that cannot be trusted; the message names the file and why."""


def identity(cfg) -> dict:
    """What decides the warm-up's params: the network, the pools and the WarmupConfig."""
    return {"version": VERSION, "arch": arch_of(cfg)._asdict(),
            "pools": {"n_train": cfg.n_train, "n_test": cfg.n_test, "pool_seed": cfg.pool_seed},
            "warmup": asdict(cfg.warmup)}


def key_of(cfg) -> str:
    blob = json.dumps(identity(cfg), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def folder(store_root: str | None) -> str | None:
    """The cache folder: $TWOCLOCK_POLICY_CACHE, else store_root/policy_warmup (None: none)."""
    return cache_dir(CACHE_ENV, None if store_root is None else os.path.join(store_root, FOLDER))


def check(store_root: str | None) -> None:
    """At start-up: Refused unless the cache folder can be written, or exists (a read-only
    cache is read, and a warm-up trained here stays in memory)."""
    where = folder(store_root)
    if where is not None:
        check_reusable_folder(where, f"the policy warm-up cache (${CACHE_ENV}, else the "
                                     f"store's {FOLDER}/)")


def arch_of(cfg) -> net.Arch:
    return net.Arch(task.VOCAB, task.SEQ_LEN, cfg.d_model, cfg.n_layers, cfg.n_heads, cfg.d_mlp)


def train(cfg, log=None) -> tuple:
    """(params as a dict of NumPy arrays, info {steps, acc, entropy, ...}): the warm-up itself."""
    arch, w = arch_of(cfg), cfg.warmup
    train_pool, test_pool, _ = task.make_pools(cfg.n_train, cfg.n_test, cfg.pool_seed)
    test_j = evaluate.as_jax(test_pool)
    params = net.init(arch, jax.random.PRNGKey(w.seed))
    tx = optax.adam(w.lr)
    state = tx.init(params)
    rng = np.random.default_rng(w.seed)

    def loss(p, prompt, lab, nd):
        logp = net.answer_logp(p, arch, prompt, lab, full=True)
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
    while done < w.steps:
        idx = rng.integers(0, n, w.batch)
        sub = task.Pool(*(v[idx] for v in train_pool))
        lab, nd = task.noisy_labels(sub, w.noise, w.end_b, rng)
        params, state, val = step(params, state, sub.prompt, lab, nd)
        done += 1
        if done % w.eval_every == 0 or done == w.steps:
            st = {k: float(v) for k, v in stats_fn(params).items()}
            if log:
                log(f"warm-up step {done}: loss {float(val):.3f} held-out acc {st['acc']:.3f} "
                    f"entropy {st['entropy']:.3f}")
            if st["acc"] >= w.acc:
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


def shapes(cfg) -> dict:
    """The flat params' shapes of this network (traced, nothing computed)."""
    tree = jax.eval_shape(lambda: net.init(arch_of(cfg), jax.random.PRNGKey(0)))
    return {k: tuple(v.shape) for k, v in flatten(tree).items()}


def load(path: str, cfg) -> tuple:
    """(flat params, info) of the cache file at path; FileNotFoundError if there is none;
    CorruptCache unless it reads, is this warm-up's, matches its checksum and its shapes."""
    try:
        with open(path, "rb") as f, np.load(f, allow_pickle=False) as z:
            flat = {k: z[k] for k in z.files}
        meta = json.loads(bytes(flat.pop("__info__")).decode())
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(path) from None
    except Exception as e:  # BadZipFile, EOFError, pickle refusal, a missing entry, ...
        raise CorruptCache(f"{path} is unreadable ({one_line(e)})") from None
    key = meta.get("key") if isinstance(meta, dict) else None
    if key != key_of(cfg):
        raise CorruptCache(f"{path} holds warm-up {key}, not {key_of(cfg)}")
    if checksum(flat) != meta.get("sha256"):
        raise CorruptCache(f"{path} does not match its checksum")
    if {k: v.shape for k, v in flat.items()} != shapes(cfg):
        raise CorruptCache(f"{path} holds arrays of other shapes than this network's")
    return flat, meta["info"]


def save(path: str, flat: dict, info: dict, cfg) -> None:
    """The cache file, atomically, with its key, identity and checksum (OSError: the caller's)."""
    meta = {"key": key_of(cfg), "identity": identity(cfg), "sha256": checksum(flat),
            "info": info}
    tag = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    atomic_write(path, lambda f: np.savez(f, __info__=tag, **flat), binary=True)


def _warn(msg: str) -> None:
    print(f"policy warm-up: {msg}", file=sys.stderr, flush=True)


def prepare(cfg, store_root: str | None = DEFAULT_ROOT, log=None) -> tuple:
    """(flat params, info) of cfg's warm-up: from this process, else from the cache folder
    (see `folder`), else trained and written there; log(line) says which (warnings: stderr)."""
    key = key_of(cfg)
    if key in _READY:
        return _READY[key]
    say = log or (lambda m: None)
    where = folder(store_root)
    if where is None:
        out = _train(cfg, key, say)
    else:
        with folder_lock(where, say, f"policy warm-up cache {where}"):
            out = _load_or_train(cfg, os.path.join(where, key + ".npz"), key, say)
    _READY[key] = out
    return out


def _train(cfg, key: str, say) -> tuple:
    say(f"policy warm-up {key}: training (at most {cfg.warmup.steps} steps)")
    flat, info = train(cfg)
    say(f"policy warm-up {key}: {info['steps']} steps, held-out accuracy "
        f"{info['heldout_acc']:.3f}, entropy {info['entropy']:.3f}")
    return flat, info


def _load_or_train(cfg, path: str, key: str, say) -> tuple:
    try:
        flat, info = load(path, cfg)
        say(f"policy warm-up {key}: loaded from {path}")
        return flat, info
    except FileNotFoundError:
        pass
    except CorruptCache as e:
        _warn(f"{e}; training it again")
    flat, info = _train(cfg, key, say)
    try:
        save(path, flat, info, cfg)
    except OSError as e:
        _warn(f"cannot write {path} ({one_line(e)}); the trained warm-up stays in memory for "
              "this run")
    return flat, info


def ready(cfg) -> tuple | None:
    """(params pytree of jnp arrays in the default float type, info) of cfg's warm-up if this
    process prepared it, else None."""
    if key_of(cfg) not in _READY:
        return None
    flat, info = _READY[key_of(cfg)]
    return _as_params(flat), info


def stand_in(cfg) -> tuple:
    """The untrained init in the warm-up's place, for tracing shapes only (the memory
    estimate before the warm-up is prepared): same shapes, numbers never used."""
    flat = {k: np.zeros(shape, np.float32) for k, shape in shapes(cfg).items()}
    return _as_params(flat), {"stand_in": True}


def _as_params(flat: dict) -> dict:
    dtype = jnp.result_type(float)
    # cast by NumPy: a float64 -> float32 cast by JAX would compile a program
    return unflatten({k: jnp.asarray(np.asarray(v, dtype)) for k, v in flat.items()})


def load_or_train(cfg, store_root: str | None = DEFAULT_ROOT, log=None) -> tuple:
    """(params pytree of jnp arrays in the default float type, info): `prepare`, then `ready`."""
    prepare(cfg, store_root, log)
    return ready(cfg)
