"""Process-wide JAX setup: devices, the compilation cache, the CPU lowering of the RNG.

Devices and the cache must be set before JAX initialises its backends (the first array or jit
call). Nothing happens at import: `setup()` is called by the command line, and `fast_rng()` by
the engine before it compiles anything.
"""
import os


def use_cpu_cores(n: int | None = None) -> None:
    """Expose n (default: all usable) CPU cores as XLA host devices, unless XLA_FLAGS says.

    XLA runs one small vmapped loop on one thread per device, so one device per core lets the
    sweep's sharded lane axis use every core. No effect on a GPU, where jax.devices() lists
    the GPUs. Results do not depend on the device count.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" in flags:
        return
    n = n or len(os.sched_getaffinity(0))
    if n > 1:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()


def cache_dir() -> str | None:
    """JAX's compilation cache by the one cache rule (`twoclock.atomic.cache_dir`):
    $TWOCLOCK_CACHE_DIR ('off': none), else $XDG_CACHE_HOME/twoclock/jax (~/.cache/...)."""
    from twoclock.atomic import cache_dir as rule
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return rule("TWOCLOCK_CACHE_DIR", os.path.join(base, "twoclock", "jax"))


def setup() -> None:
    """All cores as devices, and JAX's persistent compilation cache, so a rerun of a sweep
    skips compilation."""
    use_cpu_cores()
    d = cache_dir()
    if d is not None:
        import jax
        jax.config.update("jax_compilation_cache_dir", d)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)


def check_devices() -> int:
    """The number of devices; Refused, in one line naming JAX_PLATFORMS, where JAX cannot start
    the backend it is told to use (JAX_PLATFORMS=gpu or cuda on a machine with no GPU, or a
    name JAX does not know)."""
    import jax
    try:
        return jax.device_count()
    # RuntimeError for gpu; for cuda without its plugin JAX's own `assert` fails (an
    # AssertionError with no message); anything else is the backend's failure too
    except Exception as e:
        from twoclock.atomic import Refused, one_line
        told = os.environ.get("JAX_PLATFORMS")
        who = f"JAX_PLATFORMS={told!r}" if told else "JAX's default backend"
        why = one_line(e) if str(e) else "no backend of that name could be started"
        raise Refused(f"{who} cannot be used on this machine ({why})") from None


_FAST_RNG: list = []  # the answer of unrolled_threefry_on_cpu, once asked


def fast_rng() -> bool:
    """The unrolled Threefry lowering on the CPU, registered once (see below); idempotent."""
    if not _FAST_RNG:
        _FAST_RNG.append(unrolled_threefry_on_cpu())
    return _FAST_RNG[0]


def unrolled_threefry_on_cpu() -> bool:
    """Lower JAX's threefry2x32 hash on the CPU with its rounds unrolled, as on other backends.

    JAX lowers the hash on the CPU as a loop over its 5 groups of rounds, to compile faster. With
    today's XLA CPU compiler the unrolled form both compiles and runs faster (measured in
    docs/performance.md; benchmarks/bench_sweep.py times the sweep). The arithmetic is the same, so
    every random bit is too (tests/engine/test_runtime.py checks the Threefry known answers). Uses a
    JAX internal; where that has moved, nothing changes and this returns False.
    """
    try:
        from jax._src.interpreters import mlir
        from jax._src.random import threefry2x32 as tf
        rule = tf._threefry2x32_lowering_rule  # the backend-independent, unrolled lowering
        mlir.register_lowering(tf.threefry2x32_p, rule, platform="cpu")
    except (ImportError, AttributeError):
        return False
    return True
