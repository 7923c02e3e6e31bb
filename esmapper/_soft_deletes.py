"""Soft deletes as a feature of the core (:mod:`esmapper._features`): the
recently-deleted list kept for confirmed soft deletes and restores, and the clause that
hides (or shows only) deleted documents in searches. Registered when ``esmapper`` is
imported; the core never names it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from esmapper._features import Feature, register

if TYPE_CHECKING:
    from esmapper.model.info import ModelInfo

__all__ = ["SoftDeleteFeature"]


@register
class SoftDeleteFeature(Feature):
    """``SoftDeletes`` models: ``is_deleted`` bookkeeping and its search clause."""

    name = "soft_deletes"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> SoftDeleteFeature | None:
        return cls(info) if info.soft_deletes else None

    # -- writes (point: settle) ----------------------------------------------------------

    # -- search (point: search) ----------------------------------------------------------
