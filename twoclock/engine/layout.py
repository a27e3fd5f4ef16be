"""How a sweep is cut into chunks before anything is compiled.

Batches are grouped by scan length (and by batch where the batch sets shapes); a group's noise
streams, ordered (batch in group, seed), are split into equal chunks of at most max_lanes runs,
each a multiple of the device count. A group is described once (`Group`), so a sweep of 10^8
seeds is laid out and estimated without listing its chunks; the chunks are listed only to run.
"""
from dataclasses import dataclass
import math

from twoclock.config import SweepConfig
from twoclock.model import Model


@dataclass(frozen=True)
class Chunk:
    """A slice [start, stop) of one group's noise streams, ordered (batch in group, seed).

    Each stream runs every lr0 of the sweep on one draw of its noise (`twoclock.engine.stages`)."""
    n_steps: int
    static_batch: int | None
    batch_idx: tuple
    start: int
    stop: int
    lanes: int  # padded stream count the program is compiled for


@dataclass(frozen=True)
class Group:
    """Batches of one scan length (and one batch where it sets shapes): `streams` noise streams
    in chunks of `lanes` (the last one padded)."""
    n_steps: int
    static_batch: int | None
    batch_idx: tuple
    streams: int
    lanes: int

    @property
    def n_chunks(self) -> int:
        return math.ceil(self.streams / self.lanes)

    def chunks(self) -> list:
        return [Chunk(self.n_steps, self.static_batch, self.batch_idx, start,
                      min(start + self.lanes, self.streams), self.lanes)
                for start in range(0, self.streams, self.lanes)]


def n_steps_for(budget: int, batch: int) -> int:
    return budget // batch


def groups(spec: Model, sweep: SweepConfig, max_lanes: int, n_dev: int) -> tuple:
    """The sweep's groups: batches grouped by scan length (and by batch if static), each split
    into equal chunks of at most max_lanes runs, each a multiple of n_dev streams."""
    by_key: dict = {}
    for i, b in enumerate(sweep.batches):
        key = (n_steps_for(sweep.budget, b), b if spec.static_batch else None)
        by_key.setdefault(key, []).append(i)
    out = []
    max_streams = max(1, max_lanes // len(sweep.lr0s))  # runs per chunk <= max_lanes
    for (n_steps, static_b), idx in by_key.items():
        total = len(idx) * sweep.seeds
        n_chunks = math.ceil(total / max_streams)
        size = math.ceil(math.ceil(total / n_chunks) / n_dev) * n_dev
        out.append(Group(n_steps, static_b, tuple(idx), total, size))
    return tuple(out)


def listed(grouped) -> list:
    """Every chunk of the groups, in the order they run (and are numbered in a store)."""
    return [c for g in grouped for c in g.chunks()]


def chunk_layout(spec: Model, sweep: SweepConfig, max_lanes: int, n_dev: int) -> list:
    """The sweep's chunks (`groups`, listed)."""
    return listed(groups(spec, sweep, max_lanes, n_dev))


# where callers outside the engine import them from (their homes: estimate, codegen)
from twoclock.engine.codegen import CODEGENS  # noqa: E402,F401
from twoclock.engine.estimate import _duration  # noqa: E402,F401
