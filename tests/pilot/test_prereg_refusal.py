"""Every pre-registering tool's `predict` refuses a file that exists, and leaves it as it was:
a new prediction goes to a new file, never over one already committed."""
import pytest

from tests.helpers import load_script


@pytest.mark.parametrize("path", ["tools/adam_floor.py", "tools/adam_form_gaps.py",
                                  "tools/adam_remains.py", "tools/momentum_head.py"])
def test_predict_refuses_an_existing_file(path, tmp_path):
    out = tmp_path / "p.json"
    out.write_text("{}")
    with pytest.raises(SystemExit, match="exists"):
        load_script(path).predict(str(out))
    assert out.read_text() == "{}"
