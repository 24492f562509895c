"""The trusted codec of snapshots: the values it decodes equal, type for type, the ones it encoded."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings

from tests.helpers.factory import sample_state
from tests.helpers.strategies import states
from workingset.eventlog.snapshots import Snapshot
from workingset.eventlog.trusted import TrustedCodec
from workingset.model.state import Capture, Evidence, Hypothesis, State

CODEC = TrustedCodec(Snapshot)


def snapshot(state: State) -> Snapshot:
    return Snapshot(
        seq=7,
        changed=5,
        numbers=(len(state.evidence), len(state.notes), 3),
        requests_before=2,
        state=state,
    )


def classes(value) -> list[str]:
    """Every object's class name in the tree, in a fixed order (Structs by field, lists in order)."""
    out = [type(value).__qualname__ + "@" + type(value).__module__]
    if isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            out += classes(getattr(value, name))
    elif isinstance(value, (list, tuple)):
        for item in value:
            out += classes(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            out += classes(key) + classes(item)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(state=states())
def test_random_states_decode_to_equal_values_of_the_model_classes(state):
    snap = snapshot(state)
    data = CODEC.encode(snap)
    back = CODEC.decode(data)
    assert (
        back == snap
    )  # a msgspec Struct equals only one of its own class: every nested class is the model's
    assert classes(back) == classes(snap)
    assert CODEC.encode(back) == data


def test_it_is_compact_and_a_twin_never_equals_a_model_object():
    snap = snapshot(sample_state())
    data = CODEC.encode(snap)
    assert len(data) < 0.75 * len(msgspec.msgpack.encode(snap))  # arrays, not maps with field names
    twin = msgspec.msgpack.Decoder(CODEC._twin_type).decode(data)
    assert twin != snap and type(twin.state.evidence[0]).__module__ == "workingset.eventlog.trusted"


def test_values_are_not_checked_again_but_types_and_literals_are():
    snap = snapshot(sample_state())
    unchecked = msgspec.structs.replace(snap.state.evidence[0], id="not an evidence ID")
    odd = snapshot(msgspec.structs.replace(snap.state, evidence=[unchecked]))
    assert (
        CODEC.decode(CODEC.encode(odd)).state.evidence[0].id == "not an evidence ID"
    )  # the checksum vouches
    raw = msgspec.msgpack.decode(CODEC.encode(snap))
    raw[4][5][0][2] = "not a scope"  # snapshot.state.evidence[0].scope, by position
    with pytest.raises(msgspec.ValidationError, match="scope"):
        CODEC.decode(msgspec.msgpack.encode(raw))


def test_a_python_that_refuses_the_reclass_gets_every_value_checked(monkeypatch):
    snap = snapshot(sample_state())
    data = CODEC.encode(snap)

    def refuse(value):
        raise TypeError("__class__ assignment: layout differs")

    monkeypatch.setattr(CODEC, "_reclass", refuse)
    assert CODEC.decode(data) == snap
    bad = msgspec.structs.replace(snap.state.evidence[0], id="E1")
    with pytest.raises(msgspec.ValidationError, match="evidence"):
        CODEC.decode(CODEC.encode(snapshot(msgspec.structs.replace(snap.state, evidence=[bad]))))


def test_types_it_cannot_twin_are_refused_when_the_codec_is_made():
    class Base(msgspec.Struct, kw_only=True):
        id: str

    class Child(Base, kw_only=True):
        more: int

    class Renamed(msgspec.Struct, rename="camel"):
        some_field: int

    with pytest.raises(TypeError, match="base without fields"):
        TrustedCodec(Child)
    with pytest.raises(TypeError, match="rename"):
        TrustedCodec(Renamed)
    assert TrustedCodec(list[Evidence]).decode(TrustedCodec(list[Evidence]).encode([])) == []
    assert TrustedCodec(Hypothesis) and TrustedCodec(Capture)
