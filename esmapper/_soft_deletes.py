"""Soft deletes as a feature of the core (:mod:`esmapper._features`): the
recently-deleted list kept for confirmed soft deletes and restores, and the clause that
hides (or shows only) deleted documents in searches. Registered when ``esmapper`` is
imported; the core never names it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from esmapper._features import Feature, WriteCall, register
from esmapper._patch_actions import stored_deleted
from esmapper._pending import PendingWrite

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

    # -- patches (point: settle, for writes of kind "patch") ------------------------------

    def settle(self, call: WriteCall, confirmed: Sequence[PendingWrite]) -> None:
        if confirmed and confirmed[0].kind == "patch":
            self.settle_patches(call, confirmed)

    def settle_patches(self, call: WriteCall, confirmed: Sequence[PendingWrite]) -> None:
        """A patch that sets ``is_deleted`` is a soft delete or a restore, like a save
        that does: confirmed ones update the shared recently-deleted list (noops too), or
        a restored document stays hidden from searches (by-query writes included) for
        ``deleted_ttl``. A script says nothing of it."""
        documents = call.ctx.documents
        if documents is None:
            return
        gone: list[str] = []
        back: list[str] = []
        for pending in confirmed:
            flag = stored_deleted(pending)
            if flag is not None and pending.id is not None:
                (gone if flag else back).append(pending.id)
        alias = call.ctx.spec(self.info.cls).alias
        if gone:
            documents.remember_deleted(alias, gone)
        if back:
            documents.forget_deleted(alias, back)

    # -- search (point: search) ----------------------------------------------------------
