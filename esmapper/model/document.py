"""Declarative models: ``Document``, ``InnerDoc`` and the traits.

A model is a plain class with typed attributes. Its metaclass turns it into a slotted attrs
class (keyword-only constructor, unknown names -> ``TypeError``, every value checked on
construction and assignment), merges in the fields its traits declare, and compiles its
``_source`` converters and Elasticsearch mapping once.

Traits hold no slots (a slotted class cannot inherit two non-empty ``__slots__``): they
declare :class:`TraitField` entries that the metaclass copies into each concrete model.
"""

from __future__ import annotations

import datetime as _dt
import sys
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
from typing_extensions import Self, dataclass_transform

from esmapper.model.codec import compile_codec, make_converter
from esmapper.model.fields import FieldSpec, declared_mapping, field, spec_from_annotation
from esmapper.model.info import IndexOptions, ModelInfo

__all__ = [
    "Document",
    "HasCustomFields",
    "HasDates",
    "InnerDoc",
    "SoftDeletes",
    "Versioned",
]


def _is_inner_doc(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, InnerDoc) and tp is not InnerDoc


def _evaluate(annotation: Any, klass: type) -> Any:
    """An annotation of ``klass``, evaluated in its own module (``from __future__`` safe)."""
    if not isinstance(annotation, str):
        return annotation
    module = sys.modules.get(klass.__module__)
    globalns = dict(vars(module)) if module else {}
    try:
        return eval(annotation, globalns, dict(vars(klass)))
    except Exception:
        return Any


def _resolve_hints(cls: type) -> dict[str, Any]:
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            hints[name] = _evaluate(annotation, klass)
    return hints


def _trait_fields(bases: tuple[type, ...]) -> dict[str, tuple[Any, bool]]:
    """``name -> (default, stored)`` of the fields the trait bases declare, in base order."""
    found: dict[str, tuple[Any, bool]] = {}
    for klass in [k for b in bases for k in reversed(b.__mro__)]:
        if not vars(klass).get("__esm_trait__", False):
            continue
        unstored = vars(klass).get("__esm_unstored__", ())
        for name in vars(klass).get("__annotations__", {}):
            if name.startswith("_") or name in found:
                continue
            found[name] = (vars(klass).get(name), name not in unstored)
    return found


@dataclass_transform(kw_only_default=True, field_specifiers=(field, attrs.field))
class ModelMeta(type):
    """Builds models: merges trait fields, applies ``attrs.define``, compiles converters."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kwargs: Any
    ) -> ModelMeta:
        if "__attrs_attrs__" in ns or ns.get("__esm_base__", False):
            # attrs rebuilding the slotted class, or one of the library's own base classes.
            return super().__new__(mcls, name, bases, ns, **kwargs)

        is_document = any(isinstance(b, ModelMeta) and issubclass(b, Document) for b in bases)
        ns = dict(ns)
        own_annotations: dict[str, Any] = dict(ns.get("__annotations__", {}))
        inherited = {a.name for b in bases if attrs.has(b) for a in attrs.fields(b)}
        merged: dict[str, Any] = {}
        for fname, (default, stored) in _trait_fields(bases).items():
            if fname in own_annotations or fname in inherited:
                continue
            merged[fname] = Any  # the real annotation is resolved from the trait below
            ns[fname] = attrs.field(default=default, metadata={"esmapper_stored": stored})
        ns["__annotations__"] = {**merged, **own_annotations}
        index_cls = ns.pop("Index", None)
        ns.setdefault("__esm_index_class__", index_cls)

        plain = super().__new__(mcls, name, bases, ns, **kwargs)
        hints = _resolve_hints(plain)
        for base in reversed(plain.__mro__[1:]):
            for fname, annotation in vars(base).get("__annotations__", {}).items():
                if fname in merged:
                    hints[fname] = _evaluate(annotation, base)
        specs: dict[str, FieldSpec] = {}

        def transform(cls: type, attributes: list[attrs.Attribute]) -> list[attrs.Attribute]:  # type: ignore[type-arg]
            out = []
            for attribute in attributes:
                annotation = hints.get(attribute.name, attribute.type or Any)
                spec = spec_from_annotation(
                    attribute.name,
                    annotation,
                    declared_mapping(attribute),
                    is_inner_doc=_is_inner_doc,
                )
                if attribute.metadata.get("esmapper_stored") is False:
                    spec = attrs.evolve(spec, stored=False, mapping=None)
                specs[attribute.name] = spec
                out.append(attribute.evolve(converter=make_converter(spec, name)))
            return out

        cls = attrs.define(
            plain,
            slots=True,
            kw_only=True,
            eq=True,
            order=False,
            weakref_slot=True,
            field_transformer=transform,
        )
        attributes = attrs.fields(cls)  # type: ignore[arg-type]
        ordered = (
            tuple(specs[a.name] for a in attributes)
            if specs
            else tuple(_spec_of_inherited(cls, a) for a in attributes)
        )
        info = _build_info(cls, ordered, attributes, is_document, index_cls)
        type.__setattr__(cls, "__esmapper__", info)
        return cls  # type: ignore[return-value]


def _spec_of_inherited(cls: type, attribute: attrs.Attribute) -> FieldSpec:  # type: ignore[type-arg]
    for base in cls.__mro__[1:]:
        info = vars(base).get("__esmapper__")
        if info is not None and attribute.name in info.field_by_name:
            return typing.cast(FieldSpec, info.field_by_name[attribute.name])
    raise TypeError(f"cannot find the declaration of {cls.__name__}.{attribute.name}")


def _build_info(
    cls: type,
    specs: tuple[FieldSpec, ...],
    attributes: Any,
    is_document: bool,
    index_cls: type | None,
) -> ModelInfo:
    has_version = is_document and issubclass(cls, Versioned)
    to_source, from_source = compile_codec(
        cls, specs, attributes, has_id=is_document, has_version=has_version
    )
    index = None
    if is_document:
        if index_cls is None:
            for base in cls.__mro__[1:]:
                base_info = vars(base).get("__esmapper__")
                if base_info is not None and base_info.index is not None:
                    index = base_info.index
                    break
        if index is None:
            index = IndexOptions.from_class(cls.__name__, index_cls)
        unknown = [f for f in index.id_fields if f not in {s.name for s in specs}]
        if unknown:
            from esmapper.errors import IndexConfigurationError

            raise IndexConfigurationError(
                f"{cls.__name__}.Index.id_fields names unknown attribute(s): {', '.join(unknown)}"
            )
    return ModelInfo(
        cls=cls,
        fields=specs,
        to_source=to_source,
        from_source=from_source,
        is_document=is_document,
        index=index,
        has_dates=is_document and issubclass(cls, HasDates),
        soft_deletes=is_document and issubclass(cls, SoftDeletes),
        versioned=has_version,
        custom_fields=is_document and issubclass(cls, HasCustomFields),
    )


class _ModelBase(metaclass=ModelMeta):
    __esm_base__ = True
    __slots__ = ("_esm_state",)
    __esmapper__: ClassVar[ModelInfo]

    def to_source(self) -> dict[str, Any]:
        """The ``_source`` dict Elasticsearch stores for this object."""
        return type(self).__esmapper__.to_source(self)

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> Any:
        """Build an object from a ``_source`` dict, without re-checking the values."""
        return cls.__esmapper__.from_source(source, None, None)


class InnerDoc(_ModelBase):
    """Base class of embedded objects (mapped as ``object``, or ``nested`` when declared so)."""

    __esm_base__ = True
    __slots__ = ()


class _Trait(metaclass=ModelMeta):
    """Base of the traits: annotated fields, merged into each model, and no slots."""

    __esm_base__ = True
    __slots__ = ()


class Document(_ModelBase):
    """Base class of stored documents: adds ``id`` (``None`` until the document is added)."""

    __esm_base__ = True
    __esm_trait__ = True
    __slots__ = ()

    id: str | None = None

    @classmethod
    def from_hit(cls, hit: Mapping[str, Any]) -> Self:
        """Build a model from a raw search hit or GET response.

        Reads ``_id``, ``_source`` and, for ``Versioned`` models, ``_primary_term`` and
        ``_seq_no`` (as ``version = "<primary_term>:<seq_no>"``).
        """
        seq_no = hit.get("_seq_no")
        version = None if seq_no is None else f"{hit['_primary_term']}:{seq_no}"
        document: Self = cls.__esmapper__.from_source(
            hit.get("_source") or {}, hit.get("_id"), version
        )
        return document

    def validate(self) -> None:
        """Override to check a document before it is written; raise DocumentValidationError.

        Runs on ``add`` and ``save`` (not on patches or removes), unless ``validate=False``.
        """


class HasDates(_Trait):
    """Trait: ``created_utc`` and ``updated_utc``, aware UTC datetimes set by the mapper."""

    __esm_base__ = True
    __esm_trait__ = True
    __slots__ = ()

    created_utc: _dt.datetime | None = None
    updated_utc: _dt.datetime | None = None


class SoftDeletes(_Trait):
    """Trait: ``is_deleted``; soft-deleted documents are hidden from reads by default."""

    __esm_base__ = True
    __esm_trait__ = True
    __slots__ = ()

    is_deleted: bool = False


class Versioned(_Trait):
    """Trait: ``version`` (``"<primary_term>:<seq_no>"``), checked on every save; it is
    metadata, not part of ``_source``."""

    __esm_base__ = True
    __esm_trait__ = True
    __esm_unstored__ = ("version",)
    __slots__ = ()

    version: str | None = None


class HasCustomFields(_Trait):
    """Trait: tenant custom fields, kept in ``custom_fields`` (not indexed yet)."""

    __esm_base__ = True
    __esm_trait__ = True
    __slots__ = ()

    custom_fields: dict[str, Any] | None = None
