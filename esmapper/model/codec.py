"""Value checks and the compiled ``_source`` converters of a model.

For each model, :func:`compile_codec` generates (once, at class creation) two plain Python
functions: ``to_source(doc) -> dict`` and ``from_source(src, id, version, state=None) ->
doc`` (``state``: the DocState a document read from the store starts with). They
touch each field once, with the conversion its kind needs and nothing else, which keeps
serialization and hydration within a few microseconds per document. A stored value that
does not fit its field (an enum value of a newer deploy, ...) makes them raise; their
``except`` branch (free while nothing fails) takes the slow, lenient path of
:mod:`esmapper.model.lenient`, which keeps such a value as stored and reports it.

:func:`make_converter` builds the attrs converter that checks (and normalizes) a value when
a model is constructed or an attribute is assigned: a value that cannot be mapped raises
:class:`~esmapper.errors.DocumentValidationError` naming the field.
"""

from __future__ import annotations

import copy
import datetime as _dt
import inspect
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from esmapper._text import article
from esmapper.errors import DocumentValidationError
from esmapper.model._tracking import TrackedSlot
from esmapper.model.dates import UTC, format_datetime, parse_datetime
from esmapper.model.fields import FieldSpec
from esmapper.model.lenient import LenientCodec

__all__ = [
    "FromSource",
    "compile_codec",
    "describe",
    "format_datetime",
    "list_copy_expr",
    "make_converter",
    "parse_datetime",
    "scalar_checker",
]


class FromSource(Protocol):
    """A model's compiled hydration: the object for the ``_source`` dict ``src``, with
    ``id`` and ``version`` (``None``: from ``src``, or none) and ``state`` (the
    :class:`~esmapper.model.state.DocState` of a document read from the store; ``None``
    for one that is not)."""

    def __call__(self, src: Any, id: Any, version: Any, state: Any = None, /) -> Any: ...


def describe(value: Any) -> str:
    """``value`` for an error message: its (shortened) repr and its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def scalar_checker(
    spec: FieldSpec, owner: str, error: Callable[[Any, str], Exception] | None = None
) -> Callable[[Any], Any]:
    """The check of one value of ``spec`` (one item of a list field); ``error(value,
    expected)`` builds the exception it raises (by default a DocumentValidationError)."""
    where = f"{owner}.{spec.name}"

    def validation_error(value: Any, expected: str) -> Exception:
        return DocumentValidationError(
            f"{where}: expected {expected}, got {describe(value)}", field=spec.name
        )

    fail = error or validation_error

    kind = spec.kind
    if kind == "str":

        def check(value: Any) -> Any:
            if type(value) is str:
                return value
            if isinstance(value, str):
                return str(value)
            raise fail(value, "a string")

    elif kind == "int":

        def check(value: Any) -> Any:
            if type(value) is int:
                return value
            if isinstance(value, int) and not isinstance(value, bool):
                return int(value)
            if isinstance(value, float) and value.is_integer():
                return int(value)
            raise fail(value, "an integer")

    elif kind == "float":

        def check(value: Any) -> Any:
            if isinstance(value, int | float) and not isinstance(value, bool):
                try:
                    number = float(value)
                except OverflowError:  # an int beyond the float range
                    raise fail(value, "a finite number") from None
                if number - number == 0.0:  # NaN and infinities give NaN: JSON has neither
                    return number
                raise fail(value, "a finite number")
            raise fail(value, "a number")

    elif kind == "bool":

        def check(value: Any) -> Any:
            if isinstance(value, bool):
                return value
            raise fail(value, "a boolean")

    elif kind == "datetime":

        def check(value: Any) -> Any:
            try:
                return parse_datetime(value)
            except (TypeError, ValueError, OverflowError):
                raise fail(value, "a datetime or an ISO-8601 string") from None

    elif kind == "inner":
        inner = spec.inner
        assert inner is not None

        def check(value: Any) -> Any:
            if isinstance(value, inner):
                return value
            if isinstance(value, dict):
                try:
                    return inner(**value)
                except TypeError as exc:
                    raise fail(value, f"{inner.__name__} fields ({exc})") from None
            raise fail(value, article(inner.__name__))

    elif kind == "enum":
        enum_cls = spec.enum
        assert enum_cls is not None

        takes_bools = any(isinstance(member.value, bool) for member in enum_cls)

        def check(value: Any) -> Any:
            if isinstance(value, enum_cls):
                return value
            if isinstance(value, bool) and not takes_bools:  # IntEnum(True) would pass
                raise fail(value, article(enum_cls.__name__))
            try:
                return enum_cls(value)
            except ValueError:
                raise fail(value, article(enum_cls.__name__)) from None

    else:

        def check(value: Any) -> Any:
            return value

    return check


_ATOMIC = frozenset({str, int, float, bool, type(None), _dt.datetime, _dt.date})


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON-like value (what an ``any`` field holds: dicts, lists and
    scalars), several times faster than ``copy.deepcopy`` on such values: immutable
    scalars are shared, anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {k: json_copy(v) for k, v in value.items()}
    if kind is list:
        return [json_copy(v) for v in value]
    if kind in _ATOMIC:
        return value
    return copy.deepcopy(value)


#: Whether every type of an iterable of types is an immutable scalar's (a C call).
_all_atomic = _ATOMIC.issuperset


def _copy_items(value: Any) -> list[Any]:
    """A list of deep copies of the items of the list ``value`` (some are not scalars: a
    stored array of arrays, an object where a scalar was declared)."""
    return [json_copy(item) for item in value]


def list_copy_expr(var: str, ns: dict[str, Any]) -> str:
    """A Python expression copying the list ``var`` (not ``None``) of a field of scalars so
    that the copy shares no mutable value with it: a shallow copy when every item is an
    immutable scalar (the usual case, checked in C), else a copy of each item, deep. A
    list handed to a document or kept as a ``_source`` must not share an inner list or
    dict with another one: a caller changing it would change the other."""
    ns["_all_atomic"] = _all_atomic
    ns["_copy_items"] = _copy_items
    return f"(list({var}) if _all_atomic(map(type, {var})) else _copy_items({var}))"


def make_converter(spec: FieldSpec, owner: str) -> Callable[[Any], Any]:
    """The attrs converter for ``spec``: checks, normalizes, or raises naming the field."""
    check = scalar_checker(spec, owner)
    optional = spec.optional
    where = f"{owner}.{spec.name}"

    if spec.many:

        def convert_many(value: Any) -> Any:
            if value is None:
                if optional:
                    return None
                raise DocumentValidationError(f"{where}: None is not allowed", field=spec.name)
            if not isinstance(value, list | tuple | set | frozenset):
                raise DocumentValidationError(
                    f"{where}: expected a list, got {describe(value)}", field=spec.name
                )
            return [check(item) for item in value]

        return convert_many

    def convert(value: Any) -> Any:
        if value is None:
            if optional:
                return None
            raise DocumentValidationError(f"{where}: None is not allowed", field=spec.name)
        return check(value)

    return convert


try:  # the datetime fast paths of the generated code (format_datetime's own forms)
    from orjson import OPT_UTC_Z as _OPT_UTC_Z
    from orjson import dumps as _orjson_dumps
except ImportError:  # pragma: no cover - orjson is optional
    _orjson_dumps = None  # type: ignore[assignment]
    _OPT_UTC_Z = 0
#: Python 3.11+ reads a trailing ``Z`` as UTC: a stored date then parses in one call.
_ISO_Z = sys.version_info >= (3, 11)


def _dump_expr(spec: FieldSpec, var: str, ns: dict[str, Any]) -> str:
    """A Python expression turning the attribute value ``var`` into its JSON form."""
    if spec.kind == "datetime":
        ns["_fmt_dt"] = format_datetime
        one = "_fmt_dt({})"
        if _orjson_dumps is not None and not spec.many:
            # an aware UTC value (what the converter keeps) is formatted inline, as
            # format_datetime would; anything else takes format_datetime
            ns.update(_odumps=_orjson_dumps, _OPT_Z=_OPT_UTC_Z, _UTC=UTC)
            return (
                f"(None if {var} is None else (_odumps({var}, option=_OPT_Z)[1:-1].decode() "
                f"if {var}.tzinfo is _UTC else _fmt_dt({var})))"
            )
    elif spec.kind == "inner":
        assert spec.inner is not None
        # the embedded model's compiled converter, straight (a subclass: its own)
        ns[f"_inner_cls_{spec.name}"] = spec.inner
        ns[f"_inner_dump_{spec.name}"] = spec.inner.__esmapper__.to_source  # type: ignore[attr-defined]
        one = (
            f"(_inner_dump_{spec.name}({{0}}) if type({{0}}) is _inner_cls_{spec.name} "
            "else {0}.to_source())"
        )
    elif spec.kind == "enum":
        one = "{}.value"
    elif spec.kind == "any":
        ns["_deepcopy"] = json_copy
        one = "_deepcopy({})"
    elif spec.many:
        return f"(None if {var} is None else {list_copy_expr(var, ns)})"
    else:
        return var
    if spec.many:
        return f"(None if {var} is None else [{one.format('_x')} for _x in {var}])"
    return f"(None if {var} is None else {one.format(var)})"


def _format_remembered(value: _dt.datetime, last: list[tuple[Any, str | None]]) -> str:
    """``format_datetime(value)``, remembered in ``last`` as ``(value, text)``."""
    text = format_datetime(value)
    last[0] = (value, text)  # one assignment: a reader in another thread sees a whole pair
    return text


def _remembered_date_expr(name: str, ns: dict[str, Any]) -> str:
    """The JSON form of the updated date ``name``, reusing the text of the previous
    document's value when it is the same object (the pipeline's ``now``: one for a whole
    batch). The pair read once into ``_c_<name>`` holds the value it was made from, so an
    ``is`` match cannot be a reused ``id``."""
    ns[f"_last_{name}"] = [(None, None)]
    ns["_fmt_remembered"] = _format_remembered
    return (
        f"(None if _f_{name} is None else (_c_{name}[1] if _c_{name}[0] is "
        f"_f_{name} else _fmt_remembered(_f_{name}, _last_{name})))"
    )


def _load_expr(spec: FieldSpec, var: str, ns: dict[str, Any], prefix: str = "") -> str:
    """A Python expression turning the JSON value ``var`` into the attribute value (the
    names it puts in ``ns`` for this field start with ``prefix``)."""
    if spec.kind == "datetime":
        ns["_parse_dt"] = parse_datetime
        one = "_parse_dt({})"
        if _ISO_Z and not spec.many:
            # a stored UTC date (``...Z``) parses in one call to an aware UTC datetime,
            # as parse_datetime would; anything else takes parse_datetime (an empty
            # string raises, as parse_datetime does)
            ns["_fromiso"] = _dt.datetime.fromisoformat
            return (
                f"(None if {var} is None else (_fromiso({var}) if type({var}) is str "
                f"and {var}[-1] == 'Z' else _parse_dt({var})))"
            )
    elif spec.kind == "inner":
        assert spec.inner is not None
        # without the fallback: a value the embedded model does not know is handled (and
        # reported with the document's id) by the enclosing model's lenient path
        ns[f"{prefix}_inner_{spec.name}"] = spec.inner.__esmapper__.lenient.strict  # type: ignore[attr-defined]
        one = f"{prefix}_inner_{spec.name}({{}}, None, None)"
    elif spec.kind == "enum":
        ns[f"{prefix}_enum_{spec.name}"] = spec.enum
        one = f"{prefix}_enum_{spec.name}({{}})"
    elif spec.kind == "any":
        ns["_deepcopy"] = json_copy
        one = "_deepcopy({})"
    else:
        one = "{}"
    if spec.many:
        listed = f"(list({var}) if isinstance({var}, list) else [{var}])"
        if one == "{}":  # scalars taken as stored: copied so that none is shared
            copied = list_copy_expr(var, ns)
            return (
                f"(None if {var} is None else "
                f"({copied} if isinstance({var}, list) else _copy_items([{var}])))"
            )
        return f"(None if {var} is None else [{one.format('_x')} for _x in {listed}])"
    if one == "{}":
        return var
    return f"(None if {var} is None else {one.format(var)})"


def compile_codec(
    cls: type,
    specs: Sequence[FieldSpec],
    attributes: Sequence[attrs.Attribute],  # type: ignore[type-arg]
    *,
    has_id: bool,
    has_version: bool,
    raw_slots: Mapping[str, Any] | None = None,
    dates: tuple[str | None, str | None] = (None, None),
) -> tuple[Callable[[Any], dict[str, Any]], FromSource, LenientCodec]:
    """Generate ``to_source(doc)`` and ``from_source(src, id, version, state=None)`` for
    ``cls``, and the :class:`LenientCodec` their ``except`` branches fall back to (its
    ``strict`` is ``from_source`` without the fallback: enclosing models hydrate embedded
    objects with it, so a value they do not know is reported with the document's id and
    path).

    ``raw_slots`` maps tracked field names to their slot descriptors: serializing reads
    those directly, so it does not mark a document as possibly changed. ``dates``: the
    ``(created, updated)`` datetime attributes the writes set to one ``now`` per batch
    (:func:`esmapper.model.info.date_fields`), whose text is formatted once per batch.
    """
    ns: dict[str, Any] = {"_cls": cls, "_new": object.__new__, "_set": object.__setattr__}
    raw_slots = raw_slots or {}
    attr_by_name = {a.name: a for a in attributes}

    reads: list[str] = []  # values read once into locals (expressions use them twice)
    late_reads: list[str] = []  # locals computed from those
    entries: list[str] = []
    # the dates a write sets to one ``now`` for every document of a batch (the model's
    # ``created_field``/``updated_field``: em.HasDates' or what Index.dates names): the
    # updated date remembers the last text it formatted, the created date reuses the
    # updated date's text when it is the same object
    created, updated = dates
    for spec in specs:
        if spec.stored:
            getter = f"self.{spec.name}"
            if spec.name in raw_slots:
                ns[f"_raw_{spec.name}"] = raw_slots[spec.name].__get__
                getter = f"_raw_{spec.name}(self)"
            if spec.kind in ("inner", "datetime") and not spec.many:
                reads.append(f"        _f_{spec.name} = {getter}")
                getter = f"_f_{spec.name}"
            expression = _dump_expr(spec, getter, ns)
            if spec.name == updated:
                reads.append(f"        _c_{updated} = _last_{updated}[0]")
                late_reads.append(f"        _t_{updated} = {_remembered_date_expr(updated, ns)}")
                expression = f"_t_{updated}"
            elif spec.name == created and updated is not None:  # usually the same object
                expression = f"(_t_{updated} if {getter} is _f_{updated} else {expression})"
            entries.append(f"            {spec.name!r}: {expression},")
    dump_lines = ["def to_source(self):", "    try:", *reads, *late_reads, "        return {"]
    dump_lines += entries
    dump_lines += ["        }", "    except Exception:", "        return _lenient_dump(self)"]

    setter = _setters(cls, raw_slots, ns)
    # ``state``: the DocState a loaded document starts with (None: not stored)
    start = ["self = _new(_cls)", f"{setter('_esm_state')}state)"]
    body: list[str] = [*start, "get = src.get"]  # any source: absent keys take defaults
    # a source holding every field (what a write stores): subscripts, no default checks;
    # a missing key raises KeyError, and the source takes the ``get`` path instead
    full: list[str] = list(start)
    keys = 0
    missing_values: list[tuple[FieldSpec, Callable[[], Any]]] = []
    for i, spec in enumerate(specs):
        if spec.name == "id" and has_id:
            body.append(f"{setter('id')}id if id is not None else get('id'))")
            full.append(f"{setter('id')}id if id is not None else src.get('id'))")
            missing_values.append((spec, _none))
            continue
        if spec.name == "version" and has_version:
            body.append(f"{setter('version')}version)")
            full.append(f"{setter('version')}version)")
            missing_values.append((spec, _none))
            continue
        missing, make_missing = _missing_value(spec, attr_by_name[spec.name], cls, i, ns)
        missing_values.append((spec, make_missing))
        expression = _load_expr(spec, "_v", ns)
        body.append(f"_v = get({spec.name!r}, _MISSING)")
        body.append(f"{setter(spec.name)}{missing} if _v is _MISSING else {expression})")
        inline = (
            _inline_inner(spec, setter(spec.name), ns)
            if spec.kind == "inner" and not spec.many
            else None
        )
        if inline is not None:
            full.extend(inline)
        elif expression == "_v":
            full.append(f"{setter(spec.name)}src[{spec.name!r}])")
        else:
            full.append(f"_v = src[{spec.name!r}]")
            full.append(f"{setter(spec.name)}{expression})")
        keys += 1
    body.append("return self")
    full.append("return self")
    ns["_KEYS"] = keys
    ns["_MISSING"] = _MISSING
    lenient = LenientCodec(
        cls,
        missing_values,
        has_id=has_id,
        has_version=has_version,
        getters={name: slot.__get__ for name, slot in raw_slots.items()},
    )
    ns["_lenient_load"] = lenient.load
    ns["_lenient_dump"] = lenient.dump
    ns["_set_state"] = _set_state
    # from_source_strict's body; from_source runs it inline (no call) under its fallback
    strict = [
        "if len(src) < _KEYS:",
        "    return _from_any_source(src, id, version, state)",
        "try:",
        *(f"    {line}" for line in full),
        "except KeyError:",
        "    return _from_any_source(src, id, version, state)",
    ]
    load_lines = [
        "def _from_any_source(src, id, version, state):",
        *(f"    {line}" for line in body),
        "",
        "def from_source_strict(src, id, version, state=None):",
        *(f"    {line}" for line in strict),
        "",
        "def from_source(src, id, version, state=None):",
        "    try:",
        *(f"        {line}" for line in strict),
        "    except Exception:",
        "        return _set_state(_lenient_load(src, id, version), state)",
    ]

    source = "\n".join(dump_lines) + "\n\n" + "\n".join(load_lines) + "\n"
    filename = f"<esmapper codec {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), ns)  # generated from the field specs
    lenient.strict = ns["from_source_strict"]
    return ns["to_source"], ns["from_source"], lenient


def _set_state(doc: Any, state: Any) -> Any:
    """``doc`` with ``state`` as its DocState (the lenient path builds it without)."""
    if state is not None:
        object.__setattr__(doc, "_esm_state", state)
    return doc


def _setters(
    cls: type,
    raw_slots: Mapping[str, Any],
    ns: dict[str, Any],
    prefix: str = "",
    obj: str = "self",
) -> Callable[[str], str]:
    """``setter(name)``: the start of a generated call that stores an attribute of a new
    instance ``obj`` (``...value)``) without conversion or tracking: through the slot
    descriptor itself when there is one (the raw slot of a tracked field), else
    ``object.__setattr__``. The names put in ``ns`` start with ``prefix``."""

    def setter(name: str) -> str:
        slot = raw_slots.get(name)
        if slot is None:
            found = inspect.getattr_static(cls, name, None)
            if isinstance(found, TrackedSlot):
                found = found.slot
            if isinstance(found, types.MemberDescriptorType):
                slot = found
        if slot is None:
            return f"_set({obj}, {name!r}, "
        ns[f"{prefix}_slot_{name}"] = slot.__set__
        return f"{prefix}_slot_{name}({obj}, "

    return setter


def _inline_inner(spec: FieldSpec, set_field: str, ns: dict[str, Any]) -> list[str] | None:
    """Statements hydrating the embedded object of ``spec`` (a single one, not a list)
    from ``src`` in place, without a call per object; ``set_field`` starts the call that
    stores it (see :func:`_setters`). ``None`` when the embedded model has fields whose
    keys are not all in a stored ``_source`` (it keeps its own call).

    Like the embedded model's own hydration without its fallback: a key it lacks raises
    ``KeyError`` (the enclosing model then takes its path for sources missing keys, which
    calls that hydration) and a value it does not know raises (the enclosing model's
    lenient path reports it); a shorter source takes the call at once."""
    inner = spec.inner
    assert inner is not None
    info = inner.__esmapper__  # type: ignore[attr-defined]
    if not all(field.stored for field in info.fields):
        return None
    prefix = f"_e_{spec.name}"
    ns[f"{prefix}_cls"] = inner
    ns[f"{prefix}_keys"] = len(info.fields)
    ns[f"{prefix}_strict"] = info.lenient.strict
    setter = _setters(inner, {}, ns, prefix, obj="_o")
    lines = [
        f"_e = src[{spec.name!r}]",
        "if _e is None:",
        f"    {set_field}None)",
        f"elif len(_e) < {prefix}_keys:",
        f"    {set_field}{prefix}_strict(_e, None, None))",
        "else:",
        f"    _o = _new({prefix}_cls)",
        f"    {setter('_esm_state')}None)",
    ]
    for field in info.fields:
        expression = _load_expr(field, "_w", ns, prefix)
        if expression == "_w":
            lines.append(f"    {setter(field.name)}_e[{field.name!r}])")
        else:
            lines.append(f"    _w = _e[{field.name!r}]")
            lines.append(f"    {setter(field.name)}{expression})")
    lines.append(f"    {set_field}_o)")
    return lines


def _none() -> None:
    return None


def _missing_value(
    spec: FieldSpec,
    attribute: attrs.Attribute,  # type: ignore[type-arg]
    cls: type,
    i: int,
    ns: dict[str, Any],
) -> tuple[str, Callable[[], Any]]:
    """The value of a field whose key is absent from a ``_source``: the expression the
    compiled hydration uses (its names put in ``ns``) and a function giving the same value
    (for the lenient path)."""
    default = attribute.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory = default.factory  # type: ignore[union-attr]
        ns[f"_factory_{i}"] = factory
        return f"_factory_{i}()", factory
    if default is attrs.NOTHING:
        return "None", _none
    # The value a constructed document gets: the default, converted (0 -> 0.0 for a
    # float, a naive datetime -> aware UTC).
    try:
        value = make_converter(spec, cls.__name__)(default)
    except (TypeError, ValueError):
        value = default
    ns[f"_default_{i}"] = value
    return f"_default_{i}", lambda: value


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
