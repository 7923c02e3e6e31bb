"""Value checks and the compiled ``_source`` converters of a model.

For each model, :func:`compile_codec` generates (once, at class creation) two plain Python
functions: ``to_source(doc) -> dict`` and ``from_source(src, id, version) -> doc``. They
touch each field once, with the conversion its kind needs and nothing else, which keeps
serialization and hydration within a few microseconds per document.

:func:`make_converter` builds the attrs converter that checks (and normalizes) a value when
a model is constructed or an attribute is assigned: a value that cannot be mapped raises
:class:`~esmapper.errors.DocumentValidationError` naming the field.
"""

from __future__ import annotations

import copy
import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any

import attrs

from esmapper.errors import DocumentValidationError
from esmapper.model.fields import FieldSpec

__all__ = [
    "compile_codec",
    "compile_normalizer",
    "format_datetime",
    "invalid_error",
    "make_converter",
    "parse_datetime",
]

UTC = _dt.timezone.utc
_fromisoformat = _dt.datetime.fromisoformat

try:  # orjson formats datetimes about 3x faster than isoformat() + replace()
    from orjson import OPT_UTC_Z as _OPT_UTC_Z
    from orjson import dumps as _orjson_dumps
except ImportError:  # pragma: no cover - orjson is optional
    _orjson_dumps = None  # type: ignore[assignment]
    _OPT_UTC_Z = 0
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=UTC)


def format_datetime(value: _dt.datetime) -> str:
    """ISO-8601 in UTC, as stored in ``_source`` (``2026-12-02T16:55:43.123456Z``)."""
    if value.tzinfo is not UTC:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if _orjson_dumps is not None:
        return _orjson_dumps(value, option=_OPT_UTC_Z)[1:-1].decode()
    return value.isoformat().replace("+00:00", "Z")


def parse_datetime(value: Any) -> _dt.datetime:
    """An aware UTC datetime from an ISO string, epoch milliseconds, a date or a datetime."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value if value.tzinfo is UTC else value.astimezone(UTC)
    if isinstance(value, str):
        try:
            parsed = _fromisoformat(value)  # Python 3.11+ reads a trailing Z as UTC
        except ValueError:
            if not value.endswith(("Z", "z")):
                raise
            parsed = _fromisoformat(value[:-1] + "+00:00")
        tz = parsed.tzinfo
        if tz is UTC:
            return parsed
        return parsed.replace(tzinfo=UTC) if tz is None else parsed.astimezone(UTC)
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _EPOCH + _dt.timedelta(milliseconds=value)
    raise TypeError(f"not a date: {value!r}")


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def _scalar_checker(
    spec: FieldSpec, owner: str, error: Callable[[Any, str], Exception] | None = None
) -> Callable[[Any], Any]:
    """The check of one value of ``spec`` (one item of a list field); ``error(value,
    expected)`` builds the exception it raises (by default a DocumentValidationError)."""
    where = f"{owner}.{spec.name}"

    def validation_error(value: Any, expected: str) -> Exception:
        return DocumentValidationError(
            f"{where}: expected {expected}, got {_describe(value)}", field=spec.name
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
                return float(value)
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
            raise fail(value, f"a {inner.__name__}")

    elif kind == "enum":
        enum_cls = spec.enum
        assert enum_cls is not None

        takes_bools = any(isinstance(member.value, bool) for member in enum_cls)

        def check(value: Any) -> Any:
            if isinstance(value, enum_cls):
                return value
            if isinstance(value, bool) and not takes_bools:  # IntEnum(True) would pass
                raise fail(value, f"a {enum_cls.__name__}")
            try:
                return enum_cls(value)
            except ValueError:
                raise fail(value, f"a {enum_cls.__name__}") from None

    else:

        def check(value: Any) -> Any:
            return value

    return check


def make_converter(spec: FieldSpec, owner: str) -> Callable[[Any], Any]:
    """The attrs converter for ``spec``: checks, normalizes, or raises naming the field."""
    check = _scalar_checker(spec, owner)
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
                    f"{where}: expected a list, got {_describe(value)}", field=spec.name
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


def _dump_expr(spec: FieldSpec, var: str, ns: dict[str, Any]) -> str:
    """A Python expression turning the attribute value ``var`` into its JSON form."""
    if spec.kind == "datetime":
        ns["_fmt_dt"] = format_datetime
        one = "_fmt_dt({})"
    elif spec.kind == "inner":
        one = "{}.to_source()"
    elif spec.kind == "enum":
        one = "{}.value"
    elif spec.kind == "any":
        ns["_deepcopy"] = copy.deepcopy
        one = "_deepcopy({})"
    elif spec.many:
        return f"(None if {var} is None else list({var}))"
    else:
        return var
    if spec.many:
        return f"(None if {var} is None else [{one.format('_x')} for _x in {var}])"
    return f"(None if {var} is None else {one.format(var)})"


def _load_expr(spec: FieldSpec, var: str, ns: dict[str, Any]) -> str:
    """A Python expression turning the JSON value ``var`` into the attribute value."""
    if spec.kind == "datetime":
        ns["_parse_dt"] = parse_datetime
        one = "_parse_dt({})"
    elif spec.kind == "inner":
        assert spec.inner is not None
        ns[f"_inner_{spec.name}"] = spec.inner.__esmapper__.from_source  # type: ignore[attr-defined]
        one = f"_inner_{spec.name}({{}}, None, None)"
    elif spec.kind == "enum":
        ns[f"_enum_{spec.name}"] = spec.enum
        one = f"_enum_{spec.name}({{}})"
    elif spec.kind == "any":
        ns["_deepcopy"] = copy.deepcopy
        one = "_deepcopy({})"
    else:
        one = "{}"
    if spec.many:
        listed = f"(list({var}) if isinstance({var}, list) else [{var}])"
        if one == "{}":
            return f"(None if {var} is None else {listed})"
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
) -> tuple[Callable[[Any], dict[str, Any]], Callable[[Any, Any, Any], Any]]:
    """Generate ``to_source(doc)`` and ``from_source(src, id, version)`` for ``cls``.

    ``raw_slots`` maps tracked field names to their slot descriptors: serializing reads
    those directly, so it does not mark a document as possibly changed.
    """
    ns: dict[str, Any] = {"_cls": cls, "_new": object.__new__, "_set": object.__setattr__}
    raw_slots = raw_slots or {}
    attr_by_name = {a.name: a for a in attributes}

    dump_lines = ["def to_source(self):", "    return {"]
    for spec in specs:
        if spec.stored:
            getter = f"self.{spec.name}"
            if spec.name in raw_slots:
                ns[f"_raw_{spec.name}"] = raw_slots[spec.name].__get__
                getter = f"_raw_{spec.name}(self)"
            expression = _dump_expr(spec, getter, ns)
            dump_lines.append(f"        {spec.name!r}: {expression},")
    dump_lines.append("    }")

    load_lines = [
        "def from_source(src, id, version):",
        "    self = _new(_cls)",
        "    _set(self, '_esm_state', None)",
        "    get = src.get",
    ]
    for i, spec in enumerate(specs):
        if spec.name == "id" and has_id:
            load_lines.append("    _set(self, 'id', id if id is not None else get('id'))")
            continue
        if spec.name == "version" and has_version:
            load_lines.append("    _set(self, 'version', version)")
            continue
        attribute = attr_by_name[spec.name]
        default = attribute.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            ns[f"_factory_{i}"] = default.factory  # type: ignore[union-attr]
            missing = f"_factory_{i}()"
        elif default is attrs.NOTHING:
            missing = "None"
        else:
            # The value a constructed document gets: the default, converted (0 -> 0.0 for a
            # float, a naive datetime -> aware UTC).
            try:
                ns[f"_default_{i}"] = make_converter(spec, cls.__name__)(default)
            except (TypeError, ValueError):
                ns[f"_default_{i}"] = default
            missing = f"_default_{i}"
        load_lines.append(f"    _v = get({spec.name!r}, _MISSING)")
        load_lines.append(
            f"    _set(self, {spec.name!r}, {missing} if _v is _MISSING else "
            f"{_load_expr(spec, '_v', ns)})"
        )
    load_lines.append("    return self")
    ns["_MISSING"] = _MISSING

    source = "\n".join(dump_lines) + "\n\n" + "\n".join(load_lines) + "\n"
    filename = f"<esmapper codec {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), ns)  # generated from the field specs
    return ns["to_source"], ns["from_source"]


class Invalid(Exception):
    """Raised by a compiled normalizer: the value at ``path`` (relative to the object being
    normalized, e.g. ``tags[2]`` or ``address.tags[0]``) cannot be stored, ``reason`` why.
    :func:`invalid_error` turns it into the DocumentValidationError users see."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


def invalid_error(model: str, doc: Any, error: Invalid) -> DocumentValidationError:
    """The DocumentValidationError for ``error``, naming ``Model.path``."""
    doc_id = getattr(doc, "id", None)
    return DocumentValidationError(
        f"{model}.{error.path}: {error.reason}",
        field=error.path,
        ids=[] if doc_id is None else [doc_id],
    )


def _mismatch(value: Any, expected: str) -> Invalid:
    return Invalid("", f"expected {expected}, got {_describe(value)}")


def _nested(path: str, error: Invalid) -> Invalid:
    """``error`` raised for a part of the value at ``path``."""
    if not error.path:
        return Invalid(path, error.reason)
    sep = "" if error.path.startswith("[") else "."
    return Invalid(f"{path}{sep}{error.path}", error.reason)


def _from_construction(inner: type, error: DocumentValidationError) -> Invalid:
    """An Invalid for a DocumentValidationError raised while building ``inner`` from a dict."""
    message = error.message
    if error.field is None:
        return Invalid("", message)
    prefix = f"{inner.__name__}.{error.field}: "
    reason = message[len(prefix) :] if message.startswith(prefix) else message
    return Invalid(error.field, reason)


def _fix_items(items: list[Any], check: Callable[[Any], Any], name: str, inner: Any) -> None:
    """Check (and convert) every item of ``items``, replacing them in place (slice
    assignment: the caller's references to the list stay valid) when one changed."""
    fixed = []
    changed = False
    for i, item in enumerate(items):
        try:
            new = check(item)
        except Invalid as exc:
            raise _nested(f"{name}[{i}]", exc) from None
        except DocumentValidationError as exc:  # building an embedded object from a dict
            raise _nested(f"{name}[{i}]", _from_construction(inner, exc)) from None
        if new is not item:
            changed = True
        fixed.append(new)
    if changed:
        items[:] = fixed


#: The exact type an item of each kind has when it needs no conversion (datetimes are
#: checked one by one: only an aware UTC datetime is kept as is).
_EXACT_TYPES: dict[str, type] = {"str": str, "int": int, "float": float, "bool": bool}


def compile_normalizer(
    cls: type, specs: Sequence[FieldSpec], raw_slots: Mapping[str, Any] | None = None
) -> Callable[[Any], None] | None:
    """The in-place normalizer of ``cls``, or ``None`` when it has nothing to normalize.

    Lists and embedded objects can be mutated without an assignment (``doc.tags.append``,
    ``doc.address.tags[0] = ...``), which bypasses the attrs converters. The normalizer
    checks what such mutations can reach: each item of a list field (converted like an
    assignment would: a dict appended to a ``list[InnerDoc]`` becomes the InnerDoc), and,
    recursively, the lists inside embedded objects. Lists keep their identity (items are
    replaced by slice assignment). It raises :class:`Invalid`; the cost when nothing needs
    converting is one type check per item. Fields of kind ``any`` (dicts) are not checked.
    """
    raw_slots = raw_slots or {}
    owner = cls.__name__
    steps: list[Callable[[Any], None]] = []
    for spec in specs:
        if spec.kind == "any" or not (spec.many or spec.kind == "inner"):
            continue
        name = spec.name
        raw = raw_slots.get(name)
        get: Callable[[Any], Any] = raw.__get__ if raw is not None else attrgetter(name)
        inner = spec.inner
        inner_normalize = None
        if inner is not None:
            inner_info = getattr(inner, "__esmapper__", None)
            inner_normalize = None if inner_info is None else inner_info.normalizer
        if not spec.many:
            if inner_normalize is not None:
                steps.append(_inner_step(name, get, inner_normalize))
            continue
        check = _scalar_checker(spec, owner, _mismatch)
        if inner is not None:
            steps.append(_inner_list_step(name, get, check, inner, inner_normalize))
        else:
            steps.append(_list_step(name, get, check, _EXACT_TYPES.get(spec.kind, spec.enum)))
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]
    run = tuple(steps)

    def normalize(doc: Any) -> None:
        for step in run:
            step(doc)

    return normalize


def _list_step(
    name: str, get: Callable[[Any], Any], check: Callable[[Any], Any], exact: type | None
) -> Callable[[Any], None]:
    def step(doc: Any) -> None:
        items = get(doc)
        if items is None:
            return
        if type(items) is not list:
            raise Invalid(name, f"expected a list, got {_describe(items)}")
        if exact is not None:
            for item in items:
                if type(item) is not exact:
                    break
            else:
                return
        _fix_items(items, check, name, None)

    return step


def _inner_list_step(
    name: str,
    get: Callable[[Any], Any],
    check: Callable[[Any], Any],
    inner: type,
    inner_normalize: Callable[[Any], None] | None,
) -> Callable[[Any], None]:
    def step(doc: Any) -> None:
        items = get(doc)
        if items is None:
            return
        if type(items) is not list:
            raise Invalid(name, f"expected a list, got {_describe(items)}")
        for item in items:
            if not isinstance(item, inner):
                _fix_items(items, check, name, inner)
                break
        if inner_normalize is not None:
            for i, item in enumerate(items):
                try:
                    inner_normalize(item)
                except Invalid as exc:
                    raise _nested(f"{name}[{i}]", exc) from None

    return step


def _inner_step(
    name: str, get: Callable[[Any], Any], inner_normalize: Callable[[Any], None]
) -> Callable[[Any], None]:
    def step(doc: Any) -> None:
        value = get(doc)
        if value is None:
            return
        try:
            inner_normalize(value)
        except Invalid as exc:
            raise _nested(name, exc) from None

    return step


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING = _Missing()
