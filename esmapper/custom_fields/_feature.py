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
from esmapper.custom_fields.definition import CustomFieldDefinition
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
    call_options: ClassVar[Mapping[str, str]] = {
        "tenant": "custom fields (em.HasCustomFields or em.HasVirtualCustomFields)"
    }
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFields | None:
        return cls(info) if info.custom_fields else None

    # -- model (points: mapping) --------------------------------------------------------

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
