"""The compiled ``_source`` encoder of a model: documents straight to JSON bytes (msgspec).

:func:`source_encoder` generates, once per model (on its first write), ``encode(doc) ->
bytes | None``: a ``msgspec.Struct`` "mirror" of the model's stored fields (declaration
order, the same keys), filled from the raw slots (no change tracking) and encoded in C by
one shared ``msgspec.json.Encoder``. Its bytes are exactly ``_json.dumps(info.to_source(doc))``
(tests/unit/model/test_wire_encode.py holds it to that), at about half the cost, and no
``_source`` dict is built.

Where msgspec would write a value differently from orjson, the value is handed over as
``msgspec.Raw`` of ``_json.dumps`` (orjson's own bytes): free-form (``any``) values,
floats of 1e16 and more (``1e+16``, not ``1e16``), ints outside 64 bits (orjson refuses
them), enum values that are not plain strings/ints, and any value whose type is not the
one its field's kind holds (a value kept as stored by the lenient hydration). A document
the mirror cannot express at all (an enum field holding an unknown stored value, an
embedded object that is not a model, anything raising) makes ``encode`` return ``None``:
the caller then takes ``to_source`` and ``_json.dumps`` (the lenient path and its errors).

:func:`undeclared_keys` tells whether a stored ``_source`` (a dict, or its JSON bytes: then
without decoding them into a dict) holds keys the model does not declare, at the top or in
an embedded object (what :func:`esmapper._bodies.with_extras` would keep): a save of a
document whose original has none can send the encoder's bytes as they are.
"""

from __future__ import annotations

import datetime as _dt
import enum
import inspect
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from esmapper import _json
from esmapper.model._tracking import TrackedSlot
from esmapper.model.dates import UTC, format_datetime

__all__ = ["ENCODER", "encode_many", "source_encoder", "undeclared_keys"]

#: The one encoder of every mirror (msgspec's encoders are thread-safe).
ENCODER = msgspec.json.Encoder()

#: orjson's integer range (msgspec writes any int; orjson refuses beyond 64 bits)
_LO, _HI = -(2**63), 2**64 - 1
#: msgspec writes ``1e16`` where orjson writes ``1e+16``: floats from here go through orjson
_BIG_FLOAT = 1e16

Encode = Callable[[Any], "bytes | None"]

_lock = threading.RLock()  # an embedded model compiles under its container's
#: model class -> its ``to_struct`` (``None``: the model cannot be mirrored)
_structs: dict[type, Callable[[Any], Any] | None] = {}
#: model class -> its ``encode``
_encoders: dict[type, Encode | None] = {}
#: model class -> the Struct decoding a stored ``_source`` only to check its keys
_checkers: dict[type, Any] = {}


def source_encoder(info: Any) -> Encode | None:
    """The compiled encoder of the model ``info`` describes (``ModelInfo``), made on the
    first call; ``None`` when the model cannot be mirrored (every write then takes
    ``to_source``)."""
    cls = info.cls
    try:
        return _encoders[cls]
    except KeyError:
        pass
    to_struct = _struct_maker(cls)
    encode: Encode | None = None
    if to_struct is not None:
        encode = _make_encode(to_struct)
    _encoders[cls] = encode
    return encode


def _make_encode(to_struct: Callable[[Any], Any]) -> Encode:
    enc = ENCODER.encode

    def encode(doc: Any) -> bytes | None:
        """``_json.dumps(to_source(doc))``'s bytes, or ``None``: take that path."""
        try:
            return enc(to_struct(doc))
        except Exception:  # a value the mirror cannot express: the dict path decides
            return None

    encode.to_struct = to_struct  # type: ignore[attr-defined]  # for encode_many
    return encode


def encode_many(encode: Encode, docs: Sequence[Any]) -> list[bytes | None]:
    """``[encode(doc) for doc in docs]`` (``encode``: a :func:`source_encoder`), the
    mirrors encoded in one call (``encode_lines``: one line per document, JSON holds no raw
    newline, so the lines split back exactly); a batch holding a document the mirror
    cannot express is encoded one by one."""
    to_struct = encode.to_struct  # type: ignore[attr-defined]
    try:
        lines = ENCODER.encode_lines([to_struct(doc) for doc in docs])
    except Exception:  # one of them takes the dict path: which one, encode tells
        return [encode(doc) for doc in docs]
    out: list[bytes | None] = lines.split(b"\n")  # type: ignore[assignment]
    out.pop()  # (after the last newline)
    return out


def _struct_maker(cls: type) -> Callable[[Any], Any] | None:
    """``to_struct(doc)`` of the model ``cls`` (raises for a value it cannot express), or
    ``None`` when the model cannot be mirrored (no ``__esmapper__``)."""
    try:
        return _structs[cls]
    except KeyError:
        pass
    with _lock:
        if cls in _structs:
            return _structs[cls]
        info = getattr(cls, "__esmapper__", None)
        made = None if info is None else _compile(cls, info.fields)
        _structs[cls] = made
        return made


def _getter(cls: type, name: str) -> str | Callable[[Any], Any]:
    """The raw read of attribute ``name``: the wrapped slot's ``__get__`` for a tracked
    field (no tracking), else the name: a plain attribute read (of a slot: the fastest
    read there is)."""
    found = inspect.getattr_static(cls, name, None)
    if isinstance(found, TrackedSlot) and isinstance(found.slot, types.MemberDescriptorType):
        return found.slot.__get__  # type: ignore[no-any-return]
    return name


def _enum_expr(enum_cls: type[enum.Enum]) -> str:
    """The mirror of one member ``{0}``: its value as is when msgspec writes it as orjson
    does (a ``str``, an ``int`` in range, a bool), else orjson's bytes of it. A value that
    is not a member (kept as stored) raises: the document takes the dict path."""
    plain = all(
        type(m.value) in (str, bool) or (type(m.value) is int and _LO <= m.value <= _HI)
        for m in enum_cls
    )
    return "{0}.value" if plain else "_Raw(_dumps({0}.value))"


#: kind -> (the test of a value msgspec writes as orjson does, taken as is; the
#: expression of any other value that is not ``None``)
_PLAIN: dict[str, tuple[str, str]] = {
    "str": ("type({0}) is str", "_Raw(_dumps({0}))"),
    "bool": ("type({0}) is bool", "_Raw(_dumps({0}))"),
    "int": ("type({0}) is int and _LO <= {0} <= _HI", "_Raw(_dumps({0}))"),
    "float": ("type({0}) is float and -_BIG < {0} < _BIG", "_Raw(_dumps({0}))"),
    # aware UTC: msgspec writes format_datetime's ``...Z`` form
    "datetime": ("type({0}) is _datetime and {0}.tzinfo is _UTC", "_fmt({0})"),
}


def _one_expr(spec: Any, ns: dict[str, Any]) -> str:
    """The mirror of one value ``{0}`` of ``spec`` (``None`` stays ``None``): the common
    case (a value of the field's own type) tested first."""
    plain = _PLAIN.get(spec.kind)
    if plain is not None:
        test, other = plain
        return f"({{0}} if {test} else (None if {{0}} is None else {other}))"
    return f"(None if {{0}} is None else {_other_expr(spec, ns)})"


def _other_expr(spec: Any, ns: dict[str, Any]) -> str:
    """The mirror of one value ``{0}`` (not ``None``) of an enum, embedded or free-form
    field."""
    kind = spec.kind
    if kind == "enum":
        return _enum_expr(spec.enum)
    if kind == "inner":
        inner = spec.inner
        inner_struct = _struct_maker(inner)
        if inner_struct is None:
            raise TypeError(f"{inner!r} is not a model")
        ns[f"_icls_{spec.name}"] = inner
        ns[f"_imirror_{spec.name}"] = inner_struct
        return (
            f"(_imirror_{spec.name}({{0}}) if type({{0}}) is _icls_{spec.name} "
            "else _mirror_of(type({0}))({0}))"
        )
    return "_Raw(_dumps({0}))"  # ``any`` and kinds without a mirror of their own


def _many_expr(spec: Any, one: str, var: str) -> str:
    """The mirror of a list field's value ``var``: a list of plain strings as it is (a
    ``str`` subclass passes the test, and msgspec refuses it: the dict path decides),
    else item by item."""
    items = f"(None if {var} is None else [{one.format('_x')} for _x in {var}])"
    if spec.kind == "str":
        return f"({var} if type({var}) is list and _all(_map(_is_str, {var})) else {items})"
    return items


def _mirror_of(cls: type) -> Callable[[Any], Any]:
    """The ``to_struct`` of an embedded object's own class (a subclass); raises for an
    object that is not a model (the document takes the dict path, which decides)."""
    made = _struct_maker(cls)
    if made is None:
        raise TypeError(f"{cls!r} is not a model")
    return made


def _compile(cls: type, fields: Any) -> Callable[[Any], Any]:
    specs = [s for s in fields if s.stored]
    attrs_ = [f"f{i}" for i in range(len(specs))]  # any key: renamed to the stored one
    # not tracked by the collector (``gc=False``): a mirror holds the document's values and
    # mirrors made for it, never itself, so it is in no cycle; a batch's mirrors, alive
    # together until encoded (``encode_many``), then trigger no young passes
    struct = msgspec.defstruct(
        f"{cls.__name__}Mirror",
        [(a, Any) for a in attrs_],
        rename={a: s.name for a, s in zip(attrs_, specs, strict=True)},
        gc=False,
    )
    ns: dict[str, Any] = {
        "_S": struct,
        "_Raw": msgspec.Raw,
        "_dumps": _json.dumps,
        "_UTC": UTC,
        "_datetime": _dt.datetime,
        "_fmt": format_datetime,
        "_LO": _LO,
        "_HI": _HI,
        "_BIG": _BIG_FLOAT,
        "_mirror_of": _mirror_of,
        "_all": all,
        "_map": map,
        "_is_str": str.__instancecheck__,
    }
    reads: list[str] = []
    args: list[str] = []
    for i, spec in enumerate(specs):
        var = f"_v{i}"
        getter = _getter(cls, spec.name)
        if isinstance(getter, str):
            reads.append(f"    {var} = doc.{getter}")
        else:
            ns[f"_g{i}"] = getter
            reads.append(f"    {var} = _g{i}(doc)")
        one = _one_expr(spec, ns)
        args.append(_many_expr(spec, one, var) if spec.many else one.format(var))
    source = "def to_struct(doc):\n" + "\n".join(reads) + f"\n    return _S({', '.join(args)})\n"
    if not specs:
        source = "def to_struct(doc):\n    return _S()\n"
    exec(compile(source, f"<esmapper mirror {cls.__module__}.{cls.__qualname__}>", "exec"), ns)
    return ns["to_struct"]  # type: ignore[no-any-return]


# -- whether a stored source holds keys the model does not declare ------------------------


def _checker(info: Any) -> Any:
    """A Struct of the model's stored keys (values left unparsed, ``msgspec.Raw``) that
    refuses any other key, down the embedded objects a save keeps undeclared keys of
    (``info.inner_fields``)."""
    found = _checkers.get(info.cls)
    if found is not None:
        return found
    inner = {name: _checker(inner_info)[0] for name, inner_info in info.inner_fields}
    specs = [s for s in info.fields if s.stored]
    attrs_ = [f"f{i}" for i in range(len(specs))]
    fields = [
        (a, (inner[s.name] | None) if s.name in inner else msgspec.Raw, None)  # type: ignore[operator]
        for a, s in zip(attrs_, specs, strict=True)
    ]
    struct = msgspec.defstruct(
        f"{info.cls.__name__}Keys",
        fields,
        rename={a: s.name for a, s in zip(attrs_, specs, strict=True)},
        forbid_unknown_fields=True,
    )
    decoder = msgspec.json.Decoder(struct)
    _checkers[info.cls] = (struct, decoder)
    return struct, decoder


def undeclared_keys(info: Any, original: Mapping[str, Any] | bytes | None) -> bool:
    """Whether the stored ``_source`` ``original`` (a dict or its JSON bytes; ``None``:
    nothing stored) may hold a key the model ``info`` does not declare, at its top or in
    an embedded (non-list) object: what a save must keep (``with_extras``). ``True`` when
    it cannot be told cheaply (a value of another shape than declared)."""
    if original is None:
        return False
    if type(original) is bytes:
        try:
            _checker(info)[1].decode(original)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return True
        return False
    return _dict_undeclared(info, original)  # type: ignore[arg-type]


def _dict_undeclared(info: Any, original: Mapping[str, Any]) -> bool:
    if not isinstance(original, dict):
        return True
    names = info.field_by_name
    for key in original:
        spec = names.get(key)
        if spec is None or not spec.stored:
            return True
    for name, inner_info in info.inner_fields:
        value = original.get(name)
        if value is not None and _dict_undeclared(inner_info, value):
            return True
    return False
