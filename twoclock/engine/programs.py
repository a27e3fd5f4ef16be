"""The compiled programs of a sweep: `program` builds the jit-compiled, vmapped run of one
group of lanes, `kept_program` the one built before for the same config as the program sees
it (another lr rule, another value of the model's knobs: one trace and compile per shape)."""
import jax

from twoclock.config import OptimConfig
from twoclock.engine import codegen as codegens
from twoclock.engine.kept import Kept
from twoclock.engine.stages import constant_run, make_traced_run, program_opt
from twoclock.model import Model


def program(model: Model, model_cfg, opt: OptimConfig, n_steps: int, n_ckpt: int,
            static_batch: int | None = None, codegen: str = "fused", knobbed: bool = False):
    """The compiled vmapped run that run_sweep uses for runs of n_steps updates: per batch where
    the batch sets shapes, otherwise one program whose run length and checkpoint interval are
    arguments (`sweep.length_args`), the same for every n_steps. codegen: "fused" or "quick"
    (`twoclock.engine.codegen`). knobbed: the program takes the model's knobs
    (`Model.knobs`) as a last argument, the same for every lane."""
    options = codegens.compiler_options(codegen)
    knob_axis = (None,) if knobbed else ()
    if model.static_batch:
        return jax.jit(jax.vmap(constant_run(model, model_cfg, opt, int(n_steps), n_ckpt,
                                             static_batch), in_axes=(0, 0, 0, *knob_axis)),
                       compiler_options=options)
    return jax.jit(jax.vmap(make_traced_run(model, model_cfg, opt, n_ckpt),
                            in_axes=(0, 0, 0, None, None, *knob_axis)), compiler_options=options)


# the programs kept in the process: one jit (one trace and compile per shape) per config as
# the program sees it (the lr rule left out: the lrs are arguments)
PROGRAMS = Kept(16)


def kept_program(model: Model, model_cfg, opt: OptimConfig, n_steps: int, n_ckpt: int,
                 static_batch: int | None, codegen: str, knobbed: bool):
    """`program`, the one built before where its arguments were the same."""
    opt = program_opt(opt)
    key = (model_cfg, opt, int(n_steps) if model.static_batch else None, n_ckpt, static_batch,
           codegen, knobbed, jax.config.jax_enable_x64)
    return PROGRAMS.get(model, key, lambda: program(model, model_cfg, opt, n_steps, n_ckpt,
                                                    static_batch, codegen, knobbed))
