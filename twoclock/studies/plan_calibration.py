"""The planner's bands calibrated from logs on this project's models (`--design
practitioner`: one seed per batch, as a real sweep runs it, `twoclock.studies.planner.
practitioner`; the default design below).

Per model with a plan-check entry, simulated pilots in six designs (3 or
4 pilot batches; 8 seeds, or two disjoint sets of 4), every logged clock scored at 4x and 8x
the largest pilot at the levels 50/80/95% (`twoclock.studies.planner.calibrate`; docs/plan.md);
experiments/plan_calibration.py is its command."""
from dataclasses import dataclass, field

from twoclock.config import param, require, require_choice, require_int
from twoclock.pilot.conditions import parse_smooth
from twoclock.studies.planner import calibrate, practitioner
from twoclock.studies.plan_check import defaults  # offered for the models with pilots
from twoclock.studies.protocol import Engine, Study


@dataclass(frozen=True)
class Config:
    """Which models (each at its defaults unless a single one is given with its flags), and
    the logged points per run; the panels (model, model config) are the command line's."""
    SCRIPT = "plan_calibration.py"
    DESCRIPTION = __doc__.split("\n")[0]
    DEFAULTS = staticmethod(defaults)
    models: tuple = param(("quadratic", "bandit", "policy"), "the models, each a calibration "
                                                              "of its own")
    n_ckpt: int = param(512, "logged points per simulated run")
    design: str = param("seeds", "seeds: the six pilot designs of many seeds; practitioner: "
                                 "one seed per batch, fixed lr and sqrt rule, an evaluation on "
                                 "1000 items every 25 updates (docs/plan.md)",
                        choices=("seeds", "practitioner"))
    designs: int = param(16, "with --design practitioner: seeds per pilot batch, each one "
                             "design (seed s at every pilot batch)")
    answer_seeds: int = param(16, "with --design practitioner: seeds per held-out batch "
                                  "behind each answer")
    progress_form: str | None = param(None, "with --design practitioner: the planner's "
                                            "progress form, adam (docs/plan.md); default: "
                                            "the planner's default", choices=("adam",))
    floor_out: bool = param(False, "with --progress-form adam: also plan each design with "
                                   "--floor-out (the metric's optimum: 0 for a share falling "
                                   "to its target, 1 for one rising) and score it beside the "
                                   "plan (docs/plan.md)")
    compare_forms: bool = param(False, "with --design practitioner: plan each design with "
                                       "the planner's default form, with the Adam form, "
                                       "with its whole curve's knee and as --progress-form "
                                       "auto would (the same simulated logs), and print "
                                       "their table (docs/plan.md) and paired contrasts")
    design_seed: int = param(0, "with --design practitioner: the pilots' simulation seed "
                                "(0: the designs of the published tables; another value: "
                                "fresh designs, the same held-out answers)")
    eval_every: int = param(practitioner.EVAL_EVERY, "with --design practitioner: the pilots "
                                                     "evaluated every that many updates")
    smooth: str | None = param(None, "with --design practitioner: plan every design with "
                                     "the planner's --smooth (quad:5, a local quadratic "
                                     "through 5 evaluations; docs/plan.md)")
    eval_noise: bool = param(False, "with --design practitioner: tell every plan the "
                                    "evaluation's size (the planner's --eval-items 1000), whose "
                                    "binomial noise floors each band's per-run variance "
                                    "(docs/plan.md)")
    panels: tuple = field(default=(), metadata={"internal": True})

    def __post_init__(self):
        require_int("--n-ckpt", self.n_ckpt, lo=2)
        require_int("--designs", self.designs, lo=1)
        require_int("--answer-seeds", self.answer_seeds, lo=1)
        require_int("--eval-every", self.eval_every, lo=1)
        require_int("--design-seed", self.design_seed, lo=0)
        require(self.design_seed == 0 or self.design == "practitioner", "--design-seed",
                "given with --design practitioner", self.design_seed)
        require(self.eval_every == practitioner.EVAL_EVERY or self.design == "practitioner",
                "--eval-every", "given with --design practitioner", self.eval_every)
        if self.progress_form is not None:
            require_choice("--progress-form", self.progress_form, ("adam",))
            require(self.design == "practitioner", "--progress-form",
                    "given with --design practitioner", self.progress_form)
        if self.compare_forms:
            require(self.design == "practitioner" and self.progress_form is None,
                    "--compare-forms", "given with --design practitioner and no --progress-form",
                    self.compare_forms)
        if self.smooth is not None:
            require(self.design == "practitioner", "--smooth", "given with --design "
                    "practitioner", self.smooth)
            parse_smooth(self.smooth)  # a PilotError (a ValueError): its one line
        if self.eval_noise:
            require(self.design == "practitioner", "--eval-noise", "given with --design "
                    "practitioner", self.eval_noise)
        if self.floor_out:
            require(self.progress_form == "adam", "--floor-out",
                    "given with --design practitioner --progress-form adam", self.floor_out)


def run(model, model_cfg, opt, cfg: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """The calibration's rows and coverage table; the simulated logs kept under --out."""
    del model, model_cfg
    if cfg.design == "practitioner":
        return practitioner.calibrate(cfg.panels, opt, engine.out, keep, quiet,
                                      cfg.designs, cfg.answer_seeds, cfg.progress_form,
                                      cfg.floor_out, cfg.eval_every, cfg.compare_forms,
                                      cfg.design_seed, cfg.smooth, cfg.eval_noise)
    return calibrate.calibrate(cfg.panels, opt, engine.out, cfg.n_ckpt, keep, quiet)


def table(out: dict) -> str:
    """The design's table."""
    return (practitioner.table if out.get("design") == "practitioner" else calibrate.table)(out)


STUDY = Study("plan_calibration", Config, run, table)
