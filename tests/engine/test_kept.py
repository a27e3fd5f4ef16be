"""engine.kept: what a process keeps of what it built from a model."""
from twoclock.engine.kept import Kept


class _Model:  # any object: entries are told apart by the object, not by equality
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


def test_a_value_is_made_once_per_model_and_key_and_the_least_recently_used_goes_first():
    made = []
    make = lambda v: lambda: made.append(v) or v
    kept, a, b = Kept(2), _Model(), _Model()
    assert kept.get(a, ("k",), make("a")) == "a"
    assert kept.get(a, ("k",), make("again")) == "a"  # kept: not made again
    assert kept.get(b, ("k",), make("b")) == "b"  # an equal model, another object: its own
    assert kept.get(a, ("k",), make("again")) == "a"  # used last now; b is the oldest
    assert kept.get(a, ("j",), make("aj")) == "aj"  # three entries: b goes
    assert made == ["a", "b", "aj"]
    assert kept.get(b, ("k",), make("b2")) == "b2" and made[-1] == "b2"
    assert kept.get(a, ("j",), make("x")) == "aj"  # a's ("k",) went when b2 came


def test_an_entry_holds_its_model_so_no_new_object_takes_its_id():
    kept = Kept(4)
    kept.get(_Model(), ("k",), lambda: 1)  # the caller drops its reference at once
    for _ in range(100):  # objects made now never reuse the kept model's id
        assert kept.get(_Model(), ("k",), lambda: 2) == 2
        kept.entries.popitem()


def test_a_value_that_is_none_or_falsy_is_kept_like_any_other():
    made = []
    kept, a = Kept(4), _Model()
    for v in (None, 0, ()):
        assert kept.get(a, (repr(v),), lambda v=v: made.append(v) or v) == v
        assert kept.get(a, (repr(v),), lambda: made.append("again")) == v
    assert made == [None, 0, ()]
