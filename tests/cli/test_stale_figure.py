"""An earlier run's figure is not handed back beside new results: with --no-figure the command's
own figure files in OUT (NAME.png, NAME.pdf) are removed and the removal is printed
(twoclock/cli/common.py, `publish`)."""
import types

from twoclock.cli.common import publish


def _ns(tmp_path, no_figure):
    return types.SimpleNamespace(out=str(tmp_path), json=None, no_figure=no_figure)


def test_no_figure_removes_an_earlier_runs_figure_and_says_so(tmp_path, capsys):
    for ext in ("png", "pdf"):
        (tmp_path / f"plan.{ext}").write_text("an earlier run's figure")
    (tmp_path / "other.png").write_text("another command's figure")
    publish(_ns(tmp_path, True), "plan", {"x": 1}, "table", figure=lambda out: None)
    assert not (tmp_path / "plan.png").exists() and not (tmp_path / "plan.pdf").exists()
    assert (tmp_path / "other.png").exists() and (tmp_path / "plan.json").exists()
    text = capsys.readouterr().out
    assert "removed " in text and "an earlier run's figure, not of these results" in text


def test_nothing_is_removed_or_said_where_there_was_no_figure(tmp_path, capsys):
    publish(_ns(tmp_path, True), "plan", {"x": 1}, "table", figure=lambda out: None)
    assert "an earlier run's figure" not in capsys.readouterr().out
    # a command that draws no figure at all leaves a file of that name alone
    (tmp_path / "study.png").write_text("not this command's")
    publish(_ns(tmp_path, True), "study", {"x": 1}, "table", figure=None)
    assert (tmp_path / "study.png").exists()
