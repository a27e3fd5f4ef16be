"""The exponent envelope (twoclock/pilot/envelope.py) against hand-computed answers and the
Adam form's own algebra (an oracle outside the module: N = A sqrt(m (m + B_n)) / lr written
here in NumPy)."""
import math

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

from twoclock.pilot import envelope as ev


def test_exponent_ranges_by_hand():
    # adam: [1/2 - p, 1 - p]; fixed lr (p 0) [0.5, 1], sqrt rule (p 1/2) [0, 0.5]
    assert ev.exponents("adam", 0.0) == (0.5, 1.0)
    assert ev.exponents("adam", 0.5) == (0.0, 0.5)
    # default forms: [0, max a]; saturation alone under sqrt a = 1/2, with curvature a = 1
    assert ev.exponents("default", 0.5, [0.5]) == (0.0, 0.5)
    assert ev.exponents("default", 0.5, [0.5, 1.0]) == (0.0, 1.0)


def test_ends_by_hand_fixed_and_sqrt():
    # B = 8 B_top, anchor [1000, 2000]: fixed lr [1000 8^0.5, 2000 8^1] = [2828.43, 16000]
    lo, hi = ev.ends(800.0, 100.0, [1000.0, 2000.0], 0.5, 1.0)
    assert lo == pytest.approx(2828.4271247, rel=1e-9) and hi == pytest.approx(16000.0)
    # sqrt rule [1000 8^0, 2000 8^0.5] = [1000, 5656.85]
    lo, hi = ev.ends(800.0, 100.0, [1000.0, 2000.0], 0.0, 0.5)
    assert lo == pytest.approx(1000.0) and hi == pytest.approx(5656.8542495, rel=1e-9)
    # an exact anchor at 8x under a fixed lr: x 8^(1/4) = 1.6818 either side of the middle
    info = {"ci": ev.ends(800.0, 100.0, [1000.0, 1000.0], 0.5, 1.0)}
    assert ev.factor(info) == pytest.approx(8 ** 0.25)
    # an open anchor end stays open
    assert ev.ends(800.0, 100.0, [None, 2000.0], 0.5, 1.0)[0] is None


def test_open_band_clipped_and_inside_band_unchanged():
    env = [2828.43, 16000.0]
    new, set_ = ev.clip({"median": 6000.0, "ci": [None, None]}, env)
    assert new["ci"] == env and set_ == ["low", "high"] and new["median"] == 6000.0
    new, set_ = ev.clip({"median": 6000.0, "ci": [459.0, 7.4e8]}, env)
    assert new["ci"] == env and set_ == ["low", "high"]
    inside = {"median": 6000.0, "ci": [4000.0, 9000.0]}
    new, set_ = ev.clip(inside, env)
    assert new == inside and set_ == []
    new, set_ = ev.clip({"median": 6000.0, "ci": [4000.0, 1e6]}, env)
    assert new["ci"] == [4000.0, 16000.0] and set_ == ["high"]


def test_apply_only_past_the_top_pilot():
    bands = [{"median": 10.0, "ci": [None, None]}] * 2
    out, infos = ev.apply(bands, [100.0, 200.0], 100.0, [10.0, 10.0], 0.5, 1.0)
    assert infos[0] is None and out[0]["ci"] == [None, None]
    assert out[1]["ci"] == pytest.approx([10 * math.sqrt(2), 20.0])
    assert infos[1]["set"] == ["low", "high"]


def _adam_log_n(B, K, p, b_n):
    """The Adam form by hand: log sqrt(m (m + B_n)) - log lr, m = B / K, lr = B^p."""
    m = B / K
    return 0.5 * np.log(m * (m + b_n)) - p * np.log(B)


@given(r=st.floats(1.0, 64.0), b_n=st.floats(0.0, 1e6), p=st.sampled_from([0.0, 0.5, 1.0]),
       k=st.sampled_from([1.0, 2.0, 4.0, 32.0]), b_top=st.floats(8.0, 4096.0))
@example(r=8.0, b_n=0.0, p=0.0, k=1.0, b_top=256.0)      # past every knee: exponent 1 - p
@example(r=8.0, b_n=1e6, p=0.0, k=1.0, b_top=256.0)      # below the knee: exponent 1/2 - p
@example(r=8.0, b_n=512.0, p=0.5, k=32.0, b_top=8192.0)  # K updates: m = B / K
def test_adam_form_stays_inside_its_envelope(r, b_n, p, k, b_top):
    """For every noise scale, rule and K (predicted at the same K as the anchor), the Adam
    form's clock at r B_top lies within the envelope anchored at its exact clock at B_top.
    A range [1/2, 1] that ignored p, or [1/2 - p, 1/2], fails here."""
    b = r * b_top
    n_top = math.exp(_adam_log_n(b_top, k, p, b_n))
    n = math.exp(_adam_log_n(b, k, p, b_n))
    lo, hi = ev.ends(b, b_top, [n_top, n_top], *ev.exponents("adam", p))
    assert lo * (1 - 1e-9) <= n <= hi * (1 + 1e-9)


def test_ends_are_tight_at_the_two_regimes():
    """The envelope's ends are reached: the exponent range is not wider than the form's."""
    b_top, b, p = 256.0, 2048.0, 0.0
    n_top_lo, n_lo = (math.exp(_adam_log_n(x, 1.0, p, 1e12)) for x in (b_top, b))
    n_top_hi, n_hi = (math.exp(_adam_log_n(x, 1.0, p, 0.0)) for x in (b_top, b))
    lo_exp, hi_exp = ev.exponents("adam", p)
    assert n_lo / n_top_lo == pytest.approx(8 ** lo_exp, rel=1e-5)
    assert n_hi / n_top_hi == pytest.approx(8 ** hi_exp, rel=1e-9)


def test_describe_names_the_ends():
    info = {"batch_top": 32.0, "anchor": [100.0, 200.0], "exponents": [0.5, 1.0],
            "ci": [1, 2], "set": ["high"]}
    assert "its high end set by the theory's bound N ~ B^[0.5, 1]" in ev.describe(info)
    assert ev.describe({**info, "set": []}) is None and ev.describe(None) is None


def _runs(prog, lr, updates=None, bracket=None):
    from twoclock.pilot.plan import PilotRuns
    B = np.array([256.0, 512.0, 1024.0])
    n = B.size
    return PilotRuns(B, np.asarray(lr, float), np.asarray(prog, float), np.full(n, np.inf),
                     np.full(n, np.inf), np.full(n, np.nan), ("",) * n,
                     updates_R=None if updates is None else np.asarray(updates, float),
                     bracket_R=None if bracket is None else np.asarray(bracket, float))


def test_plan_records_and_obeys_the_envelope():
    """A one-seed fixed-lr plan (non-monotone pilots, as in the real sweep): the 8x band lies
    in [L 8^0.5, H 8^1] of the recorded anchor, and its anchor holds the top pilot's bracket."""
    from twoclock.pilot.plan import plan
    prog = [79.8e3, 80.0e3, 153.6e3]
    bracket = [[73.4e3, 79.8e3], [67.2e3, 80.0e3], [128e3, 153.6e3]]
    pl = plan(_runs(prog, [1e-6] * 3, bracket=bracket), predict=[8192.0],
              progress_form="adam", predict_rule=(0.0, 1e-6, 256.0))
    band = pl.predictions[0].progress_samples
    env = band["envelope"]
    assert env["exponents"] == [0.5, 1.0] and env["batch_top"] == 1024.0
    L, H = env["anchor"]
    assert L <= 128e3 and H >= 153.6e3
    assert band["ci"][0] >= L * 8 ** 0.5 * (1 - 1e-12)
    assert band["ci"][1] <= H * 8 * (1 + 1e-12)


def test_plan_anchor_is_the_largest_samples_per_update():
    """K updates per batch (m = B / K): a top pilot at B 1024 with K 4 has m 256, so the
    anchor sits at the largest m, B 512 (K 1), and a prediction at B 1024 (K 1) is enveloped."""
    from twoclock.pilot.plan import plan
    pl = plan(_runs([1e5, 1.5e5, 1.2e5], [1e-6] * 3, updates=[1, 1, 4]), predict=[1024.0],
              progress_form="adam", predict_rule=(0.0, 1e-6, 256.0))
    assert pl.predictions[0].progress_samples["envelope"]["batch_top"] == 512.0


def test_anchor_takes_the_top_pilots_bracket():
    """Pilots exactly on an Adam curve (B_n 512: N = 200 sqrt(B (B + 512)), by hand 88 681,
    144 815, 250 828): no residual scatter, so the anchor is the top pilot's logged bracket
    [225 000, 250 828] (the fitted median there, 250 828, is its high end)."""
    from twoclock.pilot.plan import plan
    prog = [200 * math.sqrt(b * (b + 512)) for b in (256.0, 512.0, 1024.0)]
    assert prog[2] == pytest.approx(250828, abs=1)
    bracket = [[p * 0.9, p] for p in prog[:2]] + [[225e3, prog[2]]]
    pl = plan(_runs(prog, [1e-6] * 3, bracket=bracket), predict=[8192.0],
              progress_form="adam", predict_rule=(0.0, 1e-6, 256.0))
    L, H = pl.predictions[0].progress_samples["envelope"]["anchor"]
    assert L == pytest.approx(225e3, rel=1e-9) and H == pytest.approx(250828, rel=1e-4)


def test_joint_bands_are_clipped_to_each_targets_envelope():
    """Several targets (pilot/levels.py): each target's joint band at 8x lies inside
    [L 8^(1/2), H 8^1], L, H its own plan's anchor at the largest pilot (fixed lr)."""
    from twoclock.pilot import levels
    from twoclock.pilot.plan import plan
    plans = []
    for prog in ([79.8e3, 80.0e3, 153.6e3], [1.6e5, 2.4e5, 3.1e5]):
        bracket = [[0.9 * x, x] for x in prog]
        plans.append(plan(_runs(prog, [1e-6] * 3, bracket=bracket), predict=[8192.0],
                          progress_form="adam", predict_rule=(0.0, 1e-6, 256.0)).to_json())
    out = levels.joint_plan(["acc>=0.5", "acc>=0.55"], plans, predict=[8192.0])
    for row, p in zip(out["targets"], plans):
        L, H = p["predictions"][0]["progress_samples"]["envelope"]["anchor"]
        lo, hi = row["predictions"][0]["progress_samples"]["ci"]
        assert lo >= L * 8 ** 0.5 * (1 - 1e-12) and hi <= H * 8 * (1 + 1e-12)
