"""--help as a reader sees it: an option's "(default ...)" only where the default says
something (not None, not an empty list, not a switch's False, not where the help states its
own default), and every output flag explained."""
import re

import pytest

from twoclock.cli.flags import with_default
from twoclock.cli.main import main as twoclock
from twoclock.cli.plan import main as plan


def _help(capsys, run, argv) -> str:
    """The help text of run(argv), its lines joined as one (argparse wraps at the terminal)."""
    with pytest.raises(SystemExit) as e:
        run(argv)
    assert e.value.code == 0
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("value, switch, none, want", [
    (None, False, False, "the help"),
    ((), False, False, "the help"),
    ([], False, False, "the help"),
    (False, True, False, "the help"),
    (None, False, True, "the help (default none)"),
    (0.95, False, False, "the help (default 0.95)"),
    (0, False, False, "the help (default 0)"),
    ("refuse", False, False, "the help (default refuse)"),
    ((8, 16), False, False, "the help (default (8, 16))"),
    (True, True, False, "the help (default True)"),
    (False, False, False, "the help (default False)"),  # a value, not a switch
    ((0.1, None), False, True, "the help (default (0.1, none))"),  # typed 'none' in a list too
])
def test_a_default_is_shown_only_where_it_says_something(value, switch, none, want):
    assert with_default("the help", value, switch=switch, none=none) == want


@pytest.mark.parametrize("text", ["a run's lr (default: the peak it logs)",
                                  "pilot runs per batch (default 4; with --logs 8)",
                                  "the rule to use; default: the pilots'"])
def test_a_help_that_states_its_default_gets_no_second_one(text):
    assert with_default(text, 7) == text and with_default(text, None) == text


def test_plan_help_shows_real_defaults_and_no_empty_ones(capsys):
    text = _help(capsys, plan, ["--help"])
    for empty in ("(default None)", "(default ())", "(default False)", "(default [])"):
        assert empty not in text
    # by hand, from the flags' meaning: the positional argument states its own default once
    assert "RUNS.csv pilot-run CSV (default: the published GRPO table) options:" in text or \
        "RUNS.csv pilot-run CSV (default: the published GRPO table) optional arguments:" in text
    assert "a run's learning rate (default: the peak it logs) --updates RUN=K" in text
    assert "confidence level of the bands (default 0.95)" in text
    assert "must be left at the target (default 0.1)" in text
    assert "keep-last (the later copy) (default refuse)" in text
    assert "the share at which clipping binds (default 0.02)" in text


def test_a_studys_help_keeps_its_values_and_shows_none_where_none_is_typed(capsys):
    text = _help(capsys, twoclock, ["run", "time_to_target", "--help"])
    assert "(default None)" not in text and "(default False)" not in text
    assert "memory cap on responses decoded at once ('none': no cap) (default none)" in text
    assert "k: sharpness of the knee (1 = additive) (default 3.74)" in text
    text = _help(capsys, twoclock, ["run", "critical_batch", "--help"])
    assert "(default False)" not in text and "(default None)" not in text
    assert "--rotate random rotation of H and C --random-start" in text
    assert "seeds per (batch, lr0) (default 16)" in text


def test_every_output_flag_says_what_it_does(capsys):
    text = _help(capsys, plan, ["--help"])
    assert "--no-figure do not draw the figure (plan.png, plan.pdf in OUT) --quiet" in text
    text = _help(capsys, twoclock, ["run", "critical_batch", "--help"])
    assert ("--no-figure do not draw the figure (critical_batch_quadratic.png, "
            "critical_batch_quadratic.pdf in OUT)") in text


def test_plans_batch_flag_counts_responses_per_rollout_batch(capsys):
    """docs/plan.md: a run's batch is its responses per logged step (per rollout batch), not
    per optimizer update (K updates may share one rollout batch)."""
    text = _help(capsys, plan, ["--help"])
    assert ("--batch RUN=B a run's batch (responses per rollout batch: the samples one logged "
            "step consumes) where its files do not record it") in text
    assert "responses per update" not in text


@pytest.mark.parametrize("study, models", [
    ("clipping", "bandit"), ("updates_cost", "bandit"),  # the bandit's clip, its theory
    ("time_to_target", "quadratic"),  # defaults for the quadratic alone
    ("critical_batch", "quadratic | bandit | policy"),  # every model
])
def test_model_lists_only_the_models_the_study_accepts(capsys, study, models):
    """--model listed every model, and the study then refused all but its own."""
    text = _help(capsys, twoclock, ["run", study, "--help"])
    got = re.search(r"--model MODEL the model: (.*?) study:", text)
    assert got is not None and got.group(1) == models, text


def test_clips_help_reads_as_one_sentence_with_none_as_typed(capsys):
    text = _help(capsys, twoclock, ["run", "clipping", "--help"])
    assert ("--clips CLIPS [CLIPS ...] symmetric clip eps values and 'none', the unclipped "
            "reference every claim compares with (give it too) (default (0.1, 0.2, 0.3, 0.5, "
            "none))") in text
    assert "(required)" not in text and "None" not in text


def test_a_sweep_over_several_models_shows_each_models_own_defaults(capsys):
    """phase_diagram and shapes ran each panel at its model's grid while --help showed
    SweepConfig's (16 seeds, budget 200000, 128 checkpoints). The values here are the studies'
    tables (phase: quadratic 6 batches 8..256, 30k samples; bandit 64..1024, 100k; 8 seeds and
    8 checkpoints each. shapes: 16 / 8 / 4 seeds, 40k / 60k / 4096 budgets, 256 runs a chunk)."""
    text = _help(capsys, twoclock, ["run", "phase_diagram", "--help"])
    assert ("--batches BATCHES [BATCHES ...] batch sizes (default: each model's own: quadratic "
            "(8, 16, 32, 64, 128, 256); bandit (64, 128, 256, 512, 1024))") in text
    assert ("--budget BUDGET sample budget per run (default: each model's own: quadratic "
            "30000; bandit 100000)") in text
    assert "--seeds SEEDS seeds per (batch, lr0) (default 8)" in text
    assert "--n-ckpt N_CKPT checkpoints recorded per run (default 8)" in text
    for wrong in ("(default 16)", "(default 200000)", "(default 128)", "(0.005, 0.01, 0.02))"):
        assert wrong not in text, wrong
    text = _help(capsys, twoclock, ["run", "shapes", "--help"])
    assert ("--seeds SEEDS seeds per (batch, lr0) (default: each model's own: quadratic 16; "
            "bandit 8; policy 4)") in text
    assert ("--budget BUDGET sample budget per run (default: each model's own: quadratic "
            "40000; bandit 60000; policy 4096)") in text
    assert "--max-lanes MAX_LANES runs per compiled chunk (default 256)" in text
    # one model: its own values as the defaults
    text = _help(capsys, twoclock, ["run", "shapes", "--models", "bandit", "--help"])
    assert "--seeds SEEDS seeds per (batch, lr0) (default 8)" in text
    assert "--budget BUDGET sample budget per run (default 60000)" in text


@pytest.mark.parametrize("study", ["bandit_regimes", "plan_check", "plan_calibration"])
def test_a_study_that_draws_no_figure_offers_no_no_figure(capsys, study):
    """These three print tables and write JSON only: --no-figure had been offered and did
    nothing. It is still taken (scripts pass it to every study), and changes nothing."""
    text = _help(capsys, twoclock, ["run", study, "--help"])
    assert "--no-figure" not in text and "figure" not in text, text
    assert "--out OUT folder for the JSON --json JSON" in text
    from twoclock.cli.run_study import parse
    from twoclock.studies import STUDIES
    assert parse(STUDIES[study], ["--no-figure"], study)[4].no_figure is True
