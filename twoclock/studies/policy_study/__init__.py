"""The policy model's study (docs/policy.md): which clocks of a real network keep their batch
invariance, and what clipping does to them.

Cells (`cells`), each one sweep through the engine's `run_sweep` (resumable from the store):
- sqrt / fixed: the default config (M = E = 1, eps 0.2) over the batches, lr0 under the sqrt
  rule, and under the fixed rule the sqrt rule's lr at the smallest batch (the same start, so
  the fixed rule borrows the sqrt rule's runs there);
- clip_none_M1E1: the sqrt cell unclipped at the smallest and largest batch, for its first
  min(control_seeds, seeds) seeds (at M = E = 1 every ratio is 1, so these runs must equal the sqrt
  cell's, bit for bit: a check, for which one chunk of seeds per batch is enough);
- clip_<name>_<convention>: M x E = 4 x 2 at the smallest and largest batch and
  clip_lr_factor x lr0, eps 0.2, unclipped, and clip-higher (0.2, 0.28), for M fixed
  (fixed_m) and the minibatch size fixed (fixed_size, M = 4 B / B_min; at B_min these are
  fixed_m's runs, borrowed rather than run twice);
- variant_<variant>_<clip> (part variants, not run by default): the fixed_size clipping
  comparison, eps 0.2 against unclipped, under a second warm-up and at 4x its lr;
- collapse_<clip>: an unstable lr (unstable_factor x lr0, M x E = 4 x 2), eps 0.2 and
  unclipped;
- cliptime_<clip> and std_<advantage>_<kl> (parts cliptime and stddof, not run by default):
  clip-higher over time at the collapse cells' lr, and the group std ddof 0 against 1
  (`cliptime`; they write cliptime_file);
- adam: no sweep; Adam's per-coordinate noise measured at the reference policy and the clocks
  it predicts under both rules (twoclock.models.policy.adam_noise);
- predict (`--predict`) and prereg (`--prereg`), each alone: the pre-registered test of that
  theory on cells it has not seen (`prereg`): predict runs the seen cell and writes the
  predictions file (never over an existing one), prereg runs the unseen cells and writes the
  measured file beside its comparison with the predictions.
Every answer (`answers`) is worked out from the cells' per-seed clocks (kept in the JSON), each
with a paired bootstrap 95% CI over seeds: (1) the progress gap N_prog(B) / N_prog(B_min) per
batch and the critical batch per rule; (2) each clock's measured batch exponent against the
theory's, from each direction's measured noise scale; (3) the clipping claims; (4) the
collapse clock. `report` prints them.
"""
import dataclasses
import json
import os
import time

from twoclock.analysis import results
from twoclock.analysis.clocks import N_BOOT
from twoclock.atomic import atomic_write, dumps
from twoclock.config import SweepConfig, param, require, require_int, require_positive
from twoclock.models.policy import adam_noise
from twoclock.studies.policy_study.answers import answers, exponent_ci, reanswer
from twoclock.studies.policy_study import cliptime, prereg
from twoclock.studies.policy_study.cells import (CLIPS, CLOCK_KEYS, CONVENTIONS, DEFAULT_PARTS,
                                                 DRIFT, PARTS, analyse, cells, check_cells,
                                                 borrowed, clock_S, lend, per_seed, rules)
from twoclock.studies.policy_study.report import report
from twoclock.studies.assemble import run_cells
from twoclock.studies.protocol import CellsView, Engine, Study, nested, overridden
from twoclock.trace import checkpoint_every

MODELS = ("policy",)  # the study's model: its cells are the policy's GRPO settings
ALONE = (("predict",), ("prereg",))  # the parts that run alone: the pre-registered test
# the paired bootstrap holds N_BOOT x seeds indices (8 bytes each): at most 2 GiB of them
MAX_SEEDS = 2**31 // (8 * N_BOOT)


# the rule cells' grid: batches x one lr0 x seeds (each cell sets its batches, lr0 and seeds)
SWEEP = SweepConfig(batches=(64, 128, 256, 512, 1024), lr0s=(1e-4,), seeds=16, budget=12_288,
                    seed=0)
QUICK_OVERRIDES = {"sweep": {"batches": (64, 512), "seeds": 4}, "conventions": ("fixed_m",)}
# the pre-registered test's design: three batches over 16x, 8 seeds, a budget that leaves the
# half-lr cell room to reach its clocks
PREREG_OVERRIDES = {"sweep": {"batches": (64, 256, 1024), "seeds": 8, "budget": 16_384}}
PRESETS = {"quick": ("batches 64 and 512, 4 seeds, fixed_m only (~20 min on 2 cores)",
                     QUICK_OVERRIDES),
           "predict": ("the per-coordinate theory's clocks for the cells it has not seen, "
                       "calibrated on the seen cell (run here): writes --predictions-file",
                       {**PREREG_OVERRIDES, "parts": ("predict",)}),
           "prereg": ("run the unseen cells and compare with --predictions-file: writes "
                      "--measured-file", {**PREREG_OVERRIDES, "parts": ("prereg",)})}


@dataclasses.dataclass(frozen=True)
class Config(CellsView):
    """The study's cells: batches, seeds, budget, the learning rates and which parts run."""
    SCRIPT = "policy_study.py"
    PRESETS = PRESETS
    control_seeds: int = param(8, "seeds of the M = E = 1 control (--seeds if fewer), whose "
                               "clocks must equal the sqrt cell's first ones, bit for bit")
    unstable_factor: float = param(3.0, "the collapse cells' lr0 / lr0")
    # the clipping cells' lr0 over lr0: at lr0 itself M x E = 4 x 2 crosses every clock within
    # 1-3 updates at B 1024, too coarse to compare (docs/policy.md)
    clip_lr_factor: float = param(0.25, "the clipping cells' lr0 / lr0")
    early_samples: int = param(2048, "responses after which early held-out accuracy is read")
    n_ckpt: int = param(64, "checkpoints per run")
    conventions: tuple = param(CONVENTIONS, "the clipping cells' minibatch conventions: "
                                            "fixed_m | fixed_size")
    parts: tuple = param(DEFAULT_PARTS, "cells to run: rules (sqrt and fixed), adam, clip, "
                                        "collapse, variants (the fixed_size clipping cells "
                                        "under a second warm-up and at 4x their lr), "
                                        "cliptime (clip-higher over time at the collapse lr), "
                                        "stddof (the group std, ddof 0 against 1); or "
                                        "predict or prereg alone (the pre-registered test)")
    std_kl_coef: float = param(0.1, "stddof: the KL penalty in the loss of its KL cells")
    cliptime_file: str = param("docs/results/cliptime.json",
                               "cliptime / stddof write their per-seed clocks and curves")
    predictions_file: str = param("docs/preregistered/policy_predictions.json",
                                  "predict writes it (never over an existing file); prereg "
                                  "reads it")
    measured_file: str = param("docs/preregistered/policy_measured.json",
                               "prereg writes the unseen cells' clocks and the comparison")
    sweep: SweepConfig = nested(SWEEP, "study", rename={"lr0s": "lr0"}, skip=("n_ckpt",),
                                scalar=("lr0s",), help={
                                    "batches": "batches in responses; the clipping and collapse "
                                               "cells use the smallest and the largest",
                                    "seeds": "seeds per cell", "budget": "responses per run",
                                    "lr0s": "base learning rate at b0 of the rule cells",
                                    "seed": "base PRNG seed"})

    def __post_init__(self):
        # the batches, lr0, seeds, budget and seed are the sweep's, checked there
        require(self.seeds >= 2, "seeds", "an integer >= 2", self.seeds)
        require_int("control_seeds", self.control_seeds, lo=2)
        require(self.seeds <= MAX_SEEDS, "seeds", f"<= {MAX_SEEDS} (the paired bootstrap "
                f"holds {N_BOOT} x seeds indices)", self.seeds)
        require_int("early_samples", self.early_samples, lo=1)
        require_int("n_ckpt", self.n_ckpt, lo=1)
        for name in ("unstable_factor", "clip_lr_factor", "std_kl_coef"):
            require_positive(name, getattr(self, name))
        require(len(self.batches) >= 2, "batches", "at least two distinct batches >= 1",
                self.batches)
        require((len(self.parts) > 0 and set(self.parts) <= set(PARTS))
                or tuple(self.parts) in ALONE, "parts",
                "some of " + ", ".join(PARTS) + ", or predict or prereg alone", self.parts)
        require(len(self.conventions) > 0 and set(self.conventions) <= set(CONVENTIONS),
                "conventions", "some of " + ", ".join(CONVENTIONS), self.conventions)

    def as_dict(self, max_lanes: int) -> dict:
        """The study as its JSON records it: flat, in the order of its first results, with
        the engine's runs per compiled chunk."""
        return {"batches": self.batches, "seeds": self.seeds,
                "control_seeds": self.control_seeds, "budget": self.budget, "lr0": self.lr0,
                **{k: getattr(self, k) for k in (
                    "unstable_factor", "clip_lr_factor", "early_samples", "n_ckpt")},
                "seed": self.seed, **{k: getattr(self, k) for k in (
                    "conventions", "parts", "predictions_file", "measured_file")},
                "max_lanes": max_lanes, **({k: getattr(self, k) for k in (
                    "std_kl_coef", "cliptime_file")} if self.writes_cliptime else {})}

    @property
    def writes_cliptime(self) -> bool:
        """Whether a cliptime or stddof part runs (they write cliptime_file)."""
        return bool({"cliptime", "stddof"} & set(self.parts))

    def check(self, model, base, opt) -> None:
        """Before any cell runs: every cell's configs and batches, early_samples within what
        every run reaches, and the pre-registered test's files: the predictions file read and
        checked against its schema (`prereg.validate`) (ValueError)."""
        del opt
        if self.parts == ("predict",):
            # a pre-registration is never rewritten: the file is committed before the runs
            require(not os.path.exists(self.predictions_file), "predictions_file",
                    "a path with no file yet (a pre-registration is not rewritten)",
                    self.predictions_file)
        elif self.parts == ("prereg",):
            read_predictions(self)
        else:
            check_cells(model, self, base)
        # early held-out accuracy is read at the first checkpoint at or past early_samples
        # responses: past the shortest run's last one there is none (and the first checkpoint
        # would be read instead)
        self.require_reached("early_samples", self.early_samples, self.early_samples)
        if "cliptime" in self.parts:  # its lead is read within early_samples: a checkpoint there
            first = max(b * checkpoint_every(self.budget // b, self.n_ckpt)
                        for b in (min(self.batches), max(self.batches)))
            require(self.early_samples >= first, "early_samples", f">= {first}, the first "
                    f"checkpoint of every cliptime run (the lead is read up to it)",
                    self.early_samples)

    def outputs(self) -> dict:
        """The files the study writes besides its JSON ({flag: path}), checked writable before
        any work: the predictions file of --predict, the measured file of --prereg."""
        if self.parts == ("predict",):
            return {"--predictions-file": self.predictions_file}
        if self.writes_cliptime:
            return {"--cliptime-file": self.cliptime_file}
        return {"--measured-file": self.measured_file} if self.parts == ("prereg",) else {}

    def output_name(self, model, given) -> str:
        """policy_study[_quick][_<parts>]: the parts in the name only where they were given."""
        del model
        if self.parts in ALONE:
            return "policy_study_" + self.parts[0]
        return ("policy_study" + ("_quick" if "quick" in given else "")
                + ("_" + "_".join(self.parts) if "parts" in given else ""))


QUICK = overridden(Config(), QUICK_OVERRIDES)


def read_predictions(st: Config) -> dict:
    """The predictions file prereg compares with (ValueError in one line: missing, not JSON, or
    not the schema `prereg.validate` states for the study's design)."""
    path = st.predictions_file
    require(os.path.isfile(path), "predictions_file", "an existing file written by --predict",
            path)
    try:
        with open(path) as f:
            pred = json.load(f)
    except (OSError, ValueError, RecursionError) as e:  # (RecursionError: nested too deep)
        raise ValueError(f"predictions_file: {path} is not a predictions file ({e})") from None
    prereg.validate(pred, st)
    return pred


def run(model, base, opt, st: Config, *, keep=None, quiet: bool = False,
        engine: Engine = Engine()) -> dict:
    """Every cell through run_sweep (each resumable from its store under engine.store), then
    the answers. base: the model's config the cells start from (opt: unused, the cells set
    their rules)."""
    del opt
    if st.parts in ALONE:
        return run_prereg(model, base, st, keep=keep, quiet=quiet, engine=engine)
    log = (lambda m: None) if quiet else print
    lanes = st.lanes(engine)
    out, t0 = ({"schema": results.SCHEMA, "study": st.as_dict(lanes), "cells": {}},
               time.perf_counter())
    loans = borrowed(st)
    lenders = {loan.lender for loan in loans.values()}
    done = {}  # the lending cells' results
    for name, cfg, opt, sweep, res, secs in run_cells(
            model, cells(st, base), title="policy study", store_root=engine.store,
            max_lanes=lanes, keep=keep, quiet=quiet):
        if name in lenders:
            done[name] = res
        whole, res = lend(name, sweep, res, done, loans)
        out["cells"][name] = {**analyse(model, cfg, opt, whole, res, st.early_samples),
                              "seconds": secs,
                              "config": results.config_dict(model=cfg, optimizer=opt,
                                                            sweep=sweep)}
        if name in loans:
            out["cells"][name]["borrowed"] = {str(loans[name].batch): loans[name].lender}
        if name.startswith(("cliptime_", "std_")):
            out["cells"][name]["curves"] = {str(b): cliptime.curves(res, i)
                                            for i, b in enumerate(res.batches)}
    if "adam" in st.parts:
        log("[policy study] adam: per-coordinate noise at the reference policy")
        t = time.perf_counter()
        out["adam_noise"] = {**adam_noise.measure(
            base, rules(st), st.batches,
            ref_batch=max(st.batches), seed=st.seed), "seconds": time.perf_counter() - t}
    out["answers"] = answers(out["study"], out["cells"], out.get("adam_noise"))
    out["seconds"] = time.perf_counter() - t0
    if st.writes_cliptime:
        write_cliptime(st, out, log)
    return out


def write_cliptime(st: Config, out: dict, log) -> None:
    """The cliptime and stddof cells' per-seed clocks and curves, and their answers, to
    st.cliptime_file (small enough to commit: the claims recompute from it, `cliptime.answers`)."""
    keep = {n: {k: c[k] for k in ("per_seed", "curves", "seconds")}
            for n, c in out["cells"].items() if n.startswith(("cliptime_", "std_"))}
    written = {"study": out["study"], "cells": keep, "answers": out["answers"]["6_cliptime"]}
    atomic_write(st.cliptime_file, lambda f: f.write(dumps(written)))
    log(f"[policy study] wrote {st.cliptime_file}")


def run_prereg(model, base, st: Config, *, keep=None, quiet: bool = False,
               engine: Engine = Engine()) -> dict:
    """predict: the seen cell, the theory for every cell, the predictions file. prereg: the
    unseen cells, their comparison with the predictions, the measured file."""
    log = (lambda m: None) if quiet else print
    predict = st.parts == ("predict",)
    pred = None if predict else read_predictions(st)
    names = ("seen",) if predict else tuple(prereg.UNSEEN)
    lanes = st.lanes(engine)
    out, t0 = ({"schema": results.SCHEMA, "study": st.as_dict(lanes), "cells": {}},
               time.perf_counter())
    for name, cfg, opt, sweep, res, secs in run_cells(
            model, prereg.cells(st, base, names), title="policy study, pre-registered",
            store_root=engine.store, max_lanes=lanes, keep=keep, quiet=quiet,
            cell_key=lambda n: f"prereg_{n}"):
        out["cells"][name] = {"per_seed": per_seed(cfg, sweep, res, st.early_samples),
                              "seconds": secs,
                              "config": results.config_dict(model=cfg, optimizer=opt,
                                                            sweep=sweep)}
    if predict:
        raw = prereg.theory(st, base, ("seen", *prereg.UNSEEN), log)
        out["predictions"] = prereg.predictions(st, out["cells"]["seen"]["per_seed"], raw)
        path = st.predictions_file
    else:
        out["predictions"] = pred
        out["comparison"] = prereg.compare(pred, {n: c["per_seed"]
                                                  for n, c in out["cells"].items()})
        path = st.measured_file
    out["seconds"] = time.perf_counter() - t0
    # predict writes the predictions alone; prereg the comparison with every per-seed clock
    written = out["predictions"] if predict else {
        k: out[k] for k in ("study", "comparison", "cells")}
    atomic_write(path, lambda f: f.write(dumps(written)))
    log(f"[policy study] wrote {path}")
    out["wrote"] = path
    return out


def figure(out: dict):
    """The clocks against batch per rule, and the clipping delays (figures.policy_study)."""
    if "answers" not in out:  # the pre-registered test: tables only
        return None
    if "cliptime_eps0.2" in out["cells"] and not {"sqrt", "fixed"} & set(out["cells"]):
        from twoclock.figures.cliptime import cliptime_figure  # the cliptime part alone
        return cliptime_figure(out)
    from twoclock.figures.policy_study import study_figure
    return study_figure(out)


__all__ = ["Config", "QUICK", "PRESETS", "MODELS", "CLIPS", "CLOCK_KEYS", "DRIFT", "PARTS",
           "answers", "analyse", "cells", "clock_S", "exponent_ci", "figure", "per_seed",
           "reanswer", "report", "rules", "run"]


STUDY = Study("policy_study", Config, run, report, figure, models=MODELS)
