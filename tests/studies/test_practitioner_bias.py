"""tools/practitioner_bias.py: the measurement itself simulates the policy model for minutes (its
numbers are in docs/plan.md, "A practitioner's sweep"); here, that a bad --seeds is refused in one
line before any simulation."""
import pytest

from tests.helpers import load_script

tool = load_script("tools/practitioner_bias.py")


@pytest.mark.parametrize("seeds", ["1", "0", "-3"])
def test_fewer_than_two_seeds_are_refused_in_one_line(seeds, capsys, monkeypatch):
    monkeypatch.setattr(tool, "clock", lambda *a: pytest.fail("simulated before refusing"))
    with pytest.raises(SystemExit) as e:
        tool.main(["--seeds", seeds])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith(f"--seeds: at least 2, got {seeds}")


def test_exact_clocks_on_the_form_are_predicted_exactly():
    """Clocks on Adam's form by hand, N = A sqrt(m (m + B_n)) / lr under the sqrt rule (A 1,
    B_n 100), at the pilots with three seeds scaled by 0.9, 1, 1.1 (a seed's constant factor):
    against answers 10% above the form's at 256 and 1024, each seed's own fit errs by its
    factor over 1.1 (0.9 / 1.1 - 1, 1 / 1.1 - 1, 0), median 1 / 1.1 - 1, and the fit to every
    run (least squares in log N) by the factors' geometric mean over 1.1,
    (0.9 x 1.1)^(1/3) / 1.1 - 1 = -0.09395, at both batches."""
    import numpy as np
    on = lambda b: np.sqrt(b * (b + 100.0)) / (tool.LR0 * np.sqrt(b / tool.B0))
    n = np.array([[f * on(b) for f in (0.9, 1.0, 1.1)] for b in tool.PILOTS])
    truth = 1.1 * on(np.array(tool.HELD, np.float64))
    every, per, unsharp, _ = tool.exact_errors(n, truth)
    assert np.allclose(per, 1 / 1.1 - 1, atol=2e-3), per
    assert np.allclose(every, (0.9 * 1.1) ** (1 / 3) / 1.1 - 1, atol=2e-3), every
    # the clocks lie on the form at sharpness 1: holding it there changes nothing
    assert np.allclose(unsharp, every, atol=2e-3), unsharp


@pytest.mark.parametrize("answers", [["0", "5000"], ["3000", "nan"], ["3000", "-1"]])
def test_exact_answers_must_be_positive(answers, capsys, monkeypatch):
    monkeypatch.setattr(tool, "pilot_clocks", lambda *a: pytest.fail("simulated"))
    with pytest.raises(SystemExit) as e:
        tool.main(["--exact", *answers])
    assert e.value.code == 2
    assert "--exact: two answers > 0" in capsys.readouterr().err
