"""Mutated bytes of files the real writers wrote (tests/data/trainer_logs, the example CSV):
each reader (CSV, JSON Lines, trainer_state.json, TensorBoard events) either reads the file or
refuses it with one PilotError line naming the file; never another exception, never a hang."""
import importlib.util
import os
import shutil
import time

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from tests.helpers import plan_main
from twoclock.pilot.plan import PilotError
from twoclock.pilot.reader import Logs, read_logs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "trainer_logs")
BATCH = {"b64": 64.0, "b128": 128.0, "b256": 256.0}
# (a file the writer wrote, its name when copied, how it is read)
SOURCES = {
    "csv": (os.path.join(ROOT, "twoclock", "data", "example_pilot_logs.csv"), "log.csv",
            dict(metrics=("kl",))),
    "jsonl": (os.path.join(DATA, "verl", "gsm8k_pilots", "b64.jsonl"), "b64.jsonl",
              dict(metrics=("kl",), preset="verl", batch={"b64": 64.0})),
    "trainer_state": (os.path.join(DATA, "trl", "b64", "trainer_state.json"),
                      "trainer_state.json", dict(metrics=("kl",), preset="trl")),
    "tensorboard": (os.path.join(DATA, "tensorboard", "b64", "events.out.tfevents.1796302485.vm"),
                    os.path.join("b64", "events.out.tfevents.1796302485.vm"),
                    dict(metrics=("kl",), preset="trl", batch={"b64": 64.0})),
}
HAS_TB = importlib.util.find_spec("tensorboard") is not None


def _mutate(data: bytes, edits) -> bytes:
    """Apply (kind, position, byte) edits: flip a byte, drop one, insert one, or cut the file."""
    b = bytearray(data)
    for kind, pos, byte in edits:
        if not b:
            break
        i = pos % len(b)
        if kind == "flip":
            b[i] ^= byte or 1
        elif kind == "drop":
            del b[i]
        elif kind == "insert":
            b.insert(i, byte)
        else:
            del b[i:]
    return bytes(b)


EDITS = st.lists(st.tuples(st.sampled_from(["flip", "drop", "insert", "cut"]),
                           st.integers(0, 2 ** 31), st.integers(0, 255)), min_size=1, max_size=4)


@pytest.mark.parametrize("fmt", list(SOURCES))
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_mutated_writer_files_read_or_refuse_in_one_line(tmp_path, fmt, edits):
    if fmt == "tensorboard" and not HAS_TB:
        pytest.skip("the TensorBoard reader needs the tensorboard extra")
    src, name, how = SOURCES[fmt]
    how = dict(how)
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as f:
        path.write_bytes(_mutate(f.read(), edits))
    where = str(tmp_path if fmt == "tensorboard" else path)
    t0 = time.perf_counter()
    try:
        got = read_logs(where, how.pop("metrics"), **how)
    except PilotError as e:
        msg = str(e)
        assert "\n" not in msg and msg.strip(), msg
    else:
        assert isinstance(got, Logs) and got.runs
    assert time.perf_counter() - t0 < 10, "a mutated file took more than 10 s to read"
    shutil.rmtree(tmp_path / "b64", ignore_errors=True)


def test_a_mutated_file_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys):
    """The command's answer to a damaged trainer_state.json: one line naming it, exit 2."""
    src, name, _ = SOURCES["trainer_state"]
    path = tmp_path / name
    with open(src, "rb") as f:
        path.write_bytes(_mutate(f.read(), [("cut", 1000, 0)]))
    with pytest.raises(SystemExit) as e:
        plan_main("plan_fuzz")(["--logs", str(path), "--preset", "trl", "--progress",
                                "acc>=0.5", "--failure", "kl>=1", "--out", str(tmp_path),
                                "--no-figure"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and str(path) in err, err
    assert "Traceback" not in err
