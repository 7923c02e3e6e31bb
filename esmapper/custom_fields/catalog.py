"""One tenant's view of a model's fields: logical custom-field names resolve to slots.

:class:`TenantFields` is the compiled form of a tenant's active definitions (what the write
path processes, in order, and what queries resolve). :class:`TenantCatalog` is the model's
:class:`~esmapper.model.catalog.FieldCatalog` plus the tenant's slots: a name the model does
not declare is looked up, case-insensitively, among the tenant's custom fields (``level`` ->
``idx.int-1``, ``department.keyword`` -> ``idx.string-1.keyword``), so filters, sorts and
aggregations compile exactly as for a declared field of the slot's type. A model field wins
over a custom field of the same name.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from esmapper.custom_fields.types import (
    CustomFieldType,
    model_types,
    slot_mapping,
    value_checker,
)
from esmapper.model.catalog import FieldCatalog, FieldInfo

if TYPE_CHECKING:
    from esmapper.custom_fields.definition import CustomFieldDefinition
    from esmapper.model.info import ModelInfo

__all__ = [
    "IDX_TENANT",
    "FieldSlot",
    "TenantCatalog",
    "TenantFields",
    "model_names",
    "tenant_path",
]

#: Where the pipeline indexes the tenant key of a model that has no tenant field to filter
#: on (``tenant_key()`` overridden, e.g. a composite key).
IDX_TENANT = "idx.tenant"


def tenant_path(info: ModelInfo) -> str:
    """The field a ``tenant=`` search filters on: ``Index.tenant_field`` (its exact path)
    when ``tenant_key()`` is not overridden (see
    :meth:`~esmapper.custom_fields._access.CustomValues.uses_tenant_field`), else
    :data:`IDX_TENANT`, which the write
    pipeline fills (``idx["tenant"]``) for such models only."""
    field = info.index.tenant_field if info.index is not None else None
    feature: Any = info.points.feature("custom_fields")  # (its access: _access.access_of)
    if field and feature is not None and feature.access.uses_tenant_field(info):
        found = info.catalog.get(field)
        if found is not None and found.exact_path is not None:
            return found.exact_path
    return IDX_TENANT


def model_names(info: ModelInfo) -> dict[str, str]:
    """``{lower-cased: name}`` of every name the model itself resolves (fields, subfields,
    aliases). The one rule for names: a custom field may not be called like any of them,
    whatever the case (``add_field`` refuses it; a stored definition that does is ignored),
    and under ``tenant=`` such a name resolves to the model's field in any case."""
    names = {name.lower(): name for name in info.catalog.declared_names()}
    aliases: Mapping[str, str] = info.index.aliases if info.index is not None else {}
    for alias in aliases:
        names.setdefault(alias.lower(), alias)
    return names


log = logging.getLogger("esmapper.custom_fields")
_reported: set[tuple[str, str]] = set()


@attrs.frozen(slots=True)
class FieldSlot:
    """An active definition as the write path and the queries use it."""

    definition: CustomFieldDefinition
    lower: str
    key: str  # the slot's key in ``idx``: "int-1"
    field_type: CustomFieldType
    mapping: dict[str, Any]
    #: what the slot indexes of a value (see ``types.value_checker``)
    check: Callable[[Any], Any]

    @property
    def path(self) -> str:
        return f"idx.{self.key}"


class TenantFields:
    """The active definitions of one (entity type, tenant): by lower-cased name, and the
    processing order (``on_value`` ones by ``process_order``, then ``always`` ones).

    Treat it (and the definitions it holds) as read-only: it is shared by every write and
    query of the tenant until the definitions change.
    """

    __slots__ = (
        "_catalog",
        "_lock",
        "always",
        "by_name",
        "former",
        "info",
        "model_names",
        "on_value",
        "stamp",
        "stores_tenant",
        "tenant",
    )

    def __init__(
        self,
        info: ModelInfo,
        tenant: str,
        definitions: Iterable[CustomFieldDefinition],
        stamp: Any = None,
    ) -> None:
        self.info = info
        self.tenant = tenant
        #: which stored definitions (ids and versions) this was compiled from: a write
        #: compares it after sending to see whether the definitions changed meanwhile
        self.stamp = stamp
        #: whether idx holds the tenant key (see :func:`tenant_path`)
        self.stores_tenant = tenant_path(info) == IDX_TENANT
        types = {t.type: t for t in model_types(info)}
        self.model_names = model_names(info)
        by_name: dict[str, FieldSlot] = {}
        for definition in sorted(definitions, key=lambda d: (d.index_type, d.index_slot)):
            field_type = types.get(definition.index_type)
            if field_type is None:
                why = f"has type {definition.index_type!r}, which {info.name}.Index."
                why += "custom_field_types does not declare"
                _report(info.name, definition, why, key=definition.index_type)
                continue
            lower = definition.name.lower()
            if lower in self.model_names:  # a model field wins (defined before the rule)
                _report(info.name, definition, "is named like a model field")
                continue
            if lower in by_name:  # two active definitions of one name: the older slot wins
                continue
            mapping = slot_mapping(field_type)
            by_name[lower] = FieldSlot(
                definition, lower, definition.slot_name, field_type, mapping, value_checker(mapping)
            )
        self.by_name = by_name
        #: lower-cased former names (of renamed fields) no active field holds -> the slot
        self.former: dict[str, FieldSlot] = {}
        for slot in by_name.values():
            for name in slot.definition.former_names:
                if name.lower() not in by_name and name.lower() not in self.model_names:
                    self.former.setdefault(name.lower(), slot)

        def order(item: FieldSlot) -> tuple[int, str]:
            return (item.definition.process_order, item.key)

        slots = list(by_name.values())
        self.on_value = tuple(
            sorted((s for s in slots if s.definition.process_mode != "always"), key=order)
        )
        self.always = tuple(
            sorted((s for s in slots if s.definition.process_mode == "always"), key=order)
        )
        self._catalog: TenantCatalog | None = None
        self._lock = threading.Lock()

    def get(self, name: str) -> FieldSlot | None:
        """The slot of logical ``name`` (case-insensitive), or ``None``."""
        return self.by_name.get(name.lower())

    def known(self, name: str) -> bool:
        """Whether ``name`` needs no new definition: a field's current or former name (a
        value stored under it is indexed), or a model field's (never a custom field)."""
        lower = name.lower()
        return lower in self.by_name or lower in self.former or lower in self.model_names

    def catalog(self) -> TenantCatalog:
        """The model's catalog with this tenant's custom fields (built once)."""
        with self._lock:
            if self._catalog is None:
                self._catalog = TenantCatalog(self.info, self.by_name.values())
            return self._catalog

    def __len__(self) -> int:
        return len(self.by_name)


def _report(model: str, definition: CustomFieldDefinition, why: str, key: str = "") -> None:
    seen = (model, key or definition.name.lower())
    if seen not in _reported and len(_reported) < 1024:
        _reported.add(seen)
        log.warning(
            "custom field %r of %s (tenant %r) %s: its values are not indexed",
            definition.name,
            model,
            definition.tenant_key,
            why,
        )


class TenantCatalog(FieldCatalog):
    """A model's field catalog plus one tenant's custom fields (see the module docstring)."""

    __slots__ = ("_custom", "_logical", "_model")

    def __init__(self, info: ModelInfo, slots: Iterable[FieldSlot]) -> None:
        mapping = copy.deepcopy(info.mapping)
        idx = mapping["properties"].setdefault("idx", {"type": "object"})
        inner = idx.setdefault("properties", {})
        custom: dict[str, str] = {}
        logical: dict[str, str] = {}
        for slot in slots:
            inner[slot.key] = slot.mapping
            custom[slot.lower] = slot.path
            logical[slot.path] = slot.definition.name
        aliases: Mapping[str, str] = dict(info.index.aliases) if info.index else {}
        super().__init__(mapping, aliases=aliases)
        self._custom = custom
        self._logical = logical
        self._model = model_names(info)

    def declared(self, name: str) -> FieldInfo:
        try:
            return super().declared(name)
        except KeyError:
            path = self.model_name(name) or self.custom_path(name)
            if path is None:
                raise
            return super().declared(path)

    def server_allows(self, path: str) -> bool:
        """The slots under ``idx`` are the tenant's custom fields only: another tenant's
        slot the server maps is never resolved."""
        return path.split(".", 1)[0] != "idx"

    def model_name(self, name: str) -> str | None:
        """The model's own spelling of ``name`` when it differs only by case (``AGE`` ->
        ``age``): names are case-insensitive under ``tenant=``, and a model field wins over
        a custom one of the same name (see :func:`model_names`)."""
        return self._model.get(name.lower())

    def custom_path(self, name: str) -> str | None:
        """The slot path of custom field ``name`` (case-insensitive; ``department.keyword``
        -> ``idx.string-1.keyword``), or ``None``."""
        path = self._custom.get(name.lower())
        if path is not None:
            return path
        head, dot, rest = name.partition(".")
        path = self._custom.get(head.lower()) if dot else None
        return None if path is None else f"{path}.{rest}"

    def logical_name(self, path: str) -> str | None:
        """The custom field a slot path holds, by its definition's name
        (``idx.string-1.keyword`` -> ``Department.keyword``), or ``None``."""
        name = self._logical.get(path)
        if name is not None:
            return name
        head, dot, rest = path.rpartition(".")
        name = self._logical.get(head) if dot else None
        return None if name is None else f"{name}.{rest}"

    def declared_names(self) -> list[str]:
        return sorted({*super().declared_names(), *self._custom})
