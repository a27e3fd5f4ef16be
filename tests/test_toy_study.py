"""A study is one module and one registry line: a toy study, written here and registered with
one line, gets its flags, its refusals, its run, its report and its JSON from the generic
runner (`twoclock.cli.run_study`), on the toy model of tests/test_toy_model.py, whose clocks
are known in closed form."""
from dataclasses import dataclass
import json
from unittest import mock

import pytest

from tests.test_toy_model import hand_clocks, registry  # noqa: F401 (a fixture)
from twoclock.cli import run_study
from twoclock.config import SweepConfig, param, require, require_int
from twoclock.engine.sweep import run_sweep
from twoclock.studies import STUDIES
from twoclock.studies.protocol import Study


# ---- the study: everything a new study writes ------------------------------------------------
@dataclass(frozen=True)
class Config:
    """Progress clocks at a few batches."""
    SCRIPT = "toy.py"  # the command's name in messages
    DESCRIPTION = "the toy study"
    batches: tuple = param((8, 32), "batches")
    lr0: float = param(0.1, "base learning rate at b0")
    seeds: int = param(2, "seeds per batch")

    def __post_init__(self):
        require_int("seeds", self.seeds)
        require(self.lr0 > 0, "lr0", "> 0", self.lr0)


def run(model, model_cfg, opt, cfg: Config, *, keep=None, quiet=False, engine=None) -> dict:
    sweep = SweepConfig(batches=cfg.batches, lr0s=(cfg.lr0,), seeds=cfg.seeds, budget=2000,
                        n_ckpt=8)
    res = run_sweep(model, model_cfg, opt, sweep, quiet=quiet, keep=keep)
    return {"model": model.name,
            "n_prog": {str(b): float(res.prog_n[i, 0].max()) for i, b in enumerate(res.batches)}}


def report(out: dict) -> str:
    return "; ".join(f"B {b}: {n:.1f}" for b, n in out["n_prog"].items())


TOY_STUDY = Study("toy_study", Config, run, report, models=("toy",))
# ----------------------------------------------------------------------------------------------


@pytest.fixture
def studies(monkeypatch, registry):  # noqa: F811 (the toy model's registry)
    monkeypatch.setitem(STUDIES, "toy_study", TOY_STUDY)  # the one registry line


def main(*argv):
    with mock.patch("twoclock.cli.run_study.setup"):
        return run_study.main(STUDIES.toy_study, list(argv))


def test_the_runner_runs_the_toy_study_and_its_numbers_are_the_hand_computed_ones(studies,
                                                                                   tmp_path,
                                                                                   capsys):
    path = tmp_path / "toy.json"
    assert main("--optimizer", "sgd", "--batches", "8", "32", "--seeds", "3", "--quiet",
                "--json", str(path), "--out", str(tmp_path)) == 0
    out = json.loads(path.read_text())
    # float32 clocks against the float64 closed form
    want = {"8": hand_clocks(8)[0], "32": hand_clocks(32)[0]}
    assert out["model"] == "toy" and out["n_prog"] == pytest.approx(want, rel=1e-5)
    assert f"B 8: {want['8']:.1f}; B 32: {want['32']:.1f}" in capsys.readouterr().out


@pytest.mark.parametrize("argv, flag", [(("--seeds", "0"), "--seeds"), (("--lr0", "-1"), "--lr0"),
                                        (("--model", "quadratic"), "--model")])
def test_the_toy_studys_bad_input_is_one_line_and_exit_2(studies, tmp_path, capsys, argv, flag):
    with pytest.raises(SystemExit) as e:
        main(*argv, "--out", str(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith(f"toy.py: error: {flag} ")
    assert not any(tmp_path.iterdir())  # refused before anything ran


def test_the_toy_studys_flags_come_from_its_config(studies, capsys):
    with pytest.raises(SystemExit):
        main("--help")
    text = capsys.readouterr().out
    for flag in ("--batches", "--lr0", "--seeds", "--optimizer", "--pull", "--json"):
        assert flag in text
    assert "seeds per batch (default 2)" in " ".join(text.split())


def test_a_study_record_is_what_a_study_is_and_no_model_field_names_a_study():
    """How a command looks is its config type's (the toy's SCRIPT above), not the record's;
    and a model does not know which studies exist."""
    from twoclock.model import Model
    assert Study._fields == ("name", "config", "run", "report", "figure", "models")
    assert not (set(STUDIES) | {"studies"}) & set(Model._fields)
