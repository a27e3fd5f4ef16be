"""XLA's code generator on the CPU: its fusion emitters (its default, "fused") or its older loop
emitters ("quick": `xla_cpu_use_fusion_emitters=False`).

Measured on 2 CPU cores for the quadratic model's one program (docs/performance.md): with the
quick emitters, tracing, lowering and compiling take 0.50-0.55 s instead of 0.74-0.78 s, and
the updates run 1.28x (48 runs) to 1.41x (1152 runs) slower. Where the updates take a fraction
of the compile, quick wins; on a long sweep, or once the compilation cache holds the program,
fused does.

The quadratic model's numbers came out bit for bit the same under both
(tests/engine/test_codegen.py checks it over configurations, optimizers and float64). The
bandit's clocks and trajectories did too, but two of its noise diagnostics, sums over group
gradients, differed by up to 2 ulps, so "auto" never picks quick for it
(`Model.quick_codegen_exact`).
"""
import jax

from twoclock.config import require_choice
from twoclock.engine.estimate import Estimate
from twoclock.model import Model

CODEGENS = ("auto", "quick", "fused")

# "auto" picks quick below this many estimated seconds of updates per program: there the quick
# compile saves 0.2-0.3 s and its slower run costs at most ~0.1 s, also with a filled cache
QUICK_BELOW_S = 0.25


def choose(codegen: str, spec: Model, est: Estimate) -> str:
    """"quick" or "fused": codegen itself, or for "auto" quick only on the CPU, for a model whose
    numbers it leaves unchanged, and a sweep estimated at under QUICK_BELOW_S s per program."""
    require_choice("codegen", codegen, CODEGENS)
    if codegen != "auto":
        return codegen
    short = est.seconds is not None and est.seconds < QUICK_BELOW_S * est.programs
    quick = jax.default_backend() == "cpu" and spec.quick_codegen_exact and short
    return "quick" if quick else "fused"


def compiler_options(choice: str) -> dict | None:
    """The XLA options of a choice from `choose` (None: XLA's defaults). The option only exists
    on the CPU; on another backend both choices compile the same."""
    require_choice("codegen", choice, CODEGENS[1:])
    if choice == "quick" and jax.default_backend() == "cpu":
        return {"xla_cpu_use_fusion_emitters": False}
    return None
