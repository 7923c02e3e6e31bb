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
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
from typing_extensions import Self, dataclass_transform

from esmapper.model import _tracking as tracking
from esmapper.model._kinds import DocumentKind, EmbeddedKind
from esmapper.model._refs import install_refs, raw_class_attributes
from esmapper.model.codec import compile_codec, make_converter
from esmapper.model.fields import (
    FieldSpec,
    declared_mapping,
    field,
    is_mutable_default,
    spec_from_annotation,
)
from esmapper.model.info import IndexOptions, ModelInfo, check_against_fields, date_fields
from esmapper.model.normalize import compile_normalizer
from esmapper.model.state import DocState, version_of

__all__ = [
    "Document",
    "HasCustomFields",
    "HasVirtualCustomFields",
    "HasDates",
    "InnerDoc",
    "SoftDeletes",
    "Versioned",
]


def _is_inner_doc(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, InnerDoc) and tp is not InnerDoc


def _evaluate(annotation: Any, klass: type, localns: Mapping[str, Any] | None = None) -> Any:
    """An annotation of ``klass``, evaluated in its own module (``from __future__`` safe).

    Names are looked up in the class body (nested classes; not the field defaults, which
    would shadow a type named like the field), then in ``localns`` (the namespace the class
    statement ran in, so models defined in a function can refer to each other), then in the
    module. Raises (``NameError``, ...) when the annotation cannot be evaluated.
    """
    if not isinstance(annotation, str):
        return annotation
    module = sys.modules.get(klass.__module__)
    globalns = dict(vars(module)) if module else {}
    own = vars(klass).get("__annotations__", {})
    names = dict(localns or {})
    names.update((k, v) for k, v in vars(klass).items() if k not in own)
    return eval(annotation, globalns, names)


def _caller_namespace() -> dict[str, Any]:
    """The local namespace the class statement being executed runs in."""
    try:
        # 0: here, 1: ModelMeta.__new__, 2: the frame running the class statement.
        return dict(sys._getframe(2).f_locals)
    except ValueError:  # pragma: no cover - shallower stack than expected
        return {}


def _trait_fields(bases: tuple[type, ...]) -> dict[str, tuple[Any, Any, bool]]:
    """``name -> (annotation, default, stored)`` of the fields the trait bases declare.

    In base order; each annotation is evaluated in the module of its trait.
    """
    found: dict[str, tuple[Any, Any, bool]] = {}
    for klass in [k for b in bases for k in reversed(b.__mro__)]:
        if not vars(klass).get("__esm_trait__", False):
            continue
        unstored = vars(klass).get("__esm_unstored__", ())
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            if name.startswith("_") or name in found:
                continue
            default = vars(klass).get(name)
            found[name] = (_evaluate(annotation, klass), default, name not in unstored)
    return found


def _compiled_specs(cls: type) -> dict[str, FieldSpec]:
    """The field specs the model bases of ``cls`` already compiled (nearest base wins)."""
    specs: dict[str, FieldSpec] = {}
    for base in reversed(cls.__mro__[1:]):
        info = vars(base).get("__esmapper__")
        if info is not None:
            specs.update(info.field_by_name)
    return specs


def _annotation_in_mro(cls: type, name: str) -> Any:
    """The annotation of ``name`` in the nearest class of ``cls.__mro__`` declaring it."""
    for klass in cls.__mro__:
        annotations = vars(klass).get("__annotations__", {})
        if name in annotations:
            return _evaluate(annotations[name], klass)
    return Any


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
        localns = _caller_namespace()
        ns = dict(ns)
        own_annotations: dict[str, Any] = dict(ns.get("__annotations__", {}))
        for fname in own_annotations:
            if is_mutable_default(ns.get(fname)):
                raise TypeError(
                    f"{name}.{fname}: a mutable default would be shared by every instance; "
                    "use em.field(factory=...) instead"
                )
        inherited = {a.name for b in bases if attrs.has(b) for a in attrs.fields(b)}
        merged: dict[str, Any] = {}
        for fname, (annotation, default, stored) in _trait_fields(bases).items():
            if fname in own_annotations or fname in inherited:
                continue
            merged[fname] = annotation
            ns[fname] = attrs.field(default=default, metadata={"esmapper_stored": stored})
        ns["__annotations__"] = declared = {**merged, **own_annotations}
        index_cls = ns.pop("Index", None)
        ns.setdefault("__esm_index_class__", index_cls)

        plain = super().__new__(mcls, name, bases, ns, **kwargs)
        compiled = _compiled_specs(plain)
        specs: dict[str, FieldSpec] = {}

        def resolve(fname: str) -> Any:
            if fname not in declared:
                return _annotation_in_mro(plain, fname)
            try:
                return _evaluate(declared[fname], plain, localns)
            except Exception as exc:
                raise TypeError(
                    f"cannot resolve the annotation {declared[fname]!r} of {name}.{fname} "
                    f"({type(exc).__name__}: {exc}); define the types it names before the model"
                ) from None

        def transform(cls: type, attributes: list[attrs.Attribute]) -> list[attrs.Attribute]:  # type: ignore[type-arg]
            out = []
            for attribute in attributes:
                if attribute.name not in declared and attribute.name in compiled:
                    # Inherited from a model base: reuse what the base compiled (its
                    # annotations were resolved in the base's own scope).
                    spec = compiled[attribute.name]
                else:
                    spec = spec_from_annotation(
                        attribute.name,
                        resolve(attribute.name),
                        declared_mapping(attribute),
                        is_inner_doc=_is_inner_doc,
                    )
                    if attribute.metadata.get("esmapper_stored") is False:
                        spec = attrs.evolve(spec, stored=False, mapping=None)
                specs[attribute.name] = spec
                out.append(attribute.evolve(converter=make_converter(spec, name)))
            return out

        with raw_class_attributes():  # attrs reads the bases' slot descriptors
            cls = attrs.define(
                plain,
                slots=True,
                kw_only=True,
                eq=True,
                order=False,
                weakref_slot=True,
                field_transformer=transform,
                on_setattr=[attrs.setters.convert, tracking.mark_assigned],
            )
        attributes = attrs.fields(cls)  # type: ignore[arg-type]
        # attrs hands ``transform`` every attribute, inherited ones included
        ordered = tuple(specs[a.name] for a in attributes)
        raw_slots = tracking.install(
            cls,
            [s.name for s in ordered if s.many or s.kind in ("inner", "any")],
            document=is_document,
        )
        # assigning these hands the caller's object to the document (see tracking.watch)
        watched = (
            frozenset(s.name for s in ordered if s.kind in ("inner", "any"))
            if is_document
            else frozenset()
        )
        type.__setattr__(cls, "__esm_watched__", watched)
        info = _build_info(cls, ordered, attributes, is_document, index_cls, raw_slots=raw_slots)
        type.__setattr__(cls, "__esmapper__", info)
        # ``Employee.age`` -> FieldRef (see model._refs)
        install_refs(cls, _field_ref_meta(type(cls)))
        return cls  # type: ignore[return-value]


class FieldRefMeta(ModelMeta):
    """The metaclass of a finished model: ``Model.<field>`` read on the class is a
    :class:`~esmapper.model._refs.FieldRef` (see :mod:`esmapper.model._refs`); reads and
    writes on instances are untouched."""

    __slots__ = ()
    #: marks the field-reference metaclasses (and the subclasses made of a user's own)
    __esm_field_refs__ = True


#: a user's metaclass derived from ModelMeta -> its field-reference subclass
_DERIVED_REF_METAS: dict[type, type] = {}


def _field_ref_meta(meta: type) -> type:
    """The metaclass a finished model of metaclass ``meta`` gets: ``meta`` itself when it
    is a :class:`FieldRefMeta` already (a subclass of a finished model), FieldRefMeta for
    ModelMeta, and for a user's metaclass derived from ModelMeta (its own ``__call__`` or
    methods) a subclass of both, made once, so the model keeps that metaclass's
    behaviour (the same layout: ``__class__`` assignment allows it)."""
    if issubclass(meta, FieldRefMeta):
        return meta
    if meta is ModelMeta:
        return FieldRefMeta
    derived = _DERIVED_REF_METAS.get(meta)
    if derived is None:
        ns = {"__slots__": (), "__module__": meta.__module__, "__qualname__": meta.__qualname__}
        derived = _DERIVED_REF_METAS[meta] = type(meta.__name__, (meta, FieldRefMeta), ns)
    return derived


def _build_info(
    cls: type,
    specs: tuple[FieldSpec, ...],
    attributes: Any,
    is_document: bool,
    index_cls: type | None,
    *,
    raw_slots: dict[str, Any],
) -> ModelInfo:
    has_version = is_document and issubclass(cls, Versioned)
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
        check_against_fields(cls.__name__, index, specs)
    created, updated = (
        date_fields(cls.__name__, index, specs, issubclass(cls, HasDates))
        if is_document
        else (None, None)
    )
    to_source, from_source, lenient = compile_codec(
        cls,
        specs,
        attributes,
        has_id=is_document,
        has_version=has_version,
        raw_slots=raw_slots,
        dates=(created, updated),  # formatted once per batch (one ``now``)
    )
    return ModelInfo(
        cls=cls,
        fields=specs,
        to_source=to_source,
        from_source=from_source,
        lenient=lenient,
        normalizer=compile_normalizer(cls, specs, raw_slots),
        is_document=is_document,
        index=index,
        has_dates=created is not None or updated is not None,
        created_field=created,
        updated_field=updated,
        soft_deletes=is_document and issubclass(cls, SoftDeletes),
        versioned=has_version,
        # the custom-field feature (esmapper.custom_fields) checks their options, maps and
        # reads them: attached by ModelInfo when it applies
        custom_fields=is_document and issubclass(cls, HasCustomFields | HasVirtualCustomFields),
    )


class _ModelBase(metaclass=ModelMeta):
    __esm_base__ = True
    # _esm_state: see esmapper.model.state; _esm_raw (unset unless needed): the values
    # loaded as stored that the model does not know (esmapper.model.lenient)
    __slots__ = ("_esm_raw", "_esm_state")
    __esmapper__: ClassVar[ModelInfo]
    __esm_watched__: ClassVar[frozenset[str]] = frozenset()

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_esm_state", None)

    def to_source(self) -> dict[str, Any]:
        """The ``_source`` dict Elasticsearch stores for this object."""
        return type(self).__esmapper__.to_source(self)

    @classmethod
    def from_source(cls, source: Mapping[str, Any]) -> Any:
        """Build an object from a ``_source`` dict, without re-checking the values."""
        return cls.__esmapper__.from_source(source, None, None)


class InnerDoc(_ModelBase, EmbeddedKind):
    """Base class of embedded objects (mapped as ``object``, or ``nested`` when declared so)."""

    __esm_base__ = True
    __slots__ = ()


class _Trait(metaclass=ModelMeta):
    """Base of the traits: annotated fields, merged into each model, and no slots."""

    __esm_base__ = True
    __slots__ = ()


class Document(_ModelBase, DocumentKind):
    """Base class of stored documents: adds ``id`` (``None`` until the document is added).

    A nested ``class Index:`` sets the model's index options
    (:class:`~esmapper.model.info.IndexOptions`). Without one, or without its ``name``,
    the index is named after the class in ``snake_case``: ``EmployeeReview`` reads and
    writes through the alias ``employee_review`` (the mapper's ``index_prefix`` in front),
    over the physical index ``employee_review-v1``; ``HTTPLog`` is ``http_log``. Every
    other option takes its default (a ``versioned`` index, version 1, the cluster's
    default settings).
    """

    __esm_base__ = True
    __esm_trait__ = True
    __slots__ = ()

    id: str | None = None

    @classmethod
    def from_hit(cls, hit: Mapping[str, Any]) -> Self:
        """Build a model from a raw search hit or GET response.

        Reads ``_id``, ``_source`` and, for ``Versioned`` models, ``_primary_term`` and
        ``_seq_no`` (as ``version = "<primary_term>:<seq_no>"``). The document counts as
        loaded from the store: ``session.add()`` attaches it as an existing document and its
        ``_source`` is the original that changes are compared with. A value the model does
        not know (a newer deploy's enum value, ...) is kept as stored and reported once on
        the ``esmapper.model`` logger; ``to_source()`` writes it back unchanged (see
        :mod:`esmapper.model.lenient`).
        """
        version, condition = version_of(hit.get("_seq_no"), hit.get("_primary_term"))
        source = hit.get("_source") or {}
        id = hit.get("_id")
        state = (
            None
            if id is None
            else DocState(source, hit.get("_index"), None, False, version, condition)
        )
        document: Self = cls.__esmapper__.from_source(source, id, version, state)
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
    """Trait: tenant custom fields.

    ``custom_fields`` maps logical names to values (stored, not indexed). ``idx`` is what
    the mapper indexes: on every write it is recomputed from ``custom_fields`` and the
    tenant's definitions (``{"int-1": 5}``; see
    :mod:`esmapper.custom_fields.indexing`); do not set it. ``tenant_key()`` scopes the
    definitions: the value of ``Index.tenant_field`` by default (``""``: no tenant, nothing
    indexed); override it for a composite key.
    """

    __esm_base__ = True
    __esm_trait__ = True
    __slots__ = ()

    custom_fields: dict[str, Any] | None = None
    idx: dict[str, Any] | None = None

    def tenant_key(self) -> str:
        """The tenant whose definitions apply to this document (``""``: none)."""
        index = type(self).__esmapper__.index  # type: ignore[attr-defined]
        name = index.tenant_field if index is not None else None
        value = getattr(self, name) if name else None
        return "" if value is None else str(value)


class HasVirtualCustomFields(_Trait):
    """Trait: tenant custom fields whose values the model keeps itself (its own
    attributes, another structure) instead of a ``custom_fields`` dict.

    Implement ``get_custom_fields()`` (``{logical name: value}``), ``get_custom_field(name)``,
    ``set_custom_field(name, value)``, ``remove_custom_field(name)`` and
    ``get_tenant_key()`` (the tenant, ``None``/``""``: none); a document class that leaves
    one out raises IndexConfigurationError when it is defined. ``idx`` is what the mapper
    indexes, recomputed on every write from ``get_custom_fields()`` and the tenant's
    definitions exactly as for ``em.HasCustomFields``; a type's processed value (e.g.
    clamped) and a renamed field's value are stored back through ``set_custom_field`` /
    ``remove_custom_field``. ``tenant=`` searches filter on ``idx.tenant``, which the
    write path fills. A partially loaded document (``includes``/``excludes``) is written
    with its ``idx`` as loaded: load it whole to change its custom values.
    """

    __esm_base__ = True
    __esm_trait__ = True
    __slots__ = ()

    idx: dict[str, Any] | None = None

    def get_custom_fields(self) -> dict[str, Any]:
        """``{logical name: value}`` of this document's custom fields."""
        raise NotImplementedError(f"{type(self).__name__}.get_custom_fields()")

    def get_custom_field(self, name: str) -> Any:
        """The value of custom field ``name`` (``None``: none)."""
        raise NotImplementedError(f"{type(self).__name__}.get_custom_field()")

    def set_custom_field(self, name: str, value: Any) -> None:
        """Store ``value`` as custom field ``name``."""
        raise NotImplementedError(f"{type(self).__name__}.set_custom_field()")

    def remove_custom_field(self, name: str) -> None:
        """Drop custom field ``name``."""
        raise NotImplementedError(f"{type(self).__name__}.remove_custom_field()")

    def get_tenant_key(self) -> str | None:
        """The tenant whose definitions apply to this document (``None``/``""``: none)."""
        raise NotImplementedError(f"{type(self).__name__}.get_tenant_key()")
