"""What a process keeps of what it built from a model (its programs, its estimate's traces),
so that building it again costs nothing."""
from collections import OrderedDict
from typing import Callable


class Kept:
    """The last `limit` values made from a model, the least recently used out first."""

    def __init__(self, limit: int):
        self.limit, self.entries = limit, OrderedDict()

    def get(self, model, key: tuple, make: Callable):
        """The value kept under (model, key), else make()'s, kept."""
        k = (id(model), key)
        hit = self.entries.get(k)
        if hit is not None:  # the entry holds its model, so no other object has its id
            self.entries.move_to_end(k)
            return hit[1]
        value = make()
        self.entries[k] = (model, value)
        while len(self.entries) > self.limit:
            self.entries.popitem(last=False)
        return value
