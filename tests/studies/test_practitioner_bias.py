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
