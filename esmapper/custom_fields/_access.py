"""How a custom-field document holds its values and names its tenant: the one answer.

A model has custom fields in one of two ways:

- ``em.HasCustomFields``: a ``custom_fields`` dict (logical name -> value) and
  ``tenant_key()`` (the value of ``Index.tenant_field`` unless overridden);
- ``em.HasVirtualCustomFields``: the model keeps the values where it likes (its own
  attributes, another structure) and exposes them through ``get_custom_fields()``,
  ``get_custom_field(name)``, ``set_custom_field(name, value)``,
  ``remove_custom_field(name)``; ``get_tenant_key()`` names the tenant.

Each model's :class:`CustomValues` (:func:`access_for`, chosen by the custom-field feature
when the class is defined; :func:`custom_access` / :func:`access_of` read it) is
what every path reads and writes through: the write pipeline recomputing ``idx``, patches,
reconciling after scripts, the definitions' ``rebuild_idx``, the tenant filter of
searches. No other code asks which of the two mixins a model uses. What a call
scoped to a tenant may see and write is :mod:`esmapper.custom_fields._tenancy`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from esmapper.custom_fields.catalog import IDX_TENANT
from esmapper.errors import IndexConfigurationError, QueryValidationError
from esmapper.model.document import HasCustomFields, HasVirtualCustomFields
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.custom_fields.repository import CustomFieldRepository

__all__ = [
    "VIRTUAL_METHODS",
    "CustomValues",
    "DictValues",
    "VirtualValues",
    "access_for",
    "access_of",
    "custom_access",
    "definitions",
    "raw_attribute",
    "require_custom_fields",
]

_set = object.__setattr__

#: what a ``HasVirtualCustomFields`` model must implement
VIRTUAL_METHODS = (
    "get_custom_fields",
    "get_custom_field",
    "set_custom_field",
    "remove_custom_field",
    "get_tenant_key",
)


def raw_attribute(doc: Any, name: str) -> Any:
    """An attribute read without marking the document watched (see model.tracking)."""
    # the descriptor in the class dicts (``Model.<field>`` on the class is a FieldRef)
    descriptor = next(vars(k)[name] for k in type(doc).__mro__ if name in vars(k))
    slot = getattr(descriptor, "slot", descriptor)
    return slot.__get__(doc, type(doc))


class CustomValues:
    """The custom values and tenant of a model's documents (see the module docstring)."""

    __slots__ = ()

    #: whether the values are all in the ``custom_fields`` attribute (a partially loaded
    #: document without it cannot have its ``idx`` recomputed)
    dict_attribute: str | None = None

    def values(self, doc: Any) -> Mapping[str, Any] | None:
        """The document's ``{logical name: value}`` (``None``: none). Read-only."""
        raise NotImplementedError

    def set(self, doc: Any, name: str, value: Any) -> None:
        """Store ``value`` under logical ``name`` (processing changed it, a rename moved it)."""
        raise NotImplementedError

    def remove(self, doc: Any, name: str, *, partial: bool = False) -> None:
        """Drop logical ``name`` (a renamed field's former name). ``partial``: the document
        was loaded partially, so its save merges: the name is nulled where possible."""
        raise NotImplementedError

    def tenant(self, doc: Any) -> str:
        """The tenant whose definitions apply to ``doc`` (``""``: none, nothing indexed).
        A model that computes its tenant key (no ``Index.tenant_field`` to filter on) may
        have a partially loaded document lacking what the key is computed from: such a
        document belongs to the tenant it is stored under (its loaded ``idx.tenant``;
        moving a document to another tenant takes a document loaded whole)."""
        if not self.uses_tenant_field(type(doc).__esmapper__):
            state = state_of(doc)
            if state is not None and state.partial:
                stored = (state.original or {}).get("idx")
                if isinstance(stored, dict) and stored.get("tenant"):
                    return str(stored["tenant"])
        return self.own_tenant(doc)

    def own_tenant(self, doc: Any) -> str:
        """The tenant ``doc`` names itself (its tenant key), ``""`` for none."""
        raise NotImplementedError

    def source_paths(self, info: Any) -> tuple[str, ...]:
        """The ``_source`` paths an ``includes`` naming a custom field loads besides its
        slot: where the values and the tenant are (none known for a virtual model)."""
        return ()

    def uses_tenant_field(self, info: Any) -> bool:
        """Whether a ``tenant=`` search can filter on ``Index.tenant_field`` (else on
        ``idx.tenant``, which the write path fills)."""
        return False

    def loaded(self, doc: Any, state: Any) -> bool:
        """Whether a partially loaded ``doc`` (its ``state``) holds what recomputing its
        ``idx`` needs: its custom values and its tenant."""
        return True

    def source_changes(self, before: Mapping[str, Any], doc: Any) -> dict[str, Any]:
        """What an update must send, besides ``idx``, so that the stored ``before`` holds
        what processing did to ``doc``'s values (clamped, a renamed field's value moved):
        changed top-level keys, objects as merges (a removed key nulled)."""
        after = doc.to_source()
        out: dict[str, Any] = {}
        for key, value in after.items():
            if key == "idx" or before.get(key) == value:
                continue
            old = before.get(key)
            out[key] = changed_values(old, value) if isinstance(old, dict) else value
        return out

    def write_back(self, doc: Any, source: dict[str, Any]) -> None:
        """Put ``doc``'s processed values into ``source`` (the body a client-side patch
        writes back)."""
        for key, value in doc.to_source().items():
            if key != "idx":
                source[key] = value


class DictValues(CustomValues):
    """``em.HasCustomFields``: the ``custom_fields`` dict and ``tenant_key()``."""

    __slots__ = ()
    dict_attribute = "custom_fields"

    def values(self, doc: Any) -> Mapping[str, Any] | None:
        values: Mapping[str, Any] | None = raw_attribute(doc, "custom_fields")
        return values

    # copy on write: the dict may be shared with what the document was loaded from
    def set(self, doc: Any, name: str, value: Any) -> None:
        values = dict(raw_attribute(doc, "custom_fields") or {})
        values[name] = value
        _set(doc, "custom_fields", values)

    def remove(self, doc: Any, name: str, *, partial: bool = False) -> None:
        values = raw_attribute(doc, "custom_fields")
        if values is None or name not in values:
            return
        values = dict(values)
        if partial:
            values[name] = None
        else:
            del values[name]
        _set(doc, "custom_fields", values)

    def own_tenant(self, doc: Any) -> str:
        return str(doc.tenant_key() or "")

    def source_paths(self, info: Any) -> tuple[str, ...]:
        # the dict whole: its keys keep the case they were written in, and a document
        # loaded with part of them could not have its idx recomputed; and what tells its
        # tenant (a computed tenant key is checked against the stored idx.tenant)
        if not self.uses_tenant_field(info):
            return ("custom_fields", IDX_TENANT)
        field = info.index.tenant_field
        return ("custom_fields", field) if field else ("custom_fields",)

    def uses_tenant_field(self, info: Any) -> bool:
        return getattr(info.cls, "tenant_key", None) is HasCustomFields.tenant_key

    def loaded(self, doc: Any, state: Any) -> bool:
        original = state.original or {}
        if "custom_fields" not in original:
            return False
        # without its tenant the document would look tenant-less and lose its slots
        info = type(doc).__esmapper__
        if not self.uses_tenant_field(info):
            # a computed tenant key (tenant_key() overridden) reads attributes a partial
            # load may have left out: the stored idx.tenant names the tenant (see tenant())
            stored = original.get("idx")
            return isinstance(stored, dict) and bool(stored.get("tenant"))
        field = info.index.tenant_field if info.index is not None else None
        return field is None or field in original

    def source_changes(self, before: Mapping[str, Any], doc: Any) -> dict[str, Any]:
        changed = changed_values(before.get("custom_fields"), self.values(doc))
        return {"custom_fields": changed} if changed else {}

    def write_back(self, doc: Any, source: dict[str, Any]) -> None:
        values = self.values(doc)
        if values is not None:
            source["custom_fields"] = dict(values)


class VirtualValues(CustomValues):
    """``em.HasVirtualCustomFields``: the model's own accessors. A tenant filter uses
    ``idx.tenant`` (the model names no tenant attribute)."""

    __slots__ = ()

    def values(self, doc: Any) -> Mapping[str, Any] | None:
        values = doc.get_custom_fields()
        if values is not None and not isinstance(values, Mapping):
            raise TypeError(
                f"{type(doc).__name__}.get_custom_fields() must return a dict of logical "
                f"name -> value, not {type(values).__name__}"
            )
        return values

    def set(self, doc: Any, name: str, value: Any) -> None:
        doc.set_custom_field(name, value)

    def remove(self, doc: Any, name: str, *, partial: bool = False) -> None:
        doc.remove_custom_field(name)

    def own_tenant(self, doc: Any) -> str:
        tenant = doc.get_tenant_key()
        return "" if tenant is None else str(tenant)

    def loaded(self, doc: Any, state: Any) -> bool:
        # which attributes hold the values is the model's business: a partially loaded
        # document keeps its idx as loaded rather than lose slots it may not show
        return False


def changed_values(before: Any, after: Any) -> dict[str, Any]:
    """What an update must send to turn the object ``before`` into ``after`` (it merges
    objects: a key ``after`` lacks is nulled)."""
    if not isinstance(after, Mapping):
        return {}
    base = before if isinstance(before, dict) else {}
    out = {k: v for k, v in after.items() if k not in base or base[k] != v}
    out.update((k, None) for k in base if k not in after and base[k] is not None)
    return out


DICT_VALUES = DictValues()
VIRTUAL_VALUES = VirtualValues()


def access_for(cls: type) -> CustomValues:
    """How the documents of ``cls`` (a model with custom fields) hold their values.
    Raises IndexConfigurationError naming them for a ``HasVirtualCustomFields`` model that
    does not implement its accessors, or that also declares ``em.HasCustomFields``."""
    if not issubclass(cls, HasVirtualCustomFields):
        return DICT_VALUES
    if issubclass(cls, HasCustomFields):
        raise IndexConfigurationError(
            f"{cls.__name__}: em.HasCustomFields and em.HasVirtualCustomFields are "
            "exclusive (a custom_fields dict, or the model's own accessors)"
        )
    missing = [
        name
        for name in VIRTUAL_METHODS
        if getattr(cls, name, None) is getattr(HasVirtualCustomFields, name)
    ]
    if missing:
        raise IndexConfigurationError(
            f"{cls.__name__} declares em.HasVirtualCustomFields but does not implement "
            f"{', '.join(m + '()' for m in missing)}"
        )
    return VIRTUAL_VALUES


def access_of(info: Any) -> CustomValues | None:
    """The custom-value access of ``info``'s model (``None``: it has no custom fields)."""
    feature = info.points.feature("custom_fields")
    return None if feature is None else feature.access  # type: ignore[no-any-return]


def definitions(ctx: Context, model: type) -> CustomFieldRepository:
    """The repository of ``model``'s custom-field definitions that ``ctx`` keeps (one
    per context and model, made the first time: the custom-field feature's state,
    ``ctx.extension``). Registers ``model`` on first use; ``TypeError`` for a model
    without custom fields. Sends nothing."""
    feature = ctx.spec(model).info.points.feature("custom_fields")
    if feature is None:
        raise TypeError(
            f"{model.__name__} has no custom fields "
            "(em.HasCustomFields or em.HasVirtualCustomFields)"
        )
    return feature.definitions(ctx)  # type: ignore[attr-defined,no-any-return]


def require_custom_fields(info: Any) -> CustomValues:
    """The custom-value access of ``info``'s model; QueryValidationError (``field="tenant"``)
    for ``tenant=`` on a model without custom fields."""
    access = access_of(info)
    if access is None:
        raise QueryValidationError(
            f"tenant= is for models with custom fields; {info.name} has none "
            "(em.HasCustomFields or em.HasVirtualCustomFields)",
            field="tenant",
        )
    return access


def custom_access(doc: Any) -> CustomValues:
    """How ``doc``'s model holds custom values (its :class:`CustomValues`)."""
    access = access_of(type(doc).__esmapper__)
    if access is None:
        raise TypeError(f"{type(doc).__name__} has no custom fields")
    return access
