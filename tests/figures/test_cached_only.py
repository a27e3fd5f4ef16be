"""Every figure `python -m paper_figures` draws from a cached file only is drawn from what its
study writes: paper_figures takes a cached file only when it carries this version's result
schema, so a study that does not write the key has a figure that is always skipped (the policy
and damage studies' were, until their outputs carried it). Running those studies takes many
minutes, so this reads each study's `run` source for the key; the drawing itself is tested with
hand-made files in test_shapes_figures.py."""
import inspect
import os

import pytest

import paper_figures.__main__ as pf
from twoclock.studies import STUDIES


def _study_of(result_file: str):
    name = os.path.splitext(result_file)[0]
    return STUDIES[name]


@pytest.mark.parametrize("figure", sorted(pf.CACHED_ONLY))
def test_a_cached_only_figures_study_writes_the_result_schema(figure):
    result_file = pf.CACHED_ONLY[figure][0]
    study = _study_of(result_file)
    module = inspect.getmodule(study.run)
    src = inspect.getsource(module)
    assert '"schema": results.SCHEMA' in src, (figure, module.__name__)


def test_a_file_without_the_schema_is_not_current(tmp_path):
    """The rule the test above guards: no schema key, not current (so skipped)."""
    p = tmp_path / "damage_study.json"
    p.write_text('{"study": {}, "cells": {}}')
    assert not pf.current(str(p))
    p.write_text('{"schema": %d, "study": {}, "cells": {}}' % pf.SCHEMA)
    assert pf.current(str(p))
