"""A sweep sharded over 4 (forced host) devices gives the numbers of one device."""
import os
import subprocess
import sys

import numpy as np

from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.models import MODELS

SNIPPET = """
import sys, jax, numpy as np
from twoclock import OptimConfig, QuadraticConfig, SweepConfig, run_sweep
from twoclock.models import MODELS
from twoclock.models import MODELS
assert jax.device_count() == 4, jax.devices()
r = run_sweep(MODELS["quadratic"], QuadraticConfig(dim=6, drift_dim=3, drift_bias=0.1, target=0.3),
              OptimConfig(), SweepConfig(batches=(4, 8, 16), lr0s=(1e-2, 2e-2), seeds=5,
              budget=1600, n_ckpt=8), quiet=True, max_lanes=7)
np.savez(sys.argv[1], prog_n=r.prog_n, fail_n=r.fail_n, drift=r.ckpt[0]["drift"])
"""


def test_four_devices_equal_one(tmp_path):
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu"}
    out = tmp_path / "four.npz"
    p = subprocess.run([sys.executable, "-c", SNIPPET, str(out)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    one = run_sweep(MODELS["quadratic"], QuadraticConfig(dim=6, drift_dim=3, drift_bias=0.1, target=0.3),
                    OptimConfig(), SweepConfig(batches=(4, 8, 16), lr0s=(1e-2, 2e-2), seeds=5,
                    budget=1600, n_ckpt=8), quiet=True)
    four = np.load(out)
    np.testing.assert_array_equal(four["prog_n"], one.prog_n)
    np.testing.assert_array_equal(four["fail_n"], one.fail_n)
    np.testing.assert_allclose(four["drift"], one.ckpt[0]["drift"], rtol=1e-6, atol=1e-7)
