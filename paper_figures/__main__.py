"""`python -m paper_figures [--only NAME ...] [--force] [--results DIR] [--out DIR]`.

Regenerates every figure (PDF + PNG, one style: twoclock.figures.style) from cached result
JSON files in --results, running the experiment that produces a file only when it is
missing, written under an older result schema, or with --force. The long studies' figures
(CACHED_ONLY: the policy, damage, shapes and regime map studies, each many minutes on 2
cores) are drawn only from a cached file, and skipped with a one-line note where there is
none. Figure code reads the JSON and never calls JAX.
"""
import argparse
import os
import subprocess
import sys
import time

from twoclock.figures.style import (clipping_figure, clocks_figure, phase_figure, save,
                                    schedule_figure, time_to_target_figure)
from twoclock.figures.clipping import regime_map_figure
from twoclock.figures.damage_study import damage_figure
from twoclock.figures.policy_study import study_figure
from twoclock.figures.regime_map import regime_figure
from twoclock.figures.shapes import critical_target_figure, exponent_figure
from twoclock.analysis.results import SCHEMA, read_json
from twoclock.atomic import Refused, check_folder, one_line

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _exp(name):
    return os.path.join(ROOT, "experiments", name)


def _clocks_panel(result: dict, title: str, batch_unit: str, lr0: float | None = None) -> dict:
    """One lr0's clocks (and the theory's, where the result has them) from a headline JSON."""
    lr0s = sorted({r["lr0"] for r in result["runs"]})
    lr0 = lr0s[len(lr0s) // 2] if lr0 is None else min(lr0s, key=lambda v: abs(v - lr0))
    runs = sorted([r for r in result["runs"] if r["lr0"] == lr0], key=lambda r: r["batch"])
    theory = {name: [r.get("theory", {}).get(f"{name}_samples") for r in runs]
              for name in ("progress", "failure")}
    return {"title": f"{title}, lr0 = {lr0:g}", "unit": result.get("unit", "samples"),
            "batch_unit": batch_unit, "batches": [r["batch"] for r in runs],
            "progress": [r["progress_samples"] for r in runs],
            "failure": [r["failure_samples"] for r in runs],
            "theory": {k: v for k, v in theory.items() if any(x is not None for x in v)}}


def clocks_quadratic(result: dict, lr0: float = 1e-2):
    """Both clocks with the theory overlay, from experiments/critical_batch.py (defaults)."""
    return clocks_figure(_clocks_panel(result, "quadratic (NQM)", "samples per update", lr0))


def clocks_bandit(result: dict):
    """Both clocks against batch from experiments/critical_batch.py --model bandit."""
    return clocks_figure(_clocks_panel(result, "bandit (RLVR)", "responses per update"))


phase_diagram, schedule = phase_figure, schedule_figure
time_to_target, clipping = time_to_target_figure, clipping_figure


# name -> (result file, command that writes it (JSON path appended), figure builder)
FIGURES = {
    "clocks_quadratic": ("critical_batch_quadratic.json", [_exp("critical_batch.py")],
                         clocks_quadratic),
    "phase_diagram": ("phase_diagram.json", [_exp("phase_diagram.py")], phase_diagram),
    "schedule": ("schedule.json", [_exp("schedule.py")], schedule),
    "time_to_target": ("time_to_target.json", [_exp("time_to_target.py")], time_to_target),
    "clocks_bandit": ("critical_batch_bandit.json",
                      [_exp("critical_batch.py"), "--model", "bandit", "--seeds", "8"],
                      clocks_bandit),
    "clipping": ("clipping.json", [_exp("clipping.py")], clipping),
    "clipping_regime_map": ("clipping_regime_map.json",
                            [_exp("clipping.py"), "--regime-map", "--seeds", "8", "--clips",
                             "0.1", "0.2", "0.5", "none"], regime_map_figure),
}


# name -> (result file, the command that writes it, for the note, figure builder): drawn from
# a cached file only (`python experiments/<study>.py --out paper_figures/results`)
CACHED_ONLY = {
    "shapes_critical_batch": ("shapes.json", "python experiments/shapes.py",
                              critical_target_figure),
    "shapes_fixed_exponent": ("shapes.json", "python experiments/shapes.py", exponent_figure),
    "policy_study": ("policy_study.json", "python experiments/policy_study.py", study_figure),
    "damage_study": ("damage_study.json", "python experiments/damage_study.py",
                     damage_figure),
    "regime_map": ("regime_map.json", "python experiments/regime_map.py", regime_figure),
}


def cached(result_path: str, command: str, name: str) -> bool:
    """A CACHED_ONLY figure's file is there and current; else one line saying it is skipped."""
    if current(result_path):
        return True
    print(f"skipped {name}: no current {os.path.basename(result_path)} in "
          f"{os.path.dirname(result_path)} (made by `{command} --out "
          f"{os.path.dirname(result_path)}`)", flush=True)
    return False


def current(result_path: str) -> bool:
    """The file exists, reads as a JSON object, and was written under this version's result
    schema. A file that does not read (truncated by a full disk or a killed writer) is named
    in one line and re-simulated."""
    if not os.path.exists(result_path):
        return False
    try:
        result = read_json(result_path)
    except (OSError, ValueError) as e:  # JSONDecodeError, UnicodeDecodeError
        print(f"paper_figures: {result_path} is unreadable ({one_line(e)}); re-simulating it",
              flush=True)
        return False
    return isinstance(result, dict) and result.get("schema") == SCHEMA


def ensure(result_path: str, command: list, force: bool, quiet: bool) -> None:
    if current(result_path) and not force:
        return
    cmd = [sys.executable] + command + ["--json", result_path, "--no-figure", "--quiet",
                                        "--out", os.path.dirname(result_path)]
    print(f"simulating: {' '.join(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c for c in cmd[1:])}",
          flush=True)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL if quiet else None)
    if done.returncode != 0:
        raise SystemExit(f"paper_figures: error: {os.path.basename(command[0])} exited with "
                         f"{done.returncode}")
    print(f"  done in {time.perf_counter() - t0:.0f} s", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m paper_figures", description=__doc__)
    p.add_argument("--results", default=os.path.join(HERE, "results"),
                   help="folder of cached result JSON files")
    p.add_argument("--out", default=os.path.join(HERE, "figures"), help="figure folder")
    p.add_argument("--only", nargs="+", help="figure names: " + ", ".join(
        list(FIGURES) + list(CACHED_ONLY)))
    p.add_argument("--force", action="store_true", help="re-simulate even if results exist")
    p.add_argument("--verbose", action="store_true", help="show the experiments' output")
    ns = p.parse_args(argv)
    names = ns.only or list(FIGURES) + list(CACHED_ONLY)
    bad = [n for n in names if n not in FIGURES and n not in CACHED_ONLY]
    if bad:
        print(f"python -m paper_figures: error: only must be among "
              f"{', '.join(list(FIGURES) + list(CACHED_ONLY))} "
              f"(got {', '.join(bad)})", file=sys.stderr)
        return 2
    try:  # before any experiment runs: a simulation whose results cannot be written is wasted
        check_folder(ns.results, "--results")
        check_folder(ns.out, "--out")
    except Refused as e:
        print(f"python -m paper_figures: error: {e}", file=sys.stderr)
        return 2
    made, forced = [], set()
    for name in names:
        if name in CACHED_ONLY:
            fname, note, build = CACHED_ONLY[name]
            path = os.path.join(ns.results, fname)
            if not cached(path, note, name):
                continue
        else:
            fname, command, build = FIGURES[name]
            path = os.path.join(ns.results, fname)
            ensure(path, command, ns.force and path not in forced, not ns.verbose)
            forced.add(path)
        try:
            figure = build(read_json(path))
            if figure is None:
                print(f"skipped {name}: {fname} has nothing to draw", flush=True)
                continue
        except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
            print(f"python -m paper_figures: error: {path} cannot be drawn as {name} "
                  f"({one_line(e)}); rerun with --force --only {name}", file=sys.stderr)
            return 2
        made += save(figure, os.path.join(ns.out, name))
    print("figures:\n  " + "\n  ".join(os.path.relpath(m) for m in made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
