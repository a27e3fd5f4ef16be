"""Values valid in their range but wrong in the simulation's float type (issue 24, class 5):
refused in one line naming the parameter, exit 2, before anything is simulated. Before issue
24 --beta2 0.99999999 censored every run silently, --beta1 0.99999999 diverged every run, and
--b0 1e-300 failed after simulating with a message naming no parameter."""
import numpy as np
import pytest

from twoclock import OptimConfig, QuadraticConfig
from twoclock.atomic import Refused
from tests.cli.test_reliability import TINY, run_main


@pytest.mark.parametrize("args, name", [
    (["--beta2", "0.99999999"], "beta2 must round below 1 in float32"),
    (["--beta1", "0.99999999"], "beta1 must round below 1 in float32"),
    (["--b0", "1e-300"], "the learning rate at batch 4"),
    (["--lr0", "1e300"], "the learning rate at batch 4 (lr0 1e+300"),
    (["--sigma", "1e20"], "sigma^2"), (["--sigma", "1e-30"], "sigma^2"),
    (["--drift-noise", "1e39"], "drift_noise must be finite"),
    (["--optimizer", "momentum", "--momentum", "0.999999999"], "momentum must round below 1"),
    # 1 - beta2 = 5e-8 holds in float32, but the companions halve it at batch 4 (b0 8)
    (["--malladi", "--beta2", "0.99999995"], "float32, the simulation's type (at batch 4"),
])
def test_a_value_wrong_in_float32_is_refused_before_simulating(tmp_path, monkeypatch, args,
                                                                 name):
    monkeypatch.setattr("twoclock.engine.sweep._run", lambda *a, **k: pytest.fail("simulated"))
    code, out, err = run_main([*TINY, *args, "--no-store", "--out", str(tmp_path)])
    assert code == 2 and err.count("\n") == 1 and name in err and not out, err
    # learning rates reach the engine in float32 whatever the type: --x64 would not help them
    assert ("--x64" in err) != ("learning rate" in name) and not list(tmp_path.iterdir())


def test_float64_accepts_what_float32_cannot_hold(monkeypatch):
    from twoclock.engine import dtypes
    cfg = QuadraticConfig(dim=4)
    with pytest.raises(Refused, match="beta2"):
        dtypes.check(cfg, OptimConfig(beta2=0.99999999), (4,), (1e-2,))
    monkeypatch.setattr(dtypes, "dtype", lambda: np.float64)
    dtypes.check(cfg, OptimConfig(beta2=0.99999999), (4,), (1e-2,))
    dtypes.check(QuadraticConfig(dim=4, sigma=1e20), OptimConfig(), (4,), (1e-2,))
    # the lanes' learning rates are float32 with --x64 too (twoclock.engine.sweep)
    with pytest.raises(Refused, match="learning rate at batch 4 .* in float32, the type"):
        dtypes.check(cfg, OptimConfig(b0=1e-300), (4,), (1e-2,))
