"""Field declarations: ``em.field()``, the mapping types, and inference from annotations.

A model attribute is declared either with ``em.field(em.Keyword(), default="")`` or with a
bare annotation and a default (``age: int = 0``), whose mapping is inferred:
``str -> keyword``, ``int -> long``, ``float -> double``, ``bool -> boolean``,
``datetime -> date``, ``list[X] -> X`` (Elasticsearch fields are multi-valued),
an ``em.InnerDoc`` subclass -> ``object`` with its properties, ``dict -> object``
(not indexed).

The mapping objects are ``elasticsearch.dsl`` fields, re-exported from here. ``Object`` and
``Nested`` are thin subclasses that also take an ``em.InnerDoc`` class, the way
``elasticsearch.dsl`` users declare embedded documents:
``reviews: list[Review] = em.field(em.Nested(Review), factory=list)`` maps ``reviews`` as
``nested`` with Review's properties (``em.Object(Address)``: as ``object``).
"""

from __future__ import annotations

import datetime as _dt
import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from elastic_transport.client_utils import DEFAULT
from elasticsearch import dsl as _dsl
from elasticsearch.dsl import (
    Binary,
    Boolean,
    Byte,
    Date,
    DateNanos,
    Double,
    Field,
    Float,
    GeoPoint,
    HalfFloat,
    Integer,
    Ip,
    Keyword,
    Long,
    MatchOnlyText,
    ScaledFloat,
    SearchAsYouType,
    Short,
    Text,
    UnsignedLong,
    Wildcard,
)

from esmapper.model._kinds import DocumentKind, EmbeddedKind

__all__ = [
    "Binary",
    "Boolean",
    "Byte",
    "Date",
    "DateNanos",
    "Double",
    "Field",
    "FieldSpec",
    "Float",
    "GeoPoint",
    "HalfFloat",
    "Integer",
    "Ip",
    "Keyword",
    "Long",
    "MatchOnlyText",
    "Nested",
    "Object",
    "ScaledFloat",
    "SearchAsYouType",
    "Short",
    "Text",
    "UnsignedLong",
    "Wildcard",
    "field",
]

_METADATA_KEY = "esmapper"

#: Value kinds the codec knows how to check and convert.
KIND_BY_ES_TYPE: dict[str, str] = {
    "text": "str",
    "keyword": "str",
    "match_only_text": "str",
    "search_as_you_type": "str",
    "wildcard": "str",
    "constant_keyword": "str",
    "ip": "str",
    "binary": "str",
    "version": "str",
    "long": "int",
    "integer": "int",
    "short": "int",
    "byte": "int",
    "unsigned_long": "int",
    "double": "float",
    "float": "float",
    "half_float": "float",
    "scaled_float": "float",
    "boolean": "bool",
    "date": "datetime",
    "date_nanos": "datetime",
}


def _embedded_model(doc_class: Any, mapping_type: str, kwargs: Mapping[str, Any]) -> type | None:
    """``doc_class`` when it is an esmapper ``InnerDoc`` class (``None`` when it is anything
    else, left to ``elasticsearch.dsl``); raises ``TypeError`` for a ``Document`` class, or
    for ``properties=`` given with the class (the class already says what the properties are).
    """
    if not isinstance(doc_class, type):
        return None
    if issubclass(doc_class, DocumentKind):
        raise TypeError(
            f"{mapping_type}({doc_class.__name__}): a Document is stored in its own index; "
            "an embedded object is an em.InnerDoc subclass"
        )
    if not issubclass(doc_class, EmbeddedKind):
        return None
    if vars(doc_class).get("__esm_base__", False):  # em.InnerDoc itself
        raise TypeError(f"{mapping_type}() takes a subclass of em.InnerDoc, not InnerDoc itself")
    if "properties" in kwargs:
        raise TypeError(
            f"{mapping_type}({doc_class.__name__}, properties=...): the properties come from "
            f"{doc_class.__name__}; give one or the other"
        )
    return doc_class


class Object(_dsl.Object):
    """``elasticsearch.dsl``'s ``Object`` mapping, which also takes an ``em.InnerDoc`` class:
    ``em.field(em.Object(Address))`` maps the field as ``object`` with Address's properties
    (the same as the inferred ``address: Address | None = None``). Other arguments are
    ``elasticsearch.dsl``'s (``enabled=``, ``dynamic=``, ...)."""

    def __init__(self, doc_class: Any = DEFAULT, *args: Any, **kwargs: Any) -> None:
        inner = _embedded_model(doc_class, "Object", kwargs)
        super().__init__(DEFAULT if inner is not None else doc_class, *args, **kwargs)
        self._esm_inner = inner


class Nested(_dsl.Nested):
    """``elasticsearch.dsl``'s ``Nested`` mapping, which also takes an ``em.InnerDoc`` class:
    ``em.field(em.Nested(Review), factory=list)`` maps a ``list[Review]`` as ``nested`` with
    Review's properties, so a filter's conditions on one nested path must hold on the same
    review. Other arguments are ``elasticsearch.dsl``'s (``include_in_parent=``, ...)."""

    def __init__(self, doc_class: Any = DEFAULT, *args: Any, **kwargs: Any) -> None:
        inner = _embedded_model(doc_class, "Nested", kwargs)
        super().__init__(DEFAULT if inner is not None else doc_class, *args, **kwargs)
        self._esm_inner = inner


def embedded_model(mapping: Field) -> type | None:
    """The ``InnerDoc`` class given to ``em.Object(...)`` / ``em.Nested(...)``, if any."""
    inner: type | None = getattr(mapping, "_esm_inner", None)
    return inner


@attrs.frozen(slots=True)
class FieldSpec:
    """What the model machinery knows about one attribute.

    ``kind`` is how values are checked and converted (``str``, ``int``, ``float``,
    ``bool``, ``datetime``, ``inner``, ``enum``, ``any``); ``many`` says the attribute holds a
    list; ``optional`` whether ``None`` is accepted; ``inner`` the InnerDoc class for
    ``inner``; ``enum`` the Enum class for ``enum``; ``stored`` whether it goes into
    ``_source`` (``version`` does not).
    """

    name: str
    mapping: dict[str, Any] | None
    kind: str
    many: bool = False
    optional: bool = True
    inner: type | None = None
    enum: type[enum.Enum] | None = None
    stored: bool = True


@attrs.frozen(slots=True)
class _Declared:
    """The metadata ``em.field()`` attaches to an attrs field."""

    mapping: Field | None


def field(
    mapping: Field | None = None,
    *,
    default: Any = attrs.NOTHING,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """Declare a model attribute with an explicit Elasticsearch ``mapping``.

    ``default`` or ``factory`` gives the value of a new document (mutable defaults need a
    ``factory``). Without ``mapping`` the type is inferred from the annotation.
    """
    if default is not attrs.NOTHING and factory is not None:
        raise TypeError("field() takes default= or factory=, not both")
    if is_mutable_default(default):
        raise TypeError("mutable default: use factory=list / factory=dict instead")
    if mapping is not None and not isinstance(mapping, Field):
        raise TypeError(f"field() mapping must be an elasticsearch.dsl field, got {mapping!r}")
    return attrs.field(
        default=default, factory=factory, metadata={_METADATA_KEY: _Declared(mapping)}
    )


def is_mutable_default(value: Any) -> bool:
    """Whether ``value`` as a default would be one object shared by every instance.

    Lists, dicts, sets and model instances (embedded objects) are; use a ``factory``.
    """
    return isinstance(value, list | dict | set | bytearray) or hasattr(type(value), "__esmapper__")


def declared_mapping(attribute: attrs.Attribute) -> Field | None:  # type: ignore[type-arg]
    """The mapping given to ``em.field()`` for ``attribute``, if any."""
    declared = attribute.metadata.get(_METADATA_KEY)
    return declared.mapping if isinstance(declared, _Declared) else None


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) != len(typing.get_args(tp))
        if len(args) == 1:
            return args[0], optional
        return Any, optional
    return tp, tp is Any or tp is None


def spec_from_annotation(
    name: str, annotation: Any, mapping: Field | None, *, is_inner_doc: Callable[[Any], bool]
) -> FieldSpec:
    """Build the :class:`FieldSpec` of attribute ``name`` from its annotation and mapping.

    Raises ``TypeError`` naming the attribute when no mapping can be inferred.
    """
    tp, optional = _unwrap_optional(annotation)
    many = False
    origin = typing.get_origin(tp)
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple, set):
        many = True
        args = typing.get_args(tp)
        tp = args[0] if args else Any
        tp, _ = _unwrap_optional(tp)
    inner = tp if is_inner_doc(tp) else None
    enum_cls = tp if isinstance(tp, type) and issubclass(tp, enum.Enum) else None
    declared = embedded_model(mapping) if mapping is not None else None
    if declared is not None and inner is not declared:
        if inner is not None or tp is not Any:
            raise TypeError(
                f"attribute {name!r}: the mapping embeds {declared.__name__} but the annotation "
                f"is {annotation!r}; annotate it {declared.__name__}, "
                f"{declared.__name__} | None or list[{declared.__name__}]"
            )
        inner = declared

    if mapping is not None:
        mapping_dict = mapping.to_dict()
        es_type = mapping_dict.get("type", "object")
        if es_type in ("object", "nested"):
            kind = "inner" if inner is not None else "any"
            if inner is not None and "properties" not in mapping_dict:
                mapping_dict["properties"] = inner.__esmapper__.mapping["properties"]
        elif enum_cls is not None:
            kind = "enum"
        else:
            kind = KIND_BY_ES_TYPE.get(es_type, "any")
        return FieldSpec(name, mapping_dict, kind, many, optional, inner, enum_cls)

    if inner is not None:
        props = inner.__esmapper__.mapping["properties"]
        return FieldSpec(
            name, {"type": "object", "properties": props}, "inner", many, optional, inner
        )
    if enum_cls is not None:
        es = "long" if issubclass(enum_cls, int) else "keyword"
        return FieldSpec(name, {"type": es}, "enum", many, optional, None, enum_cls)
    inferred = _INFERRED.get(tp)
    if inferred is None:
        if tp is dict or typing.get_origin(tp) is dict or tp is Mapping:
            return FieldSpec(name, {"type": "object", "enabled": False}, "any", many, optional)
        if tp is Any:
            return FieldSpec(name, {"type": "object", "enabled": False}, "any", many, True)
        raise TypeError(
            f"cannot infer an Elasticsearch mapping for attribute {name!r} of type "
            f"{annotation!r}; declare it with em.field(<mapping>)"
        )
    es_type, kind = inferred
    return FieldSpec(name, {"type": es_type}, kind, many, optional)


_INFERRED: dict[Any, tuple[str, str]] = {
    str: ("keyword", "str"),
    int: ("long", "int"),
    float: ("double", "float"),
    bool: ("boolean", "bool"),
    _dt.datetime: ("date", "datetime"),
    _dt.date: ("date", "datetime"),
}
