"""What the claims table's parts share (twoclock/analysis/claims.py renders the table): the
committed sources under docs/claim_sources/ and docs/preregistered/, read as per-seed clocks,
and a CI's verdict against a claim and its text. NumPy only."""
import json
import os

import numpy as np

from twoclock.analysis import clocks, paired

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES, PREREG = "docs/claim_sources", "docs/preregistered"


def load(rel: str) -> dict:
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def verdict(ci, claim: tuple) -> str:
    """holds / not established / fails of a CI [lo, hi] (None: unbounded) against a claim:
    ("above", x): the contrast exceeds x; ("below", x); ("within", a, b): it lies in [a, b]."""
    lo = -np.inf if ci[0] is None else ci[0]
    hi = np.inf if ci[1] is None else ci[1]
    kind, *v = claim
    if kind == "above":
        return "holds" if lo > v[0] else "fails" if hi < v[0] else "not established"
    if kind == "below":
        return "holds" if hi < v[0] else "fails" if lo > v[0] else "not established"
    a, b = v
    return "holds" if a <= lo and hi <= b else "fails" if hi < a or lo > b else "not established"


def ci_text(est: dict, digits: int) -> str:
    f = lambda x, side: (side if x is None else f"{x:.{digits}f}")  # noqa: E731
    return f"{f(est['median'], '>')} [{f(est['ci'][0], '<')}, {f(est['ci'][1], '>')}]"


class Source:
    """One committed per-seed source (tools/claims_sources.py): clocks [batch, lr0, seed]."""

    def __init__(self, name: str):
        self.name, self.path = name, f"{SOURCES}/{name}.json"
        self.d = load(self.path)
        self.idx = clocks.bootstrap_indices(self.d["seeds"])

    def seeds(self, clock: str, b: int, lr0: float) -> np.ndarray:
        i, j = self.d["batches"].index(b), self.d["lr0s"].index(lr0)
        return np.asarray(self.d["per_seed"][clock][i][j], np.float64)

    def ratio(self, clock: str, b: int, b_ref: int, lr0: float) -> dict:
        """N(b) / N(b_ref) at lr0, paired over seeds."""
        return paired.ratio_ci(self.seeds(clock, b, lr0), self.seeds(clock, b_ref, lr0),
                               self.idx)

    def median_ci(self, clock: str, b: int, lr0: float) -> dict:
        return clocks.summarize(self.seeds(clock, b, lr0), idx=self.idx)


def policy_cell(name: str, source: str = "policy_study") -> tuple:
    """(per_seed {batch: {clock: [S]}}, bootstrap indices, path) of a policy study cell."""
    path = f"{SOURCES}/{source}.json"
    per = load(path)["cells"][name]["per_seed"]
    return per, clocks.bootstrap_indices(len(per[min(per, key=int)]["progress"])), path
