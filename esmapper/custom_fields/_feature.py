"""Custom fields as a feature of the core (:mod:`esmapper._features`): the one object
through which the model layer, the write pipeline, the patches and the search reach
custom fields. The core never imports this package; the feature is registered when
``esmapper`` is imported.

Each section below is one seam (model, writes, patches, search); the functions it
delegates to live in this package's modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from esmapper._features import Feature, WriteCall, register
from esmapper.custom_fields import _tenancy, indexing
from esmapper.custom_fields._access import CustomValues, access_for
from esmapper.custom_fields.definition import CustomFieldDefinition
from esmapper.custom_fields.types import CustomFieldType, check_options, dynamic_templates
from esmapper.errors import IndexConfigurationError
from esmapper.options import refresh_param

if TYPE_CHECKING:
    from esmapper._pending import PendingWrite
    from esmapper.custom_fields.indexing import DefinitionSaves
    from esmapper.model.info import ModelInfo

__all__ = ["CustomFieldDefinitions", "CustomFields"]


@register
class CustomFields(Feature):
    """Tenant custom fields: ``idx`` slots, their mappings, the tenant rule and clause."""

    name = "custom_fields"
    index_options = ("tenant_field", "custom_field_types", "auto_create_custom_fields")
    call_options: ClassVar[Mapping[str, str]] = {
        "tenant": "custom fields (em.HasCustomFields or em.HasVirtualCustomFields)"
    }
    __slots__ = ("access", "types")

    def __init__(
        self, info: ModelInfo, access: CustomValues, types: tuple[CustomFieldType, ...]
    ) -> None:
        super().__init__(info)
        #: how the model's documents hold their values and name their tenant
        self.access = access
        #: the model's custom-field types (``Index.custom_field_types``, checked)
        self.types = types

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFields | None:
        """The feature of a model declaring ``em.HasCustomFields`` or
        ``em.HasVirtualCustomFields``, its ``class Index:`` options checked (when the class
        is defined). IndexConfigurationError for custom-field options on another model, a
        virtual model without its accessors or with ``tenant_field``, and what
        :func:`~esmapper.custom_fields.types.check_options` refuses."""
        index = info.index
        if not info.custom_fields:
            if index is not None and (index.tenant_field or index.custom_field_types is not None):
                raise IndexConfigurationError(
                    f"{info.name}.Index: tenant_field/custom_field_types need "
                    "em.HasCustomFields or em.HasVirtualCustomFields"
                )
            return None
        assert index is not None  # a document model
        access = access_for(info.cls)
        if access.dict_attribute is None and index.tenant_field:
            raise IndexConfigurationError(
                f"{info.name}.Index.tenant_field is for em.HasCustomFields; a "
                "HasVirtualCustomFields model names its tenant with get_tenant_key()"
            )
        return cls(info, access, check_options(info.name, index, set(info.field_by_name)))

    # -- model (points: mapping) --------------------------------------------------------

    def mapping(self, body: dict[str, Any]) -> None:
        """One dynamic template per type maps the ``idx`` slots; ``idx`` itself is a
        dynamic object whose ``tenant`` (the key of models that override ``tenant_key()``)
        is a keyword."""
        if "idx" in body["properties"]:
            body["properties"] = {
                **body["properties"],
                "idx": {
                    "type": "object",
                    "dynamic": True,
                    "properties": {"tenant": {"type": "keyword"}},
                },
            }
        body["dynamic_templates"] = dynamic_templates(self.types)

    # -- writes of whole documents (points: prepare, check, finish) ---------------------

    def prepare(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> Any:
        """``idx`` recomputed from ``custom_fields`` (:func:`indexing.before_write`); the
        definitions to save and mappings to recheck go to :meth:`finish`."""
        return indexing.before_write(call.ctx, pendings)

    def check(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        """The tenant rule of a call scoped to a tenant (:func:`_tenancy.check_writes`)."""
        _tenancy.check_writes(call.ctx, pendings, call.options)

    def finish(
        self, call: WriteCall, state: DefinitionSaves, confirmed: Sequence[PendingWrite]
    ) -> None:
        """Save the definitions the types modified for the documents written, and bring
        their ``idx`` up to date if a definition changed meanwhile (logged, never raised)."""
        written = {id(p.doc) for p in confirmed}
        state.save(written, refresh=refresh_param(call.options.consistency))

    # -- patches (prepare/check of writes whose kind is "patch") ------------------------

    # -- search (point: search) ----------------------------------------------------------


# -- writes: the definitions model ------------------------------------------------------


@register
class CustomFieldDefinitions(Feature):
    """``CustomFieldDefinition`` documents are written by their repository only."""

    name = "custom_field_definitions"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFieldDefinitions | None:
        return cls(info) if info.cls is CustomFieldDefinition else None

    def prepare(self, call: WriteCall, pendings: Sequence[PendingWrite]) -> None:
        """Refuse a write that bypasses ``mapper.custom_fields(Model)``
        (:func:`indexing.check_definition_writes`)."""
        indexing.check_definition_writes(pendings)
