"""A paired contrast of two practitioner-design calibrations (the same designs planned two
ways): `python experiments/plan_contrast.py BASE.json OTHER.json`, each the plan_calibration.json
of `plan_calibration.py --design practitioner [--progress-form adam]`. Prints, per model, rule
and held-out batch, the mean paired |log error| difference with a 95% bootstrap CI over designs
(twoclock.studies.planner.paired.contrast; the tables in docs/plan.md and docs/history/plan.md)."""
import json
import sys

from twoclock.studies.planner.paired import contrast, contrast_table


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("plan_contrast.py: give BASE.json OTHER.json", file=sys.stderr)
        return 2
    outs = []
    for path in argv:
        with open(path) as f:
            outs.append(json.load(f))
    name = lambda o: o.get("progress_form") or "default"
    print(contrast_table(contrast(outs[0]["rows"], outs[1]["rows"]), name(outs[0]),
                         name(outs[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
