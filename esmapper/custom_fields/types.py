"""Custom-field types: how a value becomes what a slot indexes, and how slots are mapped.

A type has a ``type`` name (``"int"``), a ``mapping()`` (an
``elasticsearch.dsl`` field: the mapping of every slot ``idx.<type>-<n>``, declared once as
a dynamic template, so slots are never pre-declared) and ``process_value(doc, value,
definition) -> ProcessResult`` (the value stored back into ``custom_fields`` and, when
``idx`` is given, a different value to index).

What a slot receives is checked here, once, against the slot's mapping type
(:func:`value_checker`), whichever type produced it: a value Elasticsearch would refuse
(``"not-a-number"`` for an ``int``, an ``int`` beyond 32 bits, an unparsable date) is kept
in ``custom_fields`` but not indexed, so the document is never rejected. Numbers
given as text (``"5"``) and ``"true"``/``"false"`` are accepted like Elasticsearch's own
coercion does; dates are indexed as ISO-8601 UTC text. Mapping types this module does not
know (a custom type mapped as ``ip``, ``geo_point``, ...) are passed through unchecked.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
from elasticsearch.dsl import (
    Boolean,
    Date,
    Double,
    Field,
    Float,
    Integer,
    Keyword,
    Long,
    Text,
)

from esmapper.errors import IndexConfigurationError
from esmapper.model.dates import format_datetime, parse_datetime

if TYPE_CHECKING:
    from esmapper.custom_fields.definition import CustomFieldDefinition

__all__ = [
    "NOT_INDEXED",
    "CustomFieldType",
    "ProcessResult",
    "StandardFieldType",
    "dynamic_templates",
    "model_types",
    "slot_mapping",
    "value_checker",
    "standard_field_types",
]

_TYPE_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


@attrs.frozen(slots=True)
class ProcessResult:
    """What a type made of a value: ``value`` is stored back into ``custom_fields``;
    ``idx`` (when not ``None``) is indexed instead of ``value``; ``definition_modified``
    asks for the definition (whose ``data`` the type changed) to be saved."""

    value: Any
    idx: Any = None
    definition_modified: bool = False


@runtime_checkable
class CustomFieldType(Protocol):
    """A custom-field type: ``type`` (lowercase letters, digits, ``_``), ``mapping()`` (the
    dsl field of its slots) and ``process_value``."""

    type: str

    def mapping(self) -> Field: ...

    def process_value(
        self, doc: Any, value: Any, definition: CustomFieldDefinition
    ) -> ProcessResult: ...


class StandardFieldType:
    """A built-in type: the value is indexed as given (checked against the mapping by
    :func:`value_checker`)."""

    __slots__ = ("_factory", "type")

    def __init__(self, type: str, factory: Callable[[], Field]) -> None:
        self.type = type
        self._factory = factory

    def mapping(self) -> Field:
        return self._factory()

    def process_value(
        self, doc: Any, value: Any, definition: CustomFieldDefinition
    ) -> ProcessResult:
        return ProcessResult(value)

    def __repr__(self) -> str:
        return f"StandardFieldType({self.type!r})"


def standard_field_types() -> list[CustomFieldType]:
    """The built-in types: ``string`` (text with a ``keyword`` subfield), ``keyword``,
    ``int``, ``long``, ``float``, ``double``, ``bool``, ``date``."""
    return [
        StandardFieldType("string", lambda: Text(fields={"keyword": Keyword(ignore_above=256)})),
        StandardFieldType("keyword", Keyword),
        StandardFieldType("int", Integer),
        StandardFieldType("long", Long),
        StandardFieldType("float", Float),
        StandardFieldType("double", Double),
        StandardFieldType("bool", Boolean),
        StandardFieldType("date", Date),
    ]


def check_options(
    model_name: str, index: Any, field_names: set[str]
) -> tuple[CustomFieldType, ...]:
    """The checked custom-field options of a ``HasCustomFields`` model's ``class Index:``
    (``tenant_field`` names an attribute, ``auto_create_custom_fields`` is a bool); returns
    its types (``custom_field_types``, the standard ones when ``None``), checked: each has
    a valid, unique ``type`` name, a ``mapping()`` giving a dsl field with a ``type`` and a
    ``process_value``. Raises IndexConfigurationError naming the model."""
    tenant_field = index.tenant_field
    if tenant_field is not None and (
        not isinstance(tenant_field, str) or tenant_field not in field_names
    ):
        raise IndexConfigurationError(
            f"{model_name}.Index.tenant_field {tenant_field!r} is not an attribute of {model_name}"
        )
    if not isinstance(index.auto_create_custom_fields, bool):
        raise IndexConfigurationError(
            f"{model_name}.Index.auto_create_custom_fields must be True or False"
        )
    given = index.custom_field_types
    types = tuple(standard_field_types() if given is None else given)
    where = f"{model_name}.Index.custom_field_types"
    seen: set[str] = set()
    for item in types:
        name = getattr(item, "type", None)
        if not isinstance(name, str) or not _TYPE_NAME.match(name):
            raise IndexConfigurationError(
                f"{where}: {item!r} has type {name!r}; a type name is lowercase letters, "
                "digits and '_' (it names the slots idx.<type>-<n>)"
            )
        if name in seen:
            raise IndexConfigurationError(f"{where}: two types are called {name!r}")
        seen.add(name)
        if not callable(getattr(item, "process_value", None)):
            raise IndexConfigurationError(f"{where}: type {name!r} has no process_value()")
        if "type" not in _mapping_of(item, where):
            raise IndexConfigurationError(f"{where}: the mapping of {name!r} has no type")
    if index.auto_create_custom_fields and "string" not in {t.type for t in types}:
        raise IndexConfigurationError(
            f"{model_name}.Index.auto_create_custom_fields creates 'string' definitions, "
            "but custom_field_types has no 'string' type"
        )
    return types


def model_types(info: Any) -> tuple[CustomFieldType, ...]:
    """The checked custom-field types of ``info``'s model (its custom-field feature's,
    :func:`check_options`); TypeError for a model without custom fields."""
    feature = info.points.feature("custom_fields")
    if feature is None:
        raise TypeError(f"{info.name} has no custom fields")
    types: tuple[CustomFieldType, ...] = feature.types
    return types


def _mapping_of(item: Any, where: str) -> dict[str, Any]:
    try:
        field = item.mapping()
    except Exception as exc:
        raise IndexConfigurationError(
            f"{where}: mapping() of {getattr(item, 'type', item)!r} failed: {exc}"
        ) from exc
    if not isinstance(field, Field):
        raise IndexConfigurationError(
            f"{where}: mapping() of {item.type!r} must return an elasticsearch.dsl field "
            f"(e.g. em.Integer()), not {field!r}"
        )
    mapping: dict[str, Any] = field.to_dict()
    return mapping


def slot_mapping(field_type: CustomFieldType) -> dict[str, Any]:
    """The mapping of one slot of ``field_type`` (what its dynamic template maps)."""
    mapping: dict[str, Any] = field_type.mapping().to_dict()
    return mapping


def dynamic_templates(types: Sequence[CustomFieldType]) -> list[dict[str, Any]]:
    """One dynamic template per type: ``idx.<type>-*`` -> the type's mapping."""
    return [
        {f"idx_{t.type}": {"path_match": f"idx.{t.type}-*", "mapping": slot_mapping(t)}}
        for t in types
    ]


# -- what a slot may index ------------------------------------------------------------------


class _NotIndexed:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_INDEXED"


#: a :func:`value_checker`'s answer for a value the slot cannot index.
NOT_INDEXED: Any = _NotIndexed()

_INT_RANGES = {
    "byte": 2**7,
    "short": 2**15,
    "integer": 2**31,
    "long": 2**63,
}
_TEXTS = frozenset({"keyword", "text", "constant_keyword", "wildcard", "match_only_text"})
#: Lucene's limit for one indexed term, in UTF-8 bytes.
_MAX_TERM_BYTES = 32_766


def _integer(value: Any, bound: int) -> Any:
    if isinstance(value, bool):
        return NOT_INDEXED
    if isinstance(value, str):
        try:
            value = float(value.strip()) if "." in value or "e" in value.lower() else int(value)
        except ValueError:
            return NOT_INDEXED
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return NOT_INDEXED
        value = int(value)
    if not isinstance(value, int):
        return NOT_INDEXED
    return value if -bound <= value < bound else NOT_INDEXED


#: The largest magnitude each floating mapping type stores finite (Elasticsearch parses a
#: ``float`` as a 32-bit float and refuses the whole document for what overflows it).
_FLOAT_LIMITS = {
    "float": 3.4028234663852886e38,  # float32 max
    "half_float": 65504.0,
    "double": sys.float_info.max,
    "scaled_float": sys.float_info.max,
}


def _floating(value: Any, limit: float) -> Any:
    if isinstance(value, bool):
        return NOT_INDEXED
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return NOT_INDEXED
    if not isinstance(value, int | float):
        return NOT_INDEXED
    try:
        magnitude = abs(float(value))
    except OverflowError:  # an int beyond any float
        return NOT_INDEXED
    if not math.isfinite(magnitude) or magnitude > limit:
        return NOT_INDEXED
    return value


def _boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    return NOT_INDEXED


def _date(value: Any) -> Any:
    if isinstance(value, bool | int | float):
        return NOT_INDEXED
    if isinstance(value, _dt.date | str):
        try:
            return format_datetime(parse_datetime(value))
        except (TypeError, ValueError, OverflowError):
            return NOT_INDEXED
    return NOT_INDEXED


def _text(value: Any) -> Any:
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        text = str(value)
    else:
        return NOT_INDEXED
    return text if len(text.encode("utf-8")) <= _MAX_TERM_BYTES else NOT_INDEXED


def _scalar_check(mapping_type: str) -> Callable[[Any], Any]:
    bound = _INT_RANGES.get(mapping_type)
    if bound is not None:
        return lambda value: _integer(value, bound)
    limit = _FLOAT_LIMITS.get(mapping_type)
    if limit is not None:
        return lambda value: _floating(value, limit)
    if mapping_type == "boolean":
        return _boolean
    if mapping_type in ("date", "date_nanos"):
        return _date
    if mapping_type in _TEXTS:
        return _text
    return _unchecked  # a mapping type not checked here: the custom type's business


def _unchecked(value: Any) -> Any:
    return value


def value_checker(mapping: dict[str, Any]) -> Callable[[Any], Any]:
    """The check of what slot ``mapping`` indexes: the value as indexed, or
    :data:`NOT_INDEXED` (``None``, or a value Elasticsearch would refuse; a list is indexed
    when every item is). Built once per slot."""
    mapping_type = str(mapping.get("type", "object"))
    scalar = _scalar_check(mapping_type)
    takes_objects = mapping_type in ("object", "flattened")

    def check(value: Any) -> Any:
        if value is None:
            return NOT_INDEXED
        if isinstance(value, list | tuple):
            items = [scalar(item) for item in value if item is not None]
            if not items or any(item is NOT_INDEXED for item in items):
                return NOT_INDEXED
            return items
        if isinstance(value, dict):
            return value if takes_objects else NOT_INDEXED
        return scalar(value)

    return check
