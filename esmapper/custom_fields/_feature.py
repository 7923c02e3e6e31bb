"""Custom fields as a feature of the core (:mod:`esmapper._features`): the one object
through which the model layer, the write pipeline, the patches and the search reach
custom fields. The core never imports this package; the feature is registered when
``esmapper`` is imported.

Each section below is one seam (model, writes, patches, search); the functions it
delegates to live in this package's modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from esmapper._features import Feature, register

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["CustomFields"]


@register
class CustomFields(Feature):
    """Tenant custom fields: ``idx`` slots, their mappings, the tenant rule and clause."""

    name = "custom_fields"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> CustomFields | None:
        return cls(info) if info.custom_fields else None

    # -- model (points: mapping) --------------------------------------------------------

    # -- writes of whole documents (points: prepare, check, finish) ---------------------

    # -- patches (prepare/check of writes whose kind is "patch") ------------------------

    # -- search (point: search) ----------------------------------------------------------
