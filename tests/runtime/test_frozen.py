"""`Frozen` records behave as the frozen slotted dataclasses they replace: equality and hash
over the fields (and the class), the same repr, no assignment, copies that compare equal,
`replace` and `as_dict` as `dataclasses.replace` and `asdict` give them."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from runtime.record.contract import RunMeta, Segment
from runtime.record.views import Location, Message, StateView, Usage


@dataclasses.dataclass(frozen=True, slots=True)
class Message_:  # what `Message` was, to compare with
    role: str
    content: str
    name: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()


def test_equality_hash_and_repr_are_the_dataclass_ones() -> None:
    for args in (("user", "hi"), ("tool", "4", "roll", ({"id": 1},))):
        ours, theirs = Message(*args), Message_(*args)
        assert repr(ours) == repr(theirs).replace("Message_", "Message")
        assert ours == Message(*dataclasses.astuple(theirs))
        assert hash(Message("user", "hi")) == hash(Message_("user", "hi"))
    a, b = Segment(0, 1, 2), Segment(0, 1, 3)
    assert a != b and a == Segment(0, 1, 2)
    assert Usage(1, 2, 0.5) != (1, 2, 0.5)  # another class is never equal, as a dataclass
    assert len({Segment(0, 1, 2), Segment(0, 1, 2), b}) == 2


def test_fields_cannot_be_assigned_or_deleted() -> None:
    seg = Segment(0, 1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        seg.lo = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del seg.hi  # type: ignore[misc]
    with pytest.raises(AttributeError):
        seg.other = 1  # type: ignore[attr-defined]
    assert seg == Segment(0, 1, 2)


def test_defaults_and_new_dicts() -> None:
    meta = RunMeta("p.agency", "0" * 64)
    assert (meta.node, meta.args, meta.config, meta.meta, meta.status) == (
        "main",
        {},
        {},
        {},
        "running",
    )
    assert RunMeta("p.agency", "").config is not meta.config  # a new dict each, not shared


def test_copies_pickles_replace_and_as_dict() -> None:
    loc = Location("a.agency", "main", "0", 1, 2, 1, 9)
    view = StateView(
        3, 0, loc, (), {"x": [1, {"y": 2}]}, {"0": (Message("user", "hi"),)}, "0", ("out",), Usage()
    )
    for again in (copy.copy(view), copy.deepcopy(view), pickle.loads(pickle.dumps(view))):
        assert again == view and type(again) is StateView
    moved = view.replace(step=4, error="boom")
    assert (moved.step, moved.error, moved.location, view.step) == (4, "boom", loc, 3)
    with pytest.raises(TypeError):
        view.replace(no_such_field=1)
    plain = view.as_dict()
    assert plain["location"] == dataclasses.asdict(_location_twin(loc))
    assert plain["threads"] == {
        "0": ({"role": "user", "content": "hi", "name": None, "tool_calls": ()},)
    }
    assert plain["usage"] == {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
    assert plain["globals"] == {"x": [1, {"y": 2}]} and plain["globals"] is not view.globals


def _location_twin(loc: Location) -> Any:
    fields = ("file", "scope", "path", "line", "col", "end_line", "end_col")
    twin = dataclasses.make_dataclass("Location", fields, frozen=True)
    return twin(*(getattr(loc, f) for f in fields))
