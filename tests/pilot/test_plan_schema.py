"""plan.json is documented: every key the command writes, in both modes (pilot runs: the
published table and the example RUNS.csv; logged curves: the example log with a clip metric and
smoothing, a progress-only plan, OpenRLHF's runs), is named in docs/results.md's plan.json
section, and every key named there is written by one of these plans; the file carries its
schema version, the one the section states. A key added without its row, or a row left for a
key that went, fails here."""
import json
import os
import re

import pytest

from tests.helpers import plan_main
from tests.pilot.test_first_point_bound import LATE, TWO
from tests.pilot.test_floorout import write_csv
from tests.pilot.test_logs_as_they_are import _log
from tests.pilot.test_logs_minority import RUNS as MINORITY, _log as minority_log
from twoclock.pilot.result import PLAN_SCHEMA

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DATA = os.path.join(ROOT, "twoclock", "data")
DOC = os.path.join(ROOT, "docs", "results.md")
RUNS = {
    "table": [],
    "runs": [os.path.join(DATA, "example_pilot_runs.csv")],
    "logs": ["--logs", os.path.join(DATA, "example_pilot_logs.csv"), "--progress",
             "heldout_acc>=0.75", "--failure", "drift>=2", "--failure", "kl>=1.5", "--failure",
             "heldout_acc<=peak-0.1", "--clip", "clip_frac", "--smooth", "ema:100", "--predict",
             "512", "1024"],
    # a progress-only plan (no failure condition) writes `progress_only`; run B64-s0 is past
    # this target at its first logged point (`logs.progress_first_point`); --eval-items
    # writes `logs.eval_noise`
    "progress": ["--logs", os.path.join(DATA, "example_pilot_logs.csv"), "--progress",
                 "heldout_acc>=0.54", "--smooth", "window:200", "--eval-items", "1000"],
    # two batches timed and a larger one past the target at its first point: its bound is
    # used (`logs.progress_first_point[].used`)
    "bound": ["--progress", "acc>=1", "--smooth", "window:1"],
    # --floor-out on logs that reach their plateaus (`floor_out`), one batch past the target
    "floor": ["--progress", "loss<=0.06", "--progress-form", "adam", "--floor-out", "0",
              "--predict", "4", "64", "--smooth", "window:1"],
    # --progress-form auto writes which form it chose (`logs.progress_form`); a local
    # quadratic writes `logs.smoothing.points`
    "auto": ["--logs", os.path.join(DATA, "example_pilot_logs.csv"), "--progress",
             "heldout_acc>=0.7", "--progress-form", "auto", "--smooth", "quad:5"],
    # a batch where one of four runs reaches the target (`logs.progress_minority`)
    # ... and Adam's form at 64 updates a rollout batch, inside the first batch
    # (`predictions[].first_batch`), under another rule than the pilots' (`fit.pilots_rule`)
    "minority": ["--progress", "acc>=1", "--predict", "128", "8192:64", "--smooth", "window:1",
                 "--progress-form", "adam", "--predict-rule", "sqrt:0.01@16"],
    # OpenRLHF's TensorBoard runs, whose K nothing gives (`logs.updates_unknown`)
    "openrlhf": ["--logs", os.path.join(ROOT, "tests", "data", "trainer_logs", "openrlhf"),
                 "--preset", "openrlhf", "--progress", "heldout_acc>=0.3", "--smooth",
                 "window:1"],
}


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    main, out = plan_main("plan_script_schema"), {}
    for mode, args in RUNS.items():
        d = tmp_path_factory.mktemp(mode)
        if mode == "bound":  # the log of test_first_point_bound, written here
            args = ["--logs", _log(d / "l.csv", TWO + [LATE])] + args
        if mode == "minority":  # the log of test_logs_minority, written here
            args = ["--logs", minority_log(d / "l.csv", MINORITY)] + args
        if mode == "floor":  # the synthetic log of test_floorout, written here
            args = ["--logs", write_csv(d / "l.csv", points=120)] + args
        assert main(args + ["--no-figure", "--out", str(d)]) == 0
        with open(d / "plan.json") as f:
            out[mode] = json.load(f)
    return out


def _section() -> str:
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    start = text.index("\n## plan.json\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _documented() -> dict:
    """{key: shape or None} from the section's tables: a row's first cell names one or more
    keys (`a.b`, `x[]`, `<shape>.k`); a meaning that starts with `<shape>` gives them it."""
    doc = {}
    for line in _section().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| `") or len(cells) != 3:
            continue
        shape = re.match(r"`<(\w+)>`", cells[1])
        for key in re.findall(r"`([^`]+)`", cells[0]):
            assert key not in doc, f"{key} documented twice"
            assert cells[1] and cells[2], f"{key}: a row needs its meaning and its unit"
            doc[key] = shape.group(1) if shape else None
    return doc


def _paths(value, conditions, path="", parent=""):
    """Every leaf's key path: list items as `[]` (a list of values, or an empty one, is the
    leaf), a condition's text as {CONDITION}, a form's name under by_form / sse_log as {FORM}."""
    if isinstance(value, dict):
        for k, v in value.items():
            seg = ("{CONDITION}" if k in conditions else
                   "{FORM}" if parent in ("by_form", "sse_log") else k)
            yield from _paths(v, conditions, f"{path}.{seg}" if path else seg, k)
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        for v in value:
            yield from _paths(v, conditions, path + "[]", parent)
    else:
        yield path


def _resolve(path: str, doc: dict, seen: set) -> bool:
    """Whether path is documented: named, or under a key of a shape (or a list of it) whose
    rows name the rest, recursively; every name it was resolved through is added to seen."""
    if path in doc:
        seen.add(path)
        return True
    for key, shape in doc.items():
        rest = path[len(key):]
        if shape and path.startswith(key) and rest[:1] in (".", "["):
            rest = rest[2:] if rest.startswith("[]") else rest  # a list of the shape
            if _resolve(f"<{shape}>{rest}", doc, seen):
                seen.add(key)
                return True
    return False


def test_plan_json_has_its_schema_version_in_both_modes(plans):
    for mode, out in plans.items():
        assert list(out)[0] == "schema" and out["schema"] == PLAN_SCHEMA, mode
    row = next(line for line in _section().splitlines() if line.startswith("| `schema`"))
    assert f"version, {PLAN_SCHEMA};" in row  # the section states the version the code writes


def test_every_key_of_plan_json_is_documented_and_every_documented_key_written(plans):
    doc, seen, missing = _documented(), set(), set()
    assert len(doc) > 100 and "schema" in doc
    for out in plans.values():
        conditions = set(out["logs"]["failures"]) | {out["logs"]["progress"]} \
            if "logs" in out else set()
        for path in _paths(out, conditions):
            if not _resolve(path, doc, seen):
                missing.add(path)
    assert not missing, "keys of plan.json missing from docs/results.md: " + \
        ", ".join(sorted(missing))
    stale = {k for k in doc if k not in seen and not any(
        s.startswith(k + ".") or s.startswith(k + "[") for s in seen)}
    assert not stale, "docs/results.md names keys no plan wrote: " + ", ".join(sorted(stale))
