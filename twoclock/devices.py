"""Which devices a sweep runs on. On a CPU, one XLA device per core lets the sweep's sharded
lane axis use every core (XLA runs one small vmapped loop on one thread per device)."""
import os


def use_cpu_cores(n: int | None = None) -> None:
    """Expose n (default: all usable) CPU cores as XLA host devices, unless XLA_FLAGS says.

    Must run before JAX initialises its backends; it has no effect afterwards and none on a GPU,
    where jax.devices() lists the GPUs. Results do not depend on the device count.
    """
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_force_host_platform_device_count" in flags:
        return
    n = n or len(os.sched_getaffinity(0))
    if n > 1:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={n}".strip()
