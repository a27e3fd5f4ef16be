"""A pilot log already in memory (twoclock.plan_logs): a mapping {column: values} or a pandas
DataFrame, as the header and rows a CSV of it would give; pilot.reader reads them with the same
checks, its errors naming the row ('table row 3, column lr') instead of a file's line.

Cells are what a CSV cell or a JSON Lines value may be: a number, a numeric string, or empty
(None, or an empty string: not logged). In a mapping NaN is refused, as a CSV's 'nan' is; in a
DataFrame a missing value (NaN, None) is an empty cell, as pandas reads an empty CSV cell.
pandas is not needed: a DataFrame is recognised only where pandas is already imported.
"""
from collections.abc import Mapping
import os
import sys

import numpy as np

from twoclock.pilot.plan import PilotError

NAME = "table"  # a table in memory, in errors and in the plan's source


def is_path(source) -> bool:
    return isinstance(source, (str, bytes, os.PathLike))


def _cell(v):
    """A NumPy scalar as its exact Python value; anything else as it is."""
    return v.item() if isinstance(v, np.generic) else v


def _empty(v) -> bool:
    return v is None or (isinstance(v, str) and not v.strip())


def _column(name, values) -> list:
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__"):
        raise PilotError(f"{NAME}: column {name!r} must be a sequence of cells (a list, tuple or "
                         f"1-D array; got {type(values).__name__})")
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise PilotError(f"{NAME}: column {name!r} must be 1-D (got shape {values.shape})")
    return [_cell(v) for v in values]


def _columns(source) -> dict:
    """{name: [cells]} of a mapping or a DataFrame; PilotError for anything else."""
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(source, pd.DataFrame):
        dup = source.columns[source.columns.duplicated()]
        if len(dup):
            raise PilotError(f"{NAME}: column {dup[0]!r} appears twice")
        return {c: [None if gone else v for v, gone in zip(source[c].tolist(),
                                                           source[c].isna().tolist())]
                for c in source.columns}
    if isinstance(source, Mapping):
        return {name: _column(name, values) for name, values in source.items()}
    raise PilotError(f"source: a path, a mapping {{column: values}} or a pandas DataFrame "
                     f"(got {type(source).__name__})")


def table_rows(source) -> tuple:
    """(header, [(line, {column: cell})], places) of a table in memory: row i is line i (the
    plan's `line` of a crossing is its row), places[i] names it ('table row i'); rows whose
    every cell is empty are skipped, as a CSV's blank lines are. PilotError for a column name
    that is not a string, or columns of different lengths."""
    cols = _columns(source)
    head = tuple(cols)
    for h in head:
        if not isinstance(h, str):
            raise PilotError(f"{NAME}: column names must be strings (got {h!r})")
    n = len(cols[head[0]]) if head else 0
    for h in head:
        if len(cols[h]) != n:
            raise PilotError(f"{NAME}: column {h!r} has {len(cols[h])} values, column "
                             f"{head[0]!r} has {n}")
    rows = [(i, {h: cols[h][i] for h in head}) for i in range(n)]
    rows = [(ln, r) for ln, r in rows if not all(_empty(v) for v in r.values())]
    return head, rows, tuple(f"{NAME} row {i}" for i in range(n))


__all__ = ["NAME", "is_path", "table_rows"]
