"""Predictions for runs that take K optimizer updates per rollout batch (`--predict B:K`,
`predict=[(B, K)]` or `"B:K"`; twoclock/pilot/predict.py, docs/plan.md "Updates per rollout
batch"): the Adam form's prediction at B:K against the formula written out here,
N = A sqrt(m (m + B_n)) / lr(B) with m = B / K and lr the rule's at the rollout batch B (the
oracle: tests.pilot.test_adam_form's by_hand, never the module's functions); the ratio of a
prediction at K = 4 to the one at K = 1; the default forms' rule; and the refusals."""
import json
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from tests.pilot.test_adam_form import _csv, _exact_runs, by_hand
from twoclock.pilot import api, levels, predict as pp, report
from twoclock.pilot.config import PlanConfig
from twoclock.pilot.plan import PilotError, plan, read_runs

A, B_N = 1e-3, 100.0
# pilots on the sqrt rule lr = 1e-3 (B / 64)^(1/2) at their rollout batch, half at K = 2
B_R = [64.0, 64.0, 128.0, 128.0, 256.0, 256.0, 512.0, 512.0]
K_R = [1, 2, 1, 2, 1, 2, 1, 2]
LR = lambda B: 1e-3 * math.sqrt(B / 64.0)  # noqa: E731 (the rule, by hand)


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory):
    """Clocks from the formula at each run's own lr and K (off by +-1e-4 in log)."""
    lr = [LR(b) for b in B_R]
    N = _exact_runs(np.array(B_R), np.array(lr), np.array(K_R, float), A=A, b_n=B_N,
                    wiggle=1e-4)
    return _csv(tmp_path_factory.mktemp("k"), [(b, repr(l), repr(float(n)), "", k)
                                               for b, l, n, k in zip(B_R, lr, N, K_R)])


def _adam(path, predict):
    return report.plan_file(path, predict, progress_form="adam").to_json()


# ---------------------------------------------------------------------------- the Adam form

def test_a_prediction_at_b_k_is_the_formula_at_m_b_over_k_and_the_rules_lr_at_b(runs_csv):
    """Wrong formulas that fail here: K ignored (m = B: 3.9x at 4096:4), m = B K, and the lr
    taken at m instead of B (the sqrt rule: 2x at K = 4)."""
    out = _adam(runs_csv, [1024, "4096:4", (8192, 2), (2048, None)])
    assert out["fit"]["rule"]["p"] == pytest.approx(0.5, abs=1e-12)
    got = [(p["batch"], p["updates"]) for p in out["predictions"]]
    assert got == [(1024.0, 1.0), (2048.0, 1.0), (4096.0, 4.0), (8192.0, 2.0)]
    for p in out["predictions"]:
        B, K = p["batch"], p["updates"]
        want = A * math.sqrt((B / K) * (B / K + B_N)) / LR(B)  # by hand, m = B / K
        assert want == pytest.approx(float(by_hand(B, LR(B), K, A, B_N)), rel=1e-12)
        assert p["lr"] == pytest.approx(LR(B), rel=1e-9)
        assert abs(p["progress_samples"]["median"] / want - 1) < 2e-3, (B, K)
        lo, hi = p["progress_samples"]["ci"]
        assert lo < want < hi
    # 4096:4 by hand: m = 1024, lr = 8e-3: 1e-3 sqrt(1024 x 1124) / 8e-3 = 134.10 samples
    assert abs(out["predictions"][2]["progress_samples"]["median"] - 134.10) < 0.3


@pytest.mark.parametrize("B", [1024.0, 4096.0, 16384.0])
def test_k_4_over_k_1_at_one_batch_is_the_hand_ratio(runs_csv, B):
    """N(B:4) / N(B:1) = sqrt(m (m + B_n)) / sqrt(B (B + B_n)), m = B / 4 (the lr is the same:
    one rollout batch). K ignored gives 1, m = B K about 4, the lr at m twice the ratio."""
    out = _adam(runs_csv, [B, (B, 4)])
    one, four = (p["progress_samples"]["median"] for p in out["predictions"])
    m = B / 4
    want = math.sqrt(m * (m + B_N)) / math.sqrt(B * (B + B_N))
    assert abs((four / one) / want - 1) < 3e-3, (four / one, want)


def test_b_alone_is_k_1_with_the_adam_form_whatever_the_pilots_take(runs_csv):
    a, b = _adam(runs_csv, [2048]), _adam(runs_csv, ["2048:1"])
    assert a["predictions"] == b["predictions"] and a["predictions"][0]["updates"] == 1.0


def test_the_printout_shows_k_only_where_some_prediction_takes_another(runs_csv):
    text = report.table(_adam(runs_csv, [1024, "4096:4"]))
    assert " batch:K " in text and "\n  4096:4 " in text and "\n  1024:1 " in text
    assert "K = 4: no pilot took it" in text
    text = report.table(_adam(runs_csv, [1024, 4096]))
    assert "batch:K" not in text and "\n    4096 " in text


def test_the_printout_warns_of_a_k_no_pilot_took_and_only_then():
    """By hand: runs at K {1, 4}, predictions at K {1, 2, 4, 8}: the note names 2 and 8 (4 was
    run, 1 is the plan's own); predictions all at K the pilots ran: no note."""
    out = {"runs": [{"updates": 1.0}, {"updates": 4.0}],
           "predictions": [{"updates": k} for k in (1.0, 2.0, 4.0, 8.0, 8.0)]}
    (line,) = report.updates_note(out)
    assert line.startswith("K = 2, 8: no pilot took it") and "clip band" in line
    assert report.updates_note({**out, "predictions": [{"updates": 4.0}, {}]}) == []


def test_the_notes_cost_range_is_the_committed_studys():
    """The note's "32 updates cost 1.4x to 5.1x" against the study's committed source, read
    here with plain json: the lowest and highest median cost over its clipped K = 32 cells,
    rounded to 0.1 (a rerun with other settings that moves them fails this)."""
    import pathlib
    src = pathlib.Path(__file__).resolve().parents[2] / "docs/claim_sources/updates_cost.json"
    cells = json.loads(src.read_text())["cells"]
    cost = [c["cost"]["median"] for c in cells if c["updates"] == 32 and c["clip"] is not None]
    assert len(cost) >= 2
    assert report.K32_COST == (round(min(cost), 1), round(max(cost), 1))
    (line,) = report.updates_note({"runs": [{}], "predictions": [{"updates": 32.0}]})
    assert f"cost {round(min(cost), 1):g}x to {round(max(cost), 1):g}x" in line


def test_the_command_line_takes_b_k_and_writes_each_rows_k(runs_csv, tmp_path):
    from twoclock.cli.plan import main
    assert main([runs_csv, "--progress-form", "adam", "--predict", "4096:4", "1024",
                 "--no-figure", "--quiet", "--out", str(tmp_path)]) == 0
    out = json.loads((tmp_path / "plan.json").read_text())
    assert [(p["batch"], p["updates"]) for p in out["predictions"]] == [(1024, 1), (4096, 4)]
    want = float(by_hand(4096.0, LR(4096.0), 4.0, A, B_N))
    assert abs(out["predictions"][1]["progress_samples"]["median"] / want - 1) < 2e-3


# ---------------------------------------------------------------------------- from logs

def test_from_logs_pairs_and_strings_are_one_and_the_same(tmp_path):
    from tests.pilot.test_logs_adam import _log, by_hand as logs_by_hand
    path = _log(tmp_path)  # mixed lrs and K, the fixed rule lr = 1e-3
    as_text = api.plan_logs(path, "acc>=0.5", [], predict=[2048, "2048:2", "2048:4"],
                            progress_form="adam").to_json()
    as_pairs = api.plan_logs(path, "acc>=0.5", [], predict=[(2048, 4), (2048, 2), 2048.0],
                             progress_form="adam").to_json()
    assert as_text["predictions"] == as_pairs["predictions"]
    assert [p["updates"] for p in as_text["predictions"]] == [1, 2, 4]
    for p in as_text["predictions"]:  # the fixed rule: the formula at m = 2048 / K, lr 1e-3
        want = logs_by_hand(2048, 1e-3, p["updates"])
        assert abs(p["progress_samples"]["median"] / want - 1) < 2e-3
    rows = {f["batch"]: f for f in as_text["logs"]["curves"]}
    assert set(rows) == {64, 128, 256, 512}  # the pilots, as read


def test_the_joint_fit_predicts_at_m_b_over_k():
    """Several targets: under the fixed rule (one lr) a run at 2048:4 is the formula at
    m = 512, the one at 512:1 (by hand); K ignored would give the formula at 2048."""
    from tests.pilot.test_levels import A_L, C0, C1, X, _plans, by_hand as joint_by_hand
    out = levels.joint_plan(["acc>=0.45", "acc>=0.5", "acc>=0.55"], _plans(),
                            predict=["2048:4", 512])
    for l, row in enumerate(out["targets"]):
        assert [(p["batch"], p["updates"]) for p in row["predictions"]] == [(512.0, 1.0),
                                                                            (2048.0, 4.0)]
        want = joint_by_hand(512.0, 0.01, A_L[l], math.exp(C0 + C1 * X[l]))
        for p in row["predictions"]:
            assert abs(p["progress_samples"]["median"] / want - 1) < 0.01, (l, p["batch"])


# ---------------------------------------------------------------------------- the default forms

def _sqrt_rule_rows(k=None):
    B = [8.0, 16.0, 32.0, 64.0] * 2
    return [(b, 0.01 * math.sqrt(b / 8), 1000 * (1 + b / 64) ** 0.5 * (1.01 if i % 2 else 0.99),
             "") + (() if k is None else (k,)) for i, b in enumerate(B)]


def test_the_default_forms_refuse_another_k_and_plan_the_pilots_k(tmp_path):
    """K = 1 pilots: 128:1 is 128; 128:4 refused naming --progress-form adam. K = 2 pilots (all
    of them): 128:2 is 128, the same numbers as without the column, and 128:1 is refused."""
    one = _csv(tmp_path, _sqrt_rule_rows(), updates=False)
    assert (report.plan_file(one, ["128:1"]).to_json()["predictions"] ==
            report.plan_file(one, [128]).to_json()["predictions"])
    with pytest.raises(PilotError, match=r"--predict 128:4: .*--progress-form adam") as e:
        report.plan_file(one, ["128:4"])
    assert "\n" not in str(e.value)
    base = report.plan_file(one, [128]).to_json()["predictions"][0]
    two = _csv(tmp_path, _sqrt_rule_rows(2))
    got = report.plan_file(two, ["128:2"]).to_json()["predictions"][0]
    assert got == report.plan_file(two, [128]).to_json()["predictions"][0]
    assert got.pop("updates") == 2.0 and base.pop("updates") == 1.0 and got == base
    with pytest.raises(PilotError, match=r"--predict 128:1: .*pilots' K \(2\).*--progress-form"):
        report.plan_file(two, [(128, 1)])


def test_the_default_forms_refuse_pilots_with_unequal_k_from_a_runs_csv(tmp_path):
    rows = [r + (1 if i < 4 else 2,) for i, r in enumerate(_sqrt_rule_rows())]
    with pytest.raises(PilotError, match=r"column updates: .*\(K 1, 2\).*--progress-form adam"):
        plan(read_runs(_csv(tmp_path, rows)))


# ---------------------------------------------------------------------------- the refusals

@given(st.integers(1, 2**53), st.data())
@example(1, None)
@example(2**53, None)
def test_b_k_text_pairs_and_lists_are_the_same_point(b, data):
    k = b if data is None else data.draw(st.integers(1, b))  # the examples: K = B, the top
    want = (float(b), float(k))
    assert pp.point(f"{b}:{k}") == pp.point((b, k)) == pp.point([b, k]) == want
    assert pp.point(f" {b} ") == pp.point(b) == pp.point((b, None)) == (float(b), None)


BAD = ["8192:0", "8192:1.5", "8192:-2", "abc", "8192:x", ":4", "8192:", "8:16", "nan:2",
       "8192:4:2", "8192:inf", "0:1", "1e30:2"]


@pytest.mark.parametrize("text", BAD)
def test_a_bad_point_is_refused_in_one_line_naming_predict_and_the_form(text, tmp_path,
                                                                        capsys):
    from twoclock.cli.plan import main
    with pytest.raises(SystemExit) as e:
        main(["--predict", "512", text, "--no-figure", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "--predict" in err and ("B:K" in err or "[1, 2^53]" in err), err
    with pytest.raises(ValueError, match="--predict"):
        PlanConfig(predict=(text,))


@pytest.mark.parametrize("item", [(8192, 4, 1), (8192,), True, (8192, 0), (8192, 2.5),
                                  ("8192", "x"), None, object()])
def test_the_python_entry_refuses_bad_items_naming_predict(item, tmp_path):
    from tests.pilot.test_logs_adam import _log
    with pytest.raises(ValueError, match="--predict must be") as e:
        api.plan_logs(_log(tmp_path), "acc>=0.5", [], predict=[item], progress_form="adam")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("item", [100.5, "100.5", "100.5:2", (100.5, 2), "8192.25:4",
                                  2.0 ** 51 + 0.5])
def test_a_batch_that_is_not_a_whole_number_of_samples_is_refused_naming_predict(item):
    """A rollout batch counts samples: 100.5 is no batch, by itself or as B in B:K (K has its
    own check: 8192:1.5 in BAD), nor is 2^51 + 0.5 (a float that holds the half)."""
    with pytest.raises(ValueError) as e:
        pp.point(item)
    assert str(e.value) == ("--predict must be a whole number of samples per rollout batch "
                            f"(got {item!r})")


def test_whole_batches_written_as_floats_are_batches(tmp_path):
    """512.0 and '1024.0:2' are whole: the Python entry and the points read them as 512 and
    1024 (by hand), and plan the same as the integers."""
    assert pp.point(512.0) == pp.point("512.0") == pp.point(512) == (512.0, None)
    assert pp.point("1024.0:2") == pp.point((1024.0, 2.0)) == (1024.0, 2.0)
    assert pp.point("1e3") == (1000.0, None)
    from tests.pilot.test_logs_adam import _log
    path = _log(tmp_path)
    floats = api.plan_logs(path, "acc>=0.5", [], predict=[512.0, (1024.0, 2.0)],
                           progress_form="adam").to_json()
    ints = api.plan_logs(path, "acc>=0.5", [], predict=[512, "1024:2"],
                         progress_form="adam").to_json()
    assert floats["predictions"] == ints["predictions"]
    assert [(p["batch"], p["updates"]) for p in floats["predictions"]] == [(512, 1), (1024, 2)]


def test_each_k_s_band_is_clipped_to_the_envelope_of_its_own_samples_per_update(runs_csv):
    """The envelope (pilot/envelope.py) at B:K is anchored at the largest pilot's samples per
    update m_top = 512 (B 512 at K 1), carried to K: batch_top = m_top K (by hand: 512 at
    K = 1, 2048 at K = 4), and its ends are the anchor times (B / batch_top)^[1/2 - p, 1 - p]
    (sqrt rule, p = 1/2: [0, 1/2]). Wrong formulas that fail: one envelope for every K
    (batch_top 512 at 8192:4), batch_top = m_top / K."""
    out = _adam(runs_csv, [8192, "8192:4"])
    env = {p["updates"]: p["progress_samples"]["envelope"] for p in out["predictions"]}
    assert env[1.0]["batch_top"] == pytest.approx(512.0, rel=1e-12)
    assert env[4.0]["batch_top"] == pytest.approx(2048.0, rel=1e-12)
    for k, e in env.items():
        (a_lo, a_hi), r = e["anchor"], 8192.0 / e["batch_top"]
        assert e["ci"][0] == pytest.approx(a_lo * r ** 0.0, rel=1e-9), k
        assert e["ci"][1] == pytest.approx(a_hi * r ** 0.5, rel=1e-9), k


def test_the_printout_says_where_a_b_k_envelope_is_anchored(runs_csv):
    """The band's reason calls the envelope's anchor "the largest pilot"; at B:K it is the
    largest pilot's samples per update times K. By hand: the pilots' largest m = B / K is 512
    (B 512 at K 1), so 8192:4's envelope starts at B 512 x 4 = 2048, a batch no pilot ran;
    8192 at K 1 starts at the largest pilot itself and needs no line."""
    text = report.table(_adam(runs_csv, [8192, "8192:4"]))
    got = [ln for ln in text.splitlines() if ln.startswith("envelope at B:K")]
    assert got == ["envelope at B:K: anchored at the largest pilot's samples per update (512) "
                   "times K: B 2048 for 8192:4"], text
    assert not any(ln.startswith("envelope at B:K")
                   for ln in report.table(_adam(runs_csv, [8192])).splitlines())
