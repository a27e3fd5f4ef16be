"""The planner's KEY=VALUE flags (--batch, --lr, --form): split at the last '=', each key once,
each refusal one line that names the item."""
import pytest

from twoclock.pilot.conditions import (parse_condition, parse_failures, parse_forms,
                                       parse_per_run)
from twoclock.pilot.plan import PilotError


def test_per_run_values_split_at_the_last_equals_and_strip_the_run():
    assert parse_per_run(["b64=64", " a=b =1e-6"], "--lr") == {"b64": 64.0, "a=b": 1e-6}
    assert parse_per_run(None, "--batch") == {}


@pytest.mark.parametrize("items, says", [
    (["b64=64", " b64 =32"], "--batch ' b64 =32': run 'b64' is already given 64"),
    (["b64=0"], "--batch 'b64=0': expected RUN=VALUE with a number > 0 (e.g. --batch b64=64)"),
    (["=64"], "--batch '=64': expected RUN=VALUE"),
    (["b64"], "--batch 'b64': expected RUN=VALUE"),
    (["b64=nan"], "--batch 'b64=nan': expected RUN=VALUE")])
def test_per_run_refusals_name_the_item(items, says):
    with pytest.raises(PilotError) as e:
        parse_per_run(items, "--batch")
    assert says in str(e.value) and "\n" not in str(e.value)


def test_forms_key_on_the_condition_as_parsed():
    fcs = [parse_condition("kl>=1", "--failure"), parse_condition("drift>=0.3", "--failure")]
    assert parse_forms(["kl >= 1=knee", "drift>=0.3=power"], fcs) == {
        fcs[0].text: "knee", fcs[1].text: "power"}
    with pytest.raises(PilotError, match=r"--form 'kl>=1=power': 'kl>=1' already has the "
                                         r"form 'knee'"):
        parse_forms(["kl >= 1=knee", "kl>=1=power"], fcs)
    with pytest.raises(PilotError, match="is not one of the --failure conditions"):
        parse_forms(["acc>=1=power"], fcs)


@pytest.mark.parametrize("items, says", [
    (["kl>=1.5", "kl>=1.5"], "--failure 'kl>=1.5': given twice; give each failure condition once"),
    (["kl>=1.5", "drift>=2", "kl >= 1.50"],
     "--failure 'kl >= 1.50': the same condition as --failure 'kl>=1.5'; give each failure "
     "condition once"),
    (["acc<=peak-0.1", "acc <= peak - .1"],
     "--failure 'acc <= peak - .1': the same condition as --failure 'acc<=peak-0.1'; give each "
     "failure condition once")])
def test_a_failure_condition_given_twice_is_refused_naming_it(items, says):
    with pytest.raises(PilotError) as e:
        parse_failures(items)
    assert str(e.value) == says


def test_different_failure_conditions_are_each_kept_in_order():
    """One metric at two thresholds, two ops, or a running peak: four conditions."""
    got = parse_failures(["kl>=1.5", "kl>=2", "kl>1.5", "kl<=peak-1.5"])
    assert [(c.metric, c.op, c.threshold, c.ref) for c in got] == [
        ("kl", ">=", 1.5, None), ("kl", ">=", 2.0, None), ("kl", ">", 1.5, None),
        ("kl", "<=", 1.5, "peak")]
    assert parse_failures([]) == []
