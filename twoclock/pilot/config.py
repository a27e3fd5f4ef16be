"""What experiments/plan.py plans from, as one frozen config: pilot runs (RUNS.csv, or the
published GRPO table) or the curves their trainer logged, and the plan's settings."""
from dataclasses import dataclass, fields
import math

from twoclock.config import finite, option, param, require, require_choice
from twoclock.pilot import api, levels, report
from twoclock.pilot.conditions import parse_failures
from twoclock.pilot.logs import AUTO, LOG_FORMS
from twoclock.pilot.plan import PilotError, check_settings
from twoclock.pilot.presets import PRESETS
from twoclock.pilot.rule import parse_rule
from twoclock.pilot.runband import MAX_SCATTER


@dataclass(frozen=True)
class RunsInput:
    """Pilot runs, one row each (RUNS.csv), or with no path the published GRPO table."""
    path: str | None = option(None, "pilot-run CSV (default: the published GRPO table)",
                              positional=True, nargs="?", metavar="RUNS.csv")


@dataclass(frozen=True)
class LogsInput:
    """The curves the pilots' trainer logged, and how to find the clocks in them (their flags
    keep their names: `path` is --logs)."""
    path: str | None = param(None, "per-step log file of the pilot runs (instead of RUNS.csv), "
                                   "or a trainer's own: a TensorBoard directory, trainer_state."
                                   "json (or a directory of runs holding one), verl's .jsonl")
    progress: str | None = param(None, "the target, e.g. 'heldout_acc>=0.7'; several of one "
                                       "metric in one quoted argument, 'acc>=0.45 acc>=0.5 "
                                       "acc>=0.55': a plan each and a joint fit, a target the "
                                       "pilots cannot plan left out and named (docs/plan.md)")
    failure: tuple = option((), "a failure clock, e.g. 'kl>=0.5' (repeat for several: each is "
                                "fitted; the earliest sets the plan; none: a progress-only plan)",
                  action="append")
    col: tuple = option((), "read NAME (run, batch, lr, samples, a metric) from COLUMN",
                        action="append", metavar="NAME=COLUMN")
    smooth: str | None = option(None, "smooth each curve first (T, W in samples; quad:N, a "
                                      "local quadratic through N logged points, for noisy "
                                      "evaluations; docs/plan.md states the bias)",
                                metavar="ema:T|window:W|quad:N")
    clip: str | None = option(None, "the logged clipped share of tokens (e.g. clip_frac): "
                                    "predict the batch where clipping starts to bind",
                              metavar="METRIC")
    clip_bind: float = param(0.02, "with --clip: the share at which clipping binds")
    clip_steps: str = param("fixed", "with --clip: optimizer steps per rollout batch: fixed "
                                     "(minibatches x epochs the same at every batch) or "
                                     "per_batch (a fixed minibatch size)",
                            choices=("fixed", "per_batch"))
    preset: str | None = param(None, "trl | verl | openrlhf: read the trainer's metric names "
                                     "as acc, heldout_acc, reward, kl, entropy, clip "
                                     "(docs/plan.md)",
                               choices=tuple(PRESETS))
    batch: tuple = option((), "a run's batch (responses per rollout batch: the samples one "
                              "logged step consumes) where its files do not record it; RUN "
                              "may be a glob ('grpo_bs64*=64')",
                          action="append", metavar="RUN=B")
    lr: tuple = option((), "a run's learning rate (default: the peak it logs)",
                       action="append", metavar="RUN=LR")
    updates: tuple = option((), "a run's optimizer updates per rollout batch (minibatches x "
                                "epochs; default: an updates column, the trainer's settings, "
                                "else 1); RUN may be a glob", action="append", metavar="RUN=K")
    eval_items: int | None = option(None, "the items each evaluation of the progress metric "
                                          "scores (a share in [0, 1]): its binomial noise "
                                          "sqrt(p (1 - p) / N) is the crossing noise of the "
                                          "progress band where larger than the residuals' "
                                          "(docs/plan.md)", type=int, metavar="N")
    floor_out: float | None = option(None, "with --progress-form adam: the progress metric's "
                                           "optimum (0 for a loss, 1 for an accuracy); takes "
                                           "Adam's noise floor out of the progress clock, each "
                                           "run's plateau read from the last quarter of its "
                                           "log (docs/plan.md)", type=float,
                                     metavar="OPTIMUM")
    run_scatter: float | None = option(None, "the SD of one run's log clock about its batch's "
                                             "(from seeds you ran): each prediction also gets "
                                             "one run's band (default: measured where a pilot "
                                             "batch has two or more runs; docs/plan.md)",
                                       type=float, metavar="S")
    fit_knee: bool = param(False, "with several --progress targets: fit the knee's sharpness "
                                  "jointly over them (the levels of one run's curve repeat its "
                                  "shape, so one seed a batch can fit a wider knee; "
                                  "docs/plan.md)")
    form: tuple = option((), "a failure clock's form, chosen by you: power, coupled or knee "
                             "(e.g. 'drift>=0.3=power'; default: from the pilots)",
                         action="append", metavar="CONDITION=FORM")
    # reading a run's batch, samples and restarts (docs/plan.md, "Trainers' own files")
    batch_from_name: str | None = option(None, "a regular expression whose group, found in a "
                                               "run's name, is its batch where nothing else "
                                               "gives it (e.g. 'bs(\\d+)')", metavar="REGEX")
    samples_from_step: str | None = option(None, "a CSV / JSON Lines log without samples: "
                                                 "samples = COLUMN (the step) x the batch",
                                           metavar="COLUMN")
    restarts: str = param("refuse", "a run that logs a step twice (a resumed run): refuse, or "
                                    "keep-last (the later copy)", choices=("refuse", "keep-last"))

    RENAME = {"path": "logs"}  # the flag of `path`

    def __post_init__(self):
        if self.path is None:
            given = [f.name for f in fields(self) if getattr(self, f.name) != f.default]
            raise ValueError(f"--{given[0].replace('_', '-')} needs --logs LOGS.csv" if given
                             else "the flags that read logs need --logs LOGS.csv")
        if self.progress is None:
            raise ValueError("--logs: give --progress (and no RUNS.csv)")
        parse_failures(self.failure)  # each condition well formed and given once
        if self.eval_items is not None:
            require(self.eval_items >= 1, "--eval-items", "a whole number >= 1",
                    self.eval_items)
        if self.preset is not None:
            require_choice("--preset", self.preset, tuple(PRESETS))
        if self.fit_knee:
            require(len(self.progress.split()) > 1, "--fit-knee", "given with several "
                    "--progress targets (e.g. 'acc>=0.45 acc>=0.5 acc>=0.55')", self.progress)
        if self.run_scatter is not None:
            require(finite(self.run_scatter) and 0 < self.run_scatter <= MAX_SCATTER,
                    "--run-scatter", f"in (0, {MAX_SCATTER:g}]", self.run_scatter)


@dataclass(frozen=True)
class PlanConfig:
    """A plan's input, one mode at a time (runs: pilot runs' clocks, or the published table;
    logs: their logged curves), and its settings; ValueError (one line naming the flag) when
    inconsistent. With neither input given, runs is the published table."""
    runs: RunsInput | None = None
    logs: LogsInput | None = None
    predict: tuple = option((), "batches to predict and plan over: B, or B:K for runs that "
                                "take K optimizer updates per rollout batch (a K other than "
                                "the pilots' needs --progress-form adam; B alone: K = 1 with "
                                "it, the pilots' K without; none: the pilot batches)",
                            nargs="+", metavar="B[:K]")
    margin: float = param(0.1, "fraction of the failure clock that must be left at the target")
    level: float = param(0.95, "confidence level of the bands")
    progress_form: str | None = param(None, "the progress clock's form: adam (Adam under any "
                                            "lr rule: B^(1/2 - p) below the knee, B^(1 - p) "
                                            "past it; runs at any lr and K updates per batch; "
                                            "docs/plan.md); auto (with --logs): adam, or the "
                                            "default forms where the pilots' metric turns back "
                                            "(drift wears it down); default: saturation or "
                                            "curvature, on the runs of one rule",
                                      choices=LOG_FORMS)
    predict_rule: str | None = option(None, "with --progress-form adam: predict under lr = LR0 "
                                            "(B / B0)^P (P a number or fixed, sqrt, linear; "
                                            "default: the rule most pilots share)",
                                      metavar="P[:LR0@B0]")

    INPUTS = ("runs", "logs")  # the nested input modes (their flags: RunsInput, LogsInput)

    def __post_init__(self):
        if self.logs is not None and self.runs is not None:
            raise ValueError("give RUNS.csv or --logs LOGS.csv, not both")
        if self.logs is None and self.runs is None:
            object.__setattr__(self, "runs", RunsInput())  # frozen: the default input
        check_settings(self.predict, self.margin, self.level)
        if self.predict_rule is not None:
            require(self.progress_form is not None, "--predict-rule",
                    "given with --progress-form adam", self.predict_rule)
            parse_rule(self.predict_rule)
        if self.progress_form == AUTO:
            require(self.logs is not None, "--progress-form", "adam or left out without "
                    "--logs LOGS.csv (auto reads the logged curves)", self.progress_form)
        if self.logs is not None and self.logs.floor_out is not None:
            require(self.progress_form is not None, "--floor-out",
                    "given with --progress-form adam", self.logs.floor_out)
            require(math.isfinite(self.logs.floor_out), "--floor-out", "a finite number",
                    self.logs.floor_out)


def plan(cfg: PlanConfig) -> dict:
    """The plan's JSON: from the logs (pilot.api.plan_logs) or from RUNS.csv / the published
    table (pilot.report.plan_file's Plan.to_json())."""
    predict = cfg.predict or None  # none given: the pilot batches
    lg = cfg.logs
    if lg is not None:  # the Python entry's plan, with the flags' values; one per target
        targets = levels.split_targets(lg.progress)

        def one(t):
            return api.plan_logs(
                lg.path, t, lg.failure, predict=predict, margin=cfg.margin,
                level=cfg.level, smoothing=lg.smooth, columns=lg.col, clip=lg.clip,
                clip_bind=lg.clip_bind, clip_steps=lg.clip_steps, forms=lg.form,
                preset=lg.preset, batch=lg.batch, lr=lg.lr, batch_from_name=lg.batch_from_name,
                samples_from_step=lg.samples_from_step, restarts=lg.restarts,
                updates=lg.updates, eval_items=lg.eval_items, floor_out=lg.floor_out,
                run_scatter=lg.run_scatter, progress_form=cfg.progress_form,
                predict_rule=cfg.predict_rule).to_json()
        if len(targets) == 1:
            return one(targets[0])
        # several: a target the pilots cannot plan is left out, named with its refusal, where
        # at least two others can be planned jointly; else the refusals stop the command
        plans, left = {}, []
        for t in targets:
            try:
                plans[t] = one(t)
            except PilotError as err:
                left.append({"condition": t, "why": str(err)})
        if len(plans) < 2:
            raise PilotError("; ".join(dict.fromkeys(x["why"] for x in left)) + (
                f" (of the {len(targets)} targets given, {len(plans)} can be planned: a joint "
                "fit needs two)"))
        targets, plans = list(plans), list(plans.values())
        if plans[0]["logs"].get("progress_form", {}).get("chosen") == "default":
            raise PilotError(f"--progress-form: auto chose the default forms (the pilots' metric "
                             f"turns back: pooled z {plans[0]['logs']['erosion']['z']:.1f}), and "
                             "the joint fit over several targets is Adam's form: give one "
                             "--progress target")
        return {**levels.joint_plan(targets, plans, predict, cfg.level, lg.fit_knee),
                "left_out": left}
    r = cfg.runs
    return report.plan_file(r.path, predict, cfg.margin, cfg.level, cfg.progress_form,
                            None if cfg.predict_rule is None else parse_rule(cfg.predict_rule)
                            ).to_json()


__all__ = ["PlanConfig", "RunsInput", "LogsInput", "plan", "parse_rule"]
