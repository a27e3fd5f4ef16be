"""A public batch sweep stored as logged curves (twoclock/data/real/<sweep>/curves.csv), scored
pre-registered: the planner reads the pilots' curves as a user would (`plan.py --logs`), and
predicts the held-out batches' clocks, read from their curves the same way. No JAX.

    python tools/real_curves.py extract TB_DIR OUT.csv    # the TensorBoard runs -> curves.csv
    python tools/real_curves.py predict SWEEP OUT.json    # pilots only; refuses an existing OUT
    python tools/real_curves.py score PREDICTIONS.json OUT.json
    python tools/real_curves.py exponent SWEEP LEVEL B_FROM   # the sweep's growth past B_FROM
    python tools/real_curves.py ingest MIRRORS          # the homework sweeps in FOUND -> folders
    python tools/real_curves.py predict-set OUT.json [EARLIER.json ...]  # every ingested sweep's
                                                        # predictions, but the earlier files'
    python tools/real_curves.py score-set PREDICTIONS.json OUT.json
    python tools/real_curves.py pool MEASURED.json ...  # several score-set files, pooled

The sweep's design.json fixes, before any prediction: the metric, the level grid of targets,
and the designs (pilot batches, held-out batches). `predict` reads only the pilots' rows: a
design's targets are the grid's levels that every pilot crosses between two logged points (not
at its first), and at each it writes
- the planner's Adam form (`progress_form="adam"`, the lr rule read from the pilots), its
  median and 95% band at each held-out batch;
- the planner's default forms (saturation or curvature);
- the joint fit of the design's targets (twoclock/pilot/levels.py), Adam's form;
- two baselines refitted on the pilots' clocks (tools/real_sweep.py): McCandlish's N = N_min
  (1 + B / B_noise), and the obvious rule, the largest pilot's clock times (B / B_top)^(1 - p).
Commit its file before running `score`, which reads the held-out curves: each held-out run's
clock is its first logged crossing, linear in samples (twoclock.pilot.clocks.crossing, the
planner's own reading), "never" where its curve does not reach the level; a batch of several
runs (seeds) is read as their median, for pilots and held-out batches alike.
"""
import csv
import json
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/ is not a package
from real_sweep import DATA, mccandlish_fit, mccandlish_predict, obvious_rule  # noqa: E402
from score_real import paired_cis, write_once  # noqa: E402
from twoclock.atomic import atomic_write  # noqa: E402
from twoclock.pilot import api, bands, levels  # noqa: E402
from twoclock.pilot.clocks import crossing  # noqa: E402
from twoclock.pilot.conditions import parse_condition  # noqa: E402
from twoclock.pilot.plan import PilotError  # noqa: E402

LEVEL = 0.95
METHODS = ("adam", "default", "joint", "mccandlish", "obvious_rule")


# ------------------------------------------------------------------------------------ the data

def curve_rows(tb_dir: str, batch_re: str, lr: float, samples_tag: str, tags,
               source: str) -> list:
    """Every TensorBoard run under tb_dir as rows of curves.csv (its header first): run (its
    folder), batch (from its name by batch_re), lr, step, samples (the samples_tag scalar),
    the tags and the source key (the README's), by batch and step."""
    import re
    from twoclock.pilot import tbfiles
    rows = []
    for name, _, by_step, _, _ in tbfiles.runs(tb_dir, tbfiles.event_dirs(tb_dir), []):
        b = int(re.search(batch_re, name).group(1))
        for step in sorted(by_step):
            v = by_step[step]
            rows.append([name, b, f"{lr:g}", step, f"{v[samples_tag]:.0f}",
                         *(f"{v[t]:.9g}" for t in tags), source])
    rows.sort(key=lambda r: (r[1], r[3]))
    return [["run", "batch", "lr", "step", "samples", *tags, "source"]] + rows


def write_rows(out: str, rows: list) -> None:
    atomic_write(out, lambda f: csv.writer(f, lineterminator="\n").writerows(rows))


def extract(tb_dir: str, out: str, batch_re: str, lr: float, samples_tag: str, tags,
            source: str) -> int:
    """curve_rows written to out; rows written (the header not counted)."""
    rows = curve_rows(tb_dir, batch_re, lr, samples_tag, tags, source)
    write_rows(out, rows)
    return len(rows) - 1


def read_curves(sweep: str) -> tuple:
    """(design.json, {batch: [each run's {run, lr, samples, metric}]}) of a stored curves
    sweep (several runs at a batch: seeds)."""
    folder = os.path.join(DATA, sweep)
    if not os.path.isfile(os.path.join(folder, "curves.csv")):
        raise SystemExit(f"sweep: no curves.csv under twoclock/data/real/{sweep}")
    with open(os.path.join(folder, "design.json"), encoding="utf-8") as f:
        meta = json.load(f)
    rows = {}
    with open(os.path.join(folder, "curves.csv"), newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            rows.setdefault(float(r["batch"]), {}).setdefault(r["run"], []).append(r)
    out = {}
    for b, by_run in rows.items():
        out[b] = [{"run": name, "lr": float(rs[0]["lr"]),
                   "samples": np.array([float(r["samples"]) for r in rs]),
                   "metric": np.array([float(r[meta["metric"]]) for r in rs])}
                  for name, rs in by_run.items()]
    return meta, out


def clock(run: dict, text: str) -> tuple:
    """(samples at the first logged crossing of the condition, index of the first point that
    meets it; None: never, 0: at the first logged point)."""
    at, i = crossing(run["samples"], run["metric"], parse_condition(text, "--progress"))
    return (float(at) if i is not None else None), i


def batch_clock(rs: list, text: str) -> tuple:
    """(the median clock of a batch's runs, None where that median never comes; whether
    every run crossed between two logged points; whether some run met it at its first)."""
    got = [clock(r, text) for r in rs]
    med = float(np.median([math.inf if n is None else n for n, _ in got]))
    return ((med if math.isfinite(med) else None), all(i is not None and i > 0 for _, i in got),
            any(i == 0 for _, i in got))


def table(runs: dict, batches, metric: str) -> dict:
    """The runs at `batches` as the planner's in-memory log table."""
    cols = {"run": [], "batch": [], "lr": [], "samples": [], metric: []}
    for b in batches:
        for r in runs[b]:
            n = r["samples"].size
            cols["run"] += [r["run"]] * n
            cols["batch"] += [b] * n
            cols["lr"] += [r["lr"]] * n
            cols["samples"] += r["samples"].tolist()
            cols[metric] += r["metric"].tolist()
    return cols


# ------------------------------------------------------------- the homework sweeps, ingested

# Course-homework sweeps of vanilla policy gradient on InvertedPendulum (CS285 / CMU 16-831 HW2)
# whose TensorBoard files were committed: (repository, commit, folder, the run folders' pattern
# with the batch and the lr as groups 1 and 2). A sweep is every lr with >= MIN_BATCHES batch
# sizes (empty event files left out; a batch launched more than once at the lr: its last
# launch, `sweeps_in`).
FOUND = [
    ("zackli0001/16831_F23_HW", "d31733876a4256f685f555602fa014d5439c949b", "hw2/data",
     r"^q2_b(\d+)_r([\d.e-]+)_InvertedPendulum-v4_\S+$"),
    ("Karesto/DRL-IASD", "a0a7c89c36ab9a7875ef6ebab220e262d54b39ca", "hw2/run_logs",
     r"^q2_pg_q4_search_b(\d+)_lr([\d.]+)_rtg_nnbaseline_InvertedPendulum-v2_\S+$"),
    ("LeslieTrue/cs285_fall22_hw_sol", "9a799a87c8faa2fc2c35d6ac6aed1ef1b14647d6", "hw2/data",
     r"^q2_pg_q2_b(\d+)_r([\d.]+)_InvertedPendulum-v4_\S+$"),
    ("saudag-28/16831-F24-HW", "900b7b349a3d80369e4c43f57ca3e89c5ba61fde", "hw2/data",
     r"^q2_b(\d+)_r([\d.]+)_InvertedPendulum-v4_\S+$"),
    ("ChocolateDave/cs285_homework_fall2022", "f2e530f0fe4632bd6a8f83a1d8c49d9098e11386",
     "hw2/data", r"^q2_pg_q2_b(\d+)_r([\d.]+)_InvertedPendulum-v4_\S+$"),
    ("sean-metzger/homework_fall2020", "be69a2f3519b07bb0f51bc69d31a18e93f84ceba",
     "hw2/run_logs", r"^q2_b(\d+)_r([\d.]+)_InvertedPendulum-v2_\S+$"),
    ("ZihanWang314/homework_fall2022", "0242c188296094dab04077aaf1e6ea46262df87a", "hw2/data",
     r"^q2_pg_q2_b(\d+)_r([\d.e-]+)_InvertedPendulum-v4_\S+$"),
    ("GeoffNN/c285-HW", "7eaacf323faf50021ae044e6e450e3bc2c8a2ac3", "hw2/data",
     r"^q2_pg_q2_b(\d+)_r([\d.]+)_InvertedPendulum-v4_\S+$"),
    ("Shawn207/16831-F24-HW", "edf863cddbd48a831f406d38d4620cd98b3fce03", "hw2/data",
     r"^q2_b_(\d+)_r_([\d.e-]+)_InvertedPendulum-v4_\S+$"),
    ("romerik/robot-learning-cmu", "24b94b0c37d83d505d100f4d91fe4b46aa17d6e3", "hw2/data",
     r"^q2_b(\d+)_r(\de_\d)_InvertedPendulum-v4_\S+$"),  # lr 3e_2: 3e-2
    ("stablegradients/16-831", "91ca580ea5878e045fa2040d3df327a0567de842", "hw2/data/q_5_2",
     r"^q2_b(\d+)_r([\d.]+)_seed(?P<seed>\d+)_InvertedPendulum-v4_\S+$"),  # 4 seeds a batch
]
MIN_BATCHES = 5
LEVELS = list(range(100, 1001, 100))  # Eval_AverageReturn: a return is steps up, at most 1000
TAGS = ("Eval_AverageReturn", "Train_AverageReturn")
EMPTY = 1000  # bytes: an event file this small holds no step


def designs_for(batches) -> list:
    """The designs, from the batches alone: the three smallest as pilots, every larger batch
    held out; and, where at least four batches are >= 1000 steps (an update's overshoot of
    whole episodes, up to 999 steps, is then at most about its batch) and they are not the
    first design's pilots, the three smallest of those as pilots, every larger batch held
    out."""
    bs = sorted(float(b) for b in batches)
    out = [{"name": "smallest three", "pilots": bs[:3], "held_out": bs[3:]}]
    big = [b for b in bs if b >= 1000]
    if len(big) >= 4 and big[:3] != bs[:3]:
        out.append({"name": "smallest three from 1000", "pilots": big[:3], "held_out": big[3:]})
    return out


def launched(folder: str) -> tuple:
    """A run folder's launch time from its name's trailing dd-mm-yyyy_HH-MM-SS, as (year,
    month, day, hour, minute, second); () where it has none."""
    import re
    m = re.search(r"(\d{2})-(\d{2})-(\d{4})_(\d{2})-(\d{2})-(\d{2})$", folder)
    return () if m is None else tuple(int(m.group(i)) for i in (3, 2, 1, 4, 5, 6))


def sweeps_in(listing, pattern: str) -> dict:
    """{lr text: {batch: {seed: [folders, the one kept first]}}} of a repository folder's run
    folders (listing: (folder, event file bytes) pairs) matching pattern (the batch and the lr
    its groups 1 and 2; a group named `seed`, where the pattern has one, tells seeds apart,
    else every run of a batch is one seed's, None): empty event files dropped; where a seed
    was launched more than once at a batch and lr, its last launch kept (the latest time in
    its name; the others follow it); the lrs with >= MIN_BATCHES batches."""
    import re
    runs = {}
    for folder, size in listing:
        m = re.match(pattern, folder)
        if m and size >= EMPTY:
            seed = m.groupdict().get("seed")
            runs.setdefault(m.group(2), {}).setdefault(int(m.group(1)), {}).setdefault(
                seed, []).append(folder)
    order = lambda v: sorted(v, key=lambda f: (launched(f), f), reverse=True)
    return {lr: {b: {k: order(v) for k, v in seeds.items()} for b, seeds in bs.items()}
            for lr, bs in runs.items() if len(bs) >= MIN_BATCHES}


def stopped_early(counts: dict) -> set:
    """The runs (of {run: logged steps}) that logged fewer than half the longest run's steps:
    stopped, not censored by the sweep's length."""
    top = max(counts.values())
    return {r for r, n in counts.items() if 2 * n < top}


def sweep_name(repo: str, lr: str) -> str:
    owner = repo.split("/")[0].lower().replace("-", "_")
    return f"invpend_pg_{owner}_lr{lr.replace('.', 'p').replace('-', 'm')}"


def ingest(mirrors: str) -> list:
    """Each FOUND sweep from its repository's mirror (MIRRORS/<owner>+<repo>/repo, a git
    directory) into twoclock/data/real/<sweep_name>/: curves.csv, design.json, README.md."""
    import subprocess
    import tempfile
    made = []
    for repo, commit, folder, pattern in FOUND:
        git = os.path.join(mirrors, repo.replace("/", "+"), "repo")
        ls = subprocess.run(["git", "-C", git, "ls-tree", "-r", "-l", commit, "--", folder],
                            capture_output=True, text=True, check=True).stdout
        files = {}
        for line in ls.splitlines():
            meta, path = line.split("\t")
            if "tfevents" in path:
                run = path[len(folder) + 1:].split("/")[0]
                files.setdefault(run, []).append((path, int(meta.split()[3])))
        listing = [(run, sum(s for _, s in fs)) for run, fs in files.items()]
        for lr, launches in sorted(sweeps_in(listing, pattern).items()):
            kept = [v[0] for seeds in launches.values() for v in seeds.values()]
            name = sweep_name(repo, lr)
            out = os.path.join(DATA, name)
            with tempfile.TemporaryDirectory() as tmp:
                for run in kept:
                    os.makedirs(os.path.join(tmp, run))
                    for path, _ in files[run]:
                        blob = subprocess.run(["git", "-C", git, "show", f"{commit}:{path}"],
                                              capture_output=True, check=True).stdout
                        with open(os.path.join(tmp, run, os.path.basename(path)), "wb") as f:
                            f.write(blob)
                rows = curve_rows(tmp, pattern, float(lr.replace("_", "-")),
                                  "Train_EnvstepsSoFar", TAGS, f"tb_{commit[:8]}")
            counts = {}
            for r in rows[1:]:
                counts[r[0]] = counts.get(r[0], 0) + 1
            early = stopped_early(counts)
            rows = [rows[0]] + [r for r in rows[1:] if r[0] not in early]
            batches = sorted({int(r[1]) for r in rows[1:]})
            if len(batches) < MIN_BATCHES:
                continue
            os.makedirs(out, exist_ok=True)
            write_rows(os.path.join(out, "curves.csv"), rows)
            n = len(rows) - 1
            design = {"metric": "Eval_AverageReturn", "levels": LEVELS,
                      "designs": designs_for(batches),
                      "fixed_before": "the predictions: made by tools/real_curves.py "
                                      "designs_for from the batches alone"}
            atomic_write(os.path.join(out, "design.json"),
                         lambda f: (json.dump(design, f, indent=1), f.write("\n")))
            atomic_write(os.path.join(out, "README.md"),
                         lambda f: f.write(readme(repo, commit, folder, lr, launches,
                                                  early)))
            made.append((name, n))
    return made


def readme(repo, commit, folder, lr, launches, early=()) -> str:
    bs = sorted(b for b, v in launches.items() if any(x[0] not in early for x in v.values()))
    seeds = max(len(v) for v in launches.values())
    note = lambda v: ", ".join(x for x in (
        "" if len(v) == 1 else f"the last of {len(v)} launches; left out: " +
        ", ".join(f"`{x}`" for x in v[1:]),
        "left out: stopped early" if v[0] in early else "") if x)
    rows = "\n".join(f"| {b} | `{v[0]}` | {note(v)} |" for b in sorted(launches)
                      for _, v in sorted(launches[b].items(), key=lambda kv: str(kv[0])))
    first = next(iter(launches[bs[0]].values()))[0]
    baseline = (" The folder names say reward-to-go with a learned baseline (`rtg_nnbaseline`)."
                if "nnbaseline" in first else "")
    each = "one run each" if seeds == 1 else f"{seeds} seeds each"
    return f"""# Policy-gradient batch sweep: InvertedPendulum, `{repo}`, lr {lr} (logged curves)

Policy gradient on InvertedPendulum at {len(bs)} batches from {bs[0]} to {bs[-1]} environment
steps per update, {each} at a fixed lr of {lr}: a course homework (CS285 / CMU 16-831, homework
2) whose TensorBoard event files were committed. Every number here is read from them.

## Source

Repository `{repo}` (GitHub), commit `{commit}`, folder `{folder}/`.

| key | where |
|---|---|
| `tb_{commit[:8]}` | the TensorBoard event file of the row's run (its `run` column is the run's folder under `{folder}/`) at commit `{commit}`: the scalars `Train_EnvstepsSoFar`, `Eval_AverageReturn`, `Train_AverageReturn` of the row's step |

The runs (where a run was launched more than once, the last launch by the time in its
folder's name; a run that logged fewer than half the longest run's steps is left out as
stopped early):

| batch | folder | |
|---|---|---|
{rows}

## Settings

The folder names give the batch (environment steps collected per iteration, in whole episodes)
and the lr.{baseline} The other settings (episode length, discount, network, optimizer, seed)
are the homework's and are not read from the repository here. `samples` is the logged
`Train_EnvstepsSoFar`; the evaluation is logged after every update, none before the first.

## Files

`curves.csv`: one row per logged iteration of each run: `run`, `batch`, `lr`, `step`,
`samples`, `Eval_AverageReturn`, `Train_AverageReturn` and `source`. `design.json`: the
metric, the target levels and the designs, made from the batches alone before any prediction
(`python tools/real_curves.py ingest MIRRORS` writes all three from the repositories).
"""


# ------------------------------------------------------------------------------------ predict

def _bands(plan: dict) -> dict:
    return {p["batch"]: {"median": p["progress_samples"]["median"],
                         "band": p["progress_samples"]["ci"]} for p in plan["predictions"]}


def _plan(tab, text, held, form, smoothing=None):
    try:
        return api.plan_logs(tab, text, [], predict=list(held), progress_form=form,
                             smoothing=smoothing).to_json()
    except PilotError as e:
        return str(e)


def predict_design(meta: dict, runs: dict, d: dict, sharp: bool = False,
                   smoothing: str | None = None) -> dict:
    """One design's targets and each method's predictions at its held-out batches (sharp: the
    joint fit fits the knee's sharpness too; smoothing: the planner's --smooth for its plans,
    the targets still chosen from the curves as logged)."""
    pilots, held, metric = [float(b) for b in d["pilots"]], [float(b) for b in d["held_out"]], \
        meta["metric"]
    tab = table(runs, pilots, metric)
    lr = [runs[b][0]["lr"] for b in pilots]
    p = math.log(lr[-1] / lr[0]) / math.log(pilots[-1] / pilots[0])  # the pilots' lr ~ B^p
    targets, skipped, plans = [], {}, {}
    for level in meta["levels"]:
        text = f"{metric}>={level:g}"
        got = {b: [clock(r, text) for r in runs[b]] for b in pilots}
        never = [b for b in pilots if any(i is None for _, i in got[b])]
        if never:
            skipped[text] = "not reached by pilot B " + ", ".join(f"{b:g}" for b in never)
            continue
        first = [b for b in pilots if any(i == 0 for _, i in got[b])]
        if first:
            skipped[text] = "pilot B " + ", ".join(f"{b:g}" for b in first) + \
                " meets it at its first point"
            continue
        n_p = [float(np.median([n for n, _ in got[b]])) for b in pilots]  # each batch's median
        plans[text] = {f: _plan(tab, text, held, f, smoothing) for f in ("adam", None)}
        mc = mccandlish_fit(pilots, n_p)
        targets.append({"target": text, "pilot_samples": dict(zip(map(str, pilots), n_p)),
                        "mccandlish_fit": mc, "predictions": {
                            str(b): {"mccandlish": mccandlish_predict(mc, b),
                                     "obvious_rule": obvious_rule(pilots[-1], n_p[-1], b, p)}
                            for b in held}})
    texts = [t["target"] for t in targets]
    ok = [t for t in texts if not isinstance(plans[t]["adam"], str)]
    joint = None
    if len(ok) >= 2:
        try:
            joint = levels.joint_plan(ok, [plans[t]["adam"] for t in ok], held, LEVEL, sharp)
        except PilotError as e:
            joint = str(e)
    for t in targets:
        for name, pl in (("adam", plans[t["target"]]["adam"]),
                         ("default", plans[t["target"]][None])):
            for b in held:
                t["predictions"][str(b)][name] = pl if isinstance(pl, str) else _bands(pl)[b]
        row = None if not isinstance(joint, dict) or t["target"] not in ok else \
            _bands(joint["targets"][ok.index(t["target"])])
        for b in held:
            t["predictions"][str(b)]["joint"] = (row[b] if row is not None else
                                                 joint if isinstance(joint, str) else
                                                 "not in the joint fit")
    return {"name": d["name"], "pilots": pilots, "held_out": held, "lr_exponent_p": p,
            "skipped_targets": skipped, "targets": targets}


def predict(sweep: str, out: str) -> dict:
    write_once(out)
    meta, runs = read_curves(sweep)
    doc = {"sweep": sweep, "metric": meta["metric"], "level": LEVEL,
           "clock": "first logged crossing, linear in samples (the planner's reading)",
           "methods": {"adam": "plan_logs(progress_form='adam') on the pilots' curves",
                       "default": "plan_logs on the pilots' curves, forms as they are",
                       "joint": "levels.joint_plan over the design's targets, Adam's form",
                       "mccandlish": "N = N_min (1 + B / B_noise) refitted on the pilots' "
                                     "clocks, least squares in log N",
                       "obvious_rule": "the largest pilot's clock x (B / B_top)^(1 - p)"},
           "designs": [predict_design(meta, runs, d) for d in meta["designs"]]}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


# -------------------------------------------------------------------------------------- score

def score_rows(pre: dict, methods=METHODS) -> list:
    """One sweep's predictions scored against its held-out curves: a row per design, target
    and held-out batch, for each of `methods`."""
    _, runs = read_curves(pre["sweep"])
    rows = []
    for d in pre["designs"]:
        top = d["pilots"][-1]
        for t in d["targets"]:
            for b, pr in t["predictions"].items():
                truth, _, first = batch_clock(runs[float(b)], t["target"])
                row = {"design": d["name"], "target": t["target"], "batch": float(b),
                       "x_largest_pilot": float(b) / top, "truth": truth,
                       "truth_at_first_point": first}
                for m in methods:
                    v = pr[m]
                    if isinstance(v, str):
                        row[m] = {"refused": v}
                        continue
                    med = v if isinstance(v, float) else v["median"]
                    s = {"median": med, "error": None if truth is None else med / truth - 1}
                    if isinstance(v, dict):
                        band = v["band"]
                        s["covered"] = truth is not None and band[0] is not None and \
                            band[0] <= truth and (band[1] is None or truth <= band[1])
                        s["width"] = bands.width({"median": med, "ci": band})
                    row[m] = s
                rows.append(row)
    return rows


def score(pred_path: str, out: str) -> dict:
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    rows = score_rows(pre)
    doc = {"predictions": pred_path, "rows": rows, "summary": summary(rows),
           "contrasts": contrasts(rows)}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


# the ingested homework sweeps (FOUND), scored together
BUCKETS = ((1.0, 2.0), (2.0, 4.0), (4.0, math.inf))  # held-out batch over the largest pilot


def ingested() -> list:
    """The sweeps `ingest` wrote (their design.json says so), by name."""
    out = []
    for name in sorted(os.listdir(DATA)):
        path = os.path.join(DATA, name, "design.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                if "designs_for" in json.load(f).get("fixed_before", ""):
                    out.append(name)
    return out


def predict_set(out: str, after=()) -> dict:
    """Every ingested sweep's predictions, but those of the earlier predictions files `after`
    (a sweep is pre-registered once)."""
    write_once(out)
    seen = set()
    for path in after:
        with open(path, encoding="utf-8") as f:
            seen |= {sw["sweep"] for sw in json.load(f)["sweeps"]}
    sweeps = []
    for name in (n for n in ingested() if n not in seen):
        meta, runs = read_curves(name)
        sweeps.append({"sweep": name, "metric": meta["metric"],
                       "designs": [predict_design(meta, runs, d) for d in meta["designs"]]})
    doc = {"what": "every ingested homework sweep (tools/real_curves.py FOUND), predicted from "
                   "its pilots' curves alone", "level": LEVEL, "buckets": BUCKETS,
           "sweeps": sweeps}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    return doc


def bucket(x: float) -> str:
    lo, hi = next((a, b) for a, b in BUCKETS if a < x <= b)
    return f"({lo:g}, {hi:g}]x"


def by_bucket(rows, methods=METHODS) -> dict:
    """Rows of several sweeps: themselves, summarised by bucket (summary's "design" the
    bucket), and the paired contrasts with a CI over the sweeps."""
    pool = [dict(r, design=bucket(r["x_largest_pilot"]), batch=0.0) for r in rows]
    return {"rows": rows, "by_bucket": sorted(summary(pool, methods), key=lambda s: s["design"]),
            "contrasts": contrasts(rows, group="sweep", methods=methods)}


def score_set(pred_path: str, out: str) -> dict:
    with open(pred_path, encoding="utf-8") as f:
        pre = json.load(f)
    rows = []
    for sw in pre["sweeps"]:
        rows += [{"sweep": sw["sweep"], **r} for r in score_rows(sw)]
        atomic_write(out + ".partial", lambda f: json.dump(rows, f, indent=1))
    doc = {"predictions": pred_path, **by_bucket(rows)}
    atomic_write(out, lambda f: (json.dump(doc, f, indent=1), f.write("\n")))
    os.remove(out + ".partial")
    return doc


def summary(rows, methods=METHODS) -> list:
    """Per design and held-out batch: each method's median |error|, 95% coverage (a truth
    never reached counts as a miss) and median width, over the targets."""
    out = []
    for key in dict.fromkeys((r["design"], r["batch"]) for r in rows):
        rs = [r for r in rows if (r["design"], r["batch"]) == key]
        s = {"design": key[0], "batch": key[1], "x_largest_pilot": rs[0]["x_largest_pilot"],
             "targets": len(rs), "never": sum(r["truth"] is None for r in rs)}
        for m in methods:
            got = [r[m] for r in rs if "refused" not in r[m]]
            err = [abs(g["error"]) for g in got if g["error"] is not None]
            cov = [g["covered"] for g in got if "covered" in g]
            wid = [g["width"] for g in got if "width" in g]
            s[m] = {"answered": len(got),
                    "median_abs_error": float(np.median(err)) if err else None,
                    "coverage_95": float(np.mean(cov)) if cov else None,
                    "median_width": float(np.median(wid)) if wid else None}
        out.append(s)
    return out


def contrasts(rows, group: str | None = None, methods=METHODS) -> dict:
    """|log(pred / true)| of the Adam form minus each other method's, paired over the
    predictions every method answered with a truth (tools/score_real.py's paired_cis: CIs over
    the pairs and over the groups: each design and target, or the rows' `group` key)."""
    ok = [r for r in rows if r["truth"] is not None and
          all("refused" not in r[m] for m in methods)]
    if len(ok) < 3:
        return {"n": len(ok), "reading": "too few predictions answered by every method"}
    ratio = lambda m: [r[m]["median"] / r["truth"] for r in ok]
    groups = [r[group] if group else f"{r['design']} {r['target']}" for r in ok]
    if len(set(groups)) < 2:  # no spread over groups to bound the contrast with
        return {"n": len(ok), "reading": f"one group ({groups[0]}): no CI over groups"}
    return {m: paired_cis(ratio(methods[0]), ratio(m), groups) for m in methods[1:]}


def exponent(runs: dict, text: str, b_from: float) -> dict:
    """The least-squares slope of log N on log B over the batches from b_from on whose runs all
    cross the condition between two logged points (a run that never reaches it, or meets it
    at its first point, has no clock; several runs: their median), with its Student-t 95% CI
    (the scatter about the line is the noise)."""
    from twoclock.pilot.fit import t_quantile
    pts = [(b, *batch_clock(runs[b], text)) for b in sorted(runs) if b >= b_from]
    pts = [(b, n) for b, n, between, _ in pts if between]
    if len(pts) < 3:
        raise SystemExit(f"exponent: {len(pts)} runs from B {b_from:g} reach {text}; need 3")
    x, y = (np.log([p[i] for p in pts]) for i in (0, 1))
    slope, icpt = np.polyfit(x, y, 1)
    dof = len(pts) - 2
    r = y - (icpt + slope * x)
    se = math.sqrt(float(r @ r) / dof / float(((x - x.mean()) ** 2).sum())) if dof else math.inf
    half = t_quantile(0.975, dof) * se if dof else math.inf
    return {"runs": len(pts), "batches": [p[0] for p in pts], "slope": float(slope),
            "ci": [float(slope - half), float(slope + half)]}


def _k(x) -> str:
    return f"{x / 1000:.1f}k"


def markdown(doc: dict, pre: dict) -> str:
    """The scored rows (truth, the Adam form's median and band, each method's error) and the
    summary, as docs/real_runs.md shows them."""
    bands_ = {(d["name"], t["target"], float(b)): pr["adam"] for d in pre["designs"]
              for t in d["targets"] for b, pr in t["predictions"].items()}
    out = ["| design | target | held-out B (x largest pilot) | true samples | Adam [95% band] "
           "| Adam | default forms | joint | McCandlish | obvious rule |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        a = bands_[(r["design"], r["target"], r["batch"])]
        out.append(f"| {r['design']} | {r['target'].split('>=')[1]} | {r['batch']:g} "
                   f"({r['x_largest_pilot']:.3g}x) | {_k(r['truth'])} | {_k(a['median'])} "
                   f"[{_k(a['band'][0])}, {_k(a['band'][1])}] | " + " | ".join(
                       f"{r[m]['error']:+.1%}" for m in METHODS) + " |")
    out += ["", "| design | held out | median abs. error: Adam, default, joint, McCandlish, "
            "obvious rule | 95% coverage: Adam, default, joint | median band: Adam, default, "
            "joint |", "|---|---|---|---|---|"]
    for s in doc["summary"]:
        out.append(f"| {s['design']} | {s['batch']:g} ({s['x_largest_pilot']:.3g}x, "
                   f"{s['targets']}) | " + ", ".join(
                       f"{s[m]['median_abs_error']:.1%}" for m in METHODS) + " | " + ", ".join(
                       f"{s[m]['coverage_95']:.0%}" for m in METHODS[:3]) + " | " + ", ".join(
                       f"x{s[m]['median_width']:.2f}" for m in METHODS[:3]) + " |")
    return "\n".join(out)


def pooled(paths) -> dict:
    """The rows of several score-set files, pooled by bucket, with the paired contrasts over
    them all (each sweep in one file only)."""
    rows, seen = [], set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            got = json.load(f)["rows"]
        names = {r["sweep"] for r in got}
        if names & seen:
            raise SystemExit(f"pool: {path} scores a sweep again: {sorted(names & seen)[0]}")
        seen |= names
        rows += got
    return by_bucket(rows)


NAMES = {"adam": "Adam", "default": "default", "joint": "joint", "mccandlish": "McCandlish",
         "obvious_rule": "obvious rule"}


def set_markdown(doc: dict, methods=METHODS, names=None) -> str:
    """The pooled scores by held-out bucket and the paired contrasts, as docs/real_runs.md
    shows them: each method's median |error|, and the first three's coverage and band; the
    contrasts are the first method's minus each other's."""
    name = {**NAMES, **(names or {})}
    three = ", ".join(name[m] for m in methods[:3])
    out = [f"| held out (x largest pilot) | predictions | never reached | median abs. error: "
           f"{', '.join(name[m] for m in methods)} | 95% coverage: {three} | median band: "
           f"{three} |", "|---|---|---|---|---|---|"]
    f = lambda v, fmt: "-" if v is None else format(v, fmt)
    for s in doc["by_bucket"]:
        out.append(f"| {s['design']} | {s['targets']} | {s['never']} | " + ", ".join(
            f(s[m]["median_abs_error"], ".1%") for m in methods) + " | " + ", ".join(
            f(s[m]["coverage_95"], ".1%") for m in methods[:3]) + " | " + ", ".join(
            "-" if s[m]["median_width"] is None else f"x{s[m]['median_width']:.2f}"
            for m in methods[:3]) + " |")
    if "reading" in doc["contrasts"]:  # too few predictions, or one sweep
        return "\n".join(out + ["", f"Contrasts: {doc['contrasts']['reading']}."])
    out += ["", f"| {name[methods[0]]} minus | mean | CI over predictions | CI over sweeps | "
            "reading |", "|---|---|---|---|---|"]
    for m, c in doc["contrasts"].items():
        if isinstance(c, dict) and "ci_pairs" in c:
            out.append(f"| {m} | {c['mean']:+.3f} | [{c['ci_pairs'][0]:+.3f}, "
                       f"{c['ci_pairs'][1]:+.3f}] | [{c['ci_groups'][0]:+.3f}, "
                       f"{c['ci_groups'][1]:+.3f}] | {c['reading']} ({c['n']} predictions, "
                       f"{c['groups']} sweeps) |")
    return "\n".join(out)


def main(argv) -> None:
    if argv[:1] == ["extract"] and len(argv) == 3:
        n = extract(argv[1], argv[2], r"q2_b_(\d+)_", 5e-3, "Train_EnvstepsSoFar",
                    ("Eval_AverageReturn", "Train_AverageReturn"), "tb_8938091")
        print(f"wrote {n} rows to {argv[2]}")
    elif argv[:1] == ["predict"] and len(argv) == 3:
        doc = predict(argv[1], argv[2])
        for d in doc["designs"]:
            print(d["name"], "targets:", [t["target"] for t in d["targets"]],
                  "skipped:", d["skipped_targets"])
    elif argv[:1] == ["score"] and len(argv) == 3:
        doc = score(argv[1], argv[2])
        for s in doc["summary"]:
            print(s["design"], f"B {s['batch']:g} ({s['x_largest_pilot']:.2g}x), "
                  f"{s['targets']} targets, {s['never']} never:", "; ".join(
                      f"{m} " + ", ".join("-" if s[m][k] is None else
                                         (f"{s[m][k]:.1%}" if k != "median_width" else
                                          f"x{s[m][k]:.2f}")
                                         for k in ("median_abs_error", "coverage_95",
                                                   "median_width"))
                      for m in METHODS))
        if "reading" in doc["contrasts"]:  # too few predictions, or one design-target
            print(f"contrasts: {doc['contrasts']['reading']}")
        for m, c in ([] if "reading" in doc["contrasts"] else doc["contrasts"].items()):
            print(f"adam - {m}: {c['mean']:+.3f}, CI over predictions [{c['ci_pairs'][0]:+.3f}, "
                  f"{c['ci_pairs'][1]:+.3f}], over targets [{c['ci_groups'][0]:+.3f}, "
                  f"{c['ci_groups'][1]:+.3f}] ({c['n']} predictions): {c['reading']}")
        with open(argv[1], encoding="utf-8") as f:
            print(markdown(doc, json.load(f)))
    elif argv[:1] == ["ingest"] and len(argv) == 2:
        for name, n in ingest(argv[1]):
            print(f"{name}: {n} rows")
    elif argv[:1] == ["predict-set"] and len(argv) >= 2:
        doc = predict_set(argv[1], argv[2:])
        for sw in doc["sweeps"]:
            for d in sw["designs"]:
                print(sw["sweep"], d["name"], "targets:",
                      [t["target"].split(">=")[1] for t in d["targets"]])
    elif argv[:1] == ["score-set"] and len(argv) == 3:
        doc = score_set(argv[1], argv[2])
        print(set_markdown(doc))
    elif argv[:1] == ["pool"] and len(argv) >= 2:
        print(set_markdown(pooled(argv[1:])))
    elif argv[:1] == ["exponent"] and len(argv) == 4:
        meta, runs = read_curves(argv[1])
        e = exponent(runs, f"{meta['metric']}>={float(argv[2]):g}", float(argv[3]))
        print(f"{meta['metric']}>={float(argv[2]):g} over B {e['batches'][0]:g} to "
              f"{e['batches'][-1]:g} ({e['runs']} runs): N ~ B^{e['slope']:.3f} "
              f"[{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
