"""Self-audit tests of tools/score_real.py (docs/testing.md, "Self-audit"): the band factor by hand."""
import pytest

from tests.helpers import load_script

score_real = load_script("tools/score_real.py", "score_real_audit")


@pytest.mark.parametrize("band, want", [([50.0, 300.0], 3.0),   # high side: 300 / 100
                                        ([25.0, 150.0], 4.0),   # low side: 100 / 25
                                        ([80.0, 150.0], 1.5)])  # high / low would be 1.875
def test_the_band_factor_is_the_wider_side_over_the_median(band, want):
    assert score_real._width(band, 100.0) == pytest.approx(want, rel=1e-12)
