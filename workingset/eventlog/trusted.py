"""A compact MessagePack form of our own stored values, decoded without checking each value again.

msgspec checks every constraint of a type as it decodes: each ID, hash and timestamp is
matched against its pattern. That is what input from outside needs, and it was most of the
cost of decoding a large state: at 10,000 evidence items, three quarters of the time of
decoding a snapshot went to pattern matches of values that were checked when the state was
first accepted, and that a checksum over the stored bytes now vouches for (see
`snapshots.take_snapshot`).

`TrustedCodec(T)` works through a twin of `T`: the same Structs, field by field and in the
same order, with every `Meta` constraint dropped (types, literals and tags stay), each
encoded as an array rather than a map (no field names: 38% fewer bytes for a snapshot).
`encode` converts a value to its twin (`msgspec.convert`, attribute by attribute) and
encodes that. `decode` decodes the twin and then gives each object its model class back
(`__class__`), which Python allows because a twin has the same base and the same slots. The
result equals, field for field and type for type, the value that was encoded; the tests hold
it to that. A type whose twin cannot be built so (a base with fields of its own, renamed
fields) is refused when the codec is made; if Python ever refuses a re-class, the twin is
converted to the model's types with every constraint checked instead.
"""

from __future__ import annotations

import types
import typing
from operator import attrgetter
from typing import Annotated, Any, Literal, Union

import msgspec
from msgspec.structs import fields

_Struct = msgspec.Struct


class TrustedCodec:
    """MessagePack of `tp` with every Struct as an array, decoded without checking value constraints."""

    def __init__(self, tp: Any):
        self.type = tp
        self._originals: dict[type, type] = {}  # twin -> model class
        self._walks: dict[
            type, tuple
        ] = {}  # twin -> (getter, how, twin) of its fields that may hold a Struct
        self._twins: dict[type[_Struct], type[_Struct]] = {}
        # model class -> (its fields that may be UNSET, its single-Struct fields leading to more)
        self._unsettable: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self._twin_type = self._strip(tp)
        self._decoder = msgspec.msgpack.Decoder(self._twin_type)

    def encode(self, value: Any) -> bytes:
        """The compact bytes of `value` (of type `tp`)."""
        value = self._unset_to_none(value)
        return msgspec.msgpack.encode(msgspec.convert(value, self._twin_type, from_attributes=True))

    def decode(self, data: bytes) -> Any:
        """The value of type `tp` that `data` holds; raises `msgspec.DecodeError` (or `ValidationError`) if malformed."""
        value = self._decoder.decode(data)
        try:
            self._reclass(value)
        except TypeError:  # a Python that refuses the re-class: convert, checking everything
            twin = self._decoder.decode(data)
            self._none_to_unset(
                twin, delete=True
            )  # a missing attribute converts to its default, UNSET
            return msgspec.convert(twin, self.type, from_attributes=True)
        self._none_to_unset(value)
        return value

    # -- fields left out when unset (`msgspec.UNSET`) ------------------------------------
    # An array cannot leave a field out: such a field is written as null (its type holds no
    # null of its own, so null means unset) and read back as UNSET. Only single-Struct fields
    # lead to them (`_twin` refuses a list or dict of such Structs).

    def _unset_to_none(self, value: Any) -> Any:
        """`value`, or a copy with each UNSET field (however deep) None; the caller's objects are not changed."""
        tp = type(value)
        names, children = self._unsettable.get(tp, ((), ()))
        if not names and not children:
            return value
        changes = {name: None for name in names if getattr(value, name) is msgspec.UNSET}
        for name in children:
            held = getattr(value, name)
            cleaned = self._unset_to_none(held)
            if cleaned is not held:
                changes[name] = cleaned
        return msgspec.structs.replace(value, **changes) if changes else value

    def _none_to_unset(self, value: Any, delete: bool = False) -> None:
        """Give each field written as null for UNSET its UNSET back (or, with `delete`, remove it), in place."""
        model = self._originals.get(type(value), type(value))
        names, children = self._unsettable.get(model, ((), ()))
        for name in names:
            if getattr(value, name) is None:
                if delete:
                    delattr(value, name)
                else:
                    setattr(value, name, msgspec.UNSET)
        for name in children:
            held = getattr(value, name, None)
            if held is not None and held is not msgspec.UNSET:
                self._none_to_unset(held, delete)

    # -- the twin types ----------------------------------------------------------------

    def _strip(self, tp: Any) -> Any:
        """`tp` with its constraints dropped and every Struct replaced by its twin."""
        origin = typing.get_origin(tp)
        if origin is Annotated:
            return self._strip(typing.get_args(tp)[0])
        if (
            tp is msgspec.UnsetType
        ):  # arrays cannot leave a field out: the caller writes None for UNSET
            return type(None)
        if isinstance(tp, type) and issubclass(tp, _Struct):
            return self._twin(tp)
        if origin is Literal or origin is None:
            return tp
        args = tuple(self._strip(a) for a in typing.get_args(tp))
        if origin is Union or origin is types.UnionType:
            return Union[args]  # noqa: UP007 (built from a tuple at run time)
        return origin[args]

    def _twin(self, tp: type[_Struct]) -> type[_Struct]:
        found = self._twins.get(tp)
        if found is not None:
            return found
        (base,) = tp.__bases__
        assert issubclass(base, _Struct)  # a Struct's one base is one too (msgspec.Struct at least)
        if base.__struct_fields__:
            raise TypeError(
                f"{tp.__name__}: a trusted twin needs a base without fields, not {base.__name__}"
            )
        if any(f.encode_name != f.name for f in fields(tp)):
            raise TypeError(f"{tp.__name__}: a trusted twin does not rename fields")
        c = tp.__struct_config__
        if c.tag_field is not None and getattr(tp, c.tag_field, None) != c.tag:
            raise TypeError(
                f"{tp.__name__}: a trusted twin needs its tag as a class attribute {c.tag_field} = {c.tag!r}"
            )
        specs: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for f in fields(tp):
            if f.default is msgspec.UNSET:
                specs.append((f.name, self._strip(f.type), None))
            elif f.default is not msgspec.NODEFAULT:
                specs.append((f.name, self._strip(f.type), f.default))
            elif f.default_factory is not msgspec.NODEFAULT:
                specs.append(
                    (f.name, self._strip(f.type), msgspec.field(default_factory=f.default_factory))
                )
            else:
                specs.append((f.name, self._strip(f.type)))
        twin = msgspec.defstruct(
            tp.__name__, specs, bases=(base,), module=__name__, kw_only=True,
            tag=c.tag, tag_field=c.tag_field, forbid_unknown_fields=c.forbid_unknown_fields, omit_defaults=c.omit_defaults,
            array_like=True, frozen=c.frozen, eq=c.eq, order=c.order, gc=c.gc, weakref=c.weakref, dict=c.dict,
            cache_hash=c.cache_hash, repr_omit_defaults=c.repr_omit_defaults,
        )  # fmt: skip
        if c.tag_field is not None:
            setattr(
                twin, c.tag_field, c.tag
            )  # so that a twin converts back to its model class by attribute
        if twin.__struct_fields__ != tp.__struct_fields__:
            raise TypeError(f"{tp.__name__}: its trusted twin orders its fields differently")
        self._twins[tp] = twin
        self._originals[twin] = tp
        self._note_unsettable(tp)
        plans = ((f.name, self._plan(f.type)) for f in fields(tp))
        self._walks[twin] = tuple(
            (attrgetter(name), *plan) for name, plan in plans if plan is not None
        )
        return twin

    def _note_unsettable(self, tp: type[_Struct]) -> None:
        names, children = [], []
        for f in fields(tp):
            if _mentions(f.type, msgspec.UnsetType):
                names.append(f.name)
            held = [s for s in self._structs_in(f.type) if s in self._unsettable]
            if not held:
                continue
            origin = typing.get_origin(_bare(f.type))
            if origin in (list, dict, tuple):
                raise TypeError(
                    f"{tp.__name__}.{f.name}: a trusted twin leaves fields out only through single Structs"
                )
            children.append(f.name)
        if names or children:
            self._unsettable[tp] = (tuple(names), tuple(children))

    def _structs_in(self, tp: Any) -> list[type]:
        if isinstance(tp, type):
            return [tp] if issubclass(tp, _Struct) else []
        return [s for a in typing.get_args(tp) if not isinstance(a, (str, int, msgspec.Meta))
                for s in self._structs_in(a)]  # fmt: skip

    def _holds_struct(self, tp: Any) -> bool:
        if isinstance(tp, type):
            return issubclass(tp, _Struct)
        return any(
            self._holds_struct(a)
            for a in typing.get_args(tp)
            if not isinstance(a, (str, int, msgspec.Meta))
        )

    def _plan(self, tp: Any) -> tuple[str, type | None] | None:
        """How to reach the Structs in a field of (model) type `tp`, or None if it holds none.

        ("one" | "list" | "dict", their one twin) for a Struct, a list or a dict of one, optional
        or not; ("any", None) for any other mix, which `_reclass_any` sorts out by type.
        """
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Annotated:
            return self._plan(args[0])
        if isinstance(tp, type) and issubclass(tp, _Struct):
            return "one", self._twins[tp]
        if origin is Union or origin is types.UnionType:
            rest = [a for a in args if a is not type(None) and a is not msgspec.UnsetType]
            if len(rest) == 1:
                return self._plan(rest[0])
        if (
            origin is list
            and len(args) == 1
            and isinstance(args[0], type)
            and issubclass(args[0], _Struct)
        ):
            return "list", self._twins[args[0]]
        if origin is dict and isinstance(args[1], type) and issubclass(args[1], _Struct):
            return "dict", self._twins[args[1]]
        return ("any", None) if self._holds_struct(tp) else None

    # -- giving the decoded objects their model classes back ------------------------------

    def _reclass(self, value: Any) -> None:
        self._reclass_any([value])

    def _reclass_same(self, twin: type, values: list) -> None:
        """Re-class `values`, all of type `twin`, and the Structs within them, a field at a time."""
        original = self._originals[twin]
        for value in values:
            value.__class__ = original
        for get, how, inner in self._walks[twin]:
            held = [
                v for v in map(get, values) if v is not None
            ]  # an optional field's None holds nothing
            if not held:
                continue
            if how == "one":
                self._reclass_same(inner, held)
            elif how == "list":
                self._reclass_same(inner, [item for items in held for item in items])
            elif how == "dict":
                self._reclass_same(inner, [item for items in held for item in items.values()])
            else:
                self._reclass_any(held)

    def _reclass_any(self, values: list) -> None:
        """Re-class the twins among `values` of any types (unions of Structs, nested containers)."""
        by_type: dict[type, list] = {}
        for value in values:
            by_type.setdefault(type(value), []).append(value)
        for tp, same in by_type.items():
            if tp in self._originals:
                self._reclass_same(tp, same)
            elif tp is list or tp is tuple:
                self._reclass_any([item for value in same for item in value])
            elif tp is dict:
                self._reclass_any([item for value in same for item in value.values()])


def _bare(tp: Any) -> Any:
    """`tp` without `Annotated` and without the None and UNSET of a union."""
    if typing.get_origin(tp) is Annotated:
        return _bare(typing.get_args(tp)[0])
    if typing.get_origin(tp) in (Union, types.UnionType):
        rest = [
            a for a in typing.get_args(tp) if a is not type(None) and a is not msgspec.UnsetType
        ]
        return _bare(rest[0]) if len(rest) == 1 else tp
    return tp


def _mentions(tp: Any, target: Any) -> bool:
    return tp is target or any(
        _mentions(a, target) for a in typing.get_args(tp) if not isinstance(a, (str, int))
    )
