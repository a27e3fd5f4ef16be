"""The exponent envelope's before/after table on the practitioner design (docs/plan.md, "The
exponent envelope"; the full table in docs/history/plan.md): `python tools/envelope_table.py [--models quadratic bandit] [--out DIR]`.

Runs experiments/plan_calibration.py --design practitioner four times, both progress forms
with the envelope off (pilot.envelope.ON = False) and on, on the same simulated logs, and
prints per model and rule: coverage of the 95% bands, median width factor (over both held-out
batches, and at 2x and 8x apart), median |error| at 2x and 8x, before -> after."""
import argparse
import contextlib
import io
import json
import os

import numpy as np

from twoclock.cli import run_study
from twoclock.pilot import envelope
from twoclock.studies import STUDIES


def widths(rows, s: dict) -> dict:
    """s with the median width factor at 2x and at 8x over its scored predictions."""
    out = dict(s)
    for t in (2, 8):
        w = sorted(r["width"] for r in rows if r.get("width") is not None
                   and r["times_largest_pilot"] == t and s["model"] in ("all", r["model"])
                   and s["rule"] in ("both", r["rule"]))
        out[f"width_{t}x"] = float(np.median(w)) if w else None
    return out


def measure(models, form, on: bool, out: str) -> list:
    """The practitioner summary rows with the envelope on or off (widths at 2x, 8x added)."""
    folder = os.path.join(out, f"{form}_{'on' if on else 'off'}")
    argv = ["--design", "practitioner", "--models", *models, "--out", folder, "--quiet",
            "--no-figure"] + ([] if form == "default" else ["--progress-form", form])
    was = envelope.ON
    envelope.ON = on
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            run_study.main(STUDIES.plan_calibration, argv)
    finally:
        envelope.ON = was
    with open(os.path.join(folder, "plan_calibration.json")) as f:
        got = json.load(f)
    return [widths(got["rows"], s) for s in got["summary"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=["quadratic", "bandit"])
    ap.add_argument("--out", default="results/envelope_table")
    a = ap.parse_args(argv)
    pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"
    x = lambda v: "-" if v is None else f"x{v:.2f}"
    print("practitioner design, exponent envelope off -> on (same logs); cov: 95% bands' "
          "coverage; width: median max(median/low, high/median); |err|: median at 2x, 8x")
    print(f"{'form':<8}{'model':<10}{'rule':<6}{'cov 95%':>16}{'med width':>16}"
          f"{'width 2x':>16}{'width 8x':>16}{'|err| 2x':>16}{'|err| 8x':>16}")
    for form in ("default", "adam"):
        off, on = (measure(a.models, form, s, a.out) for s in (False, True))
        for b, n in zip(off, on):
            pair = lambda k, f: f"{f(b[k])} -> {f(n[k])}"
            print(f"{form:<8}{b['model']:<10}{b['rule']:<6}"
                  f"{pair('coverage_95', pct):>16}{pair('median_width', x):>16}"
                  f"{pair('width_2x', x):>16}{pair('width_8x', x):>16}"
                  f"{pair('median_abs_error_2x', pct):>16}{pair('median_abs_error_8x', pct):>16}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
