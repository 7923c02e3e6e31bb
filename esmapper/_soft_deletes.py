"""Soft deletes as a feature of the core (:mod:`esmapper._features`): the
recently-deleted list kept for confirmed soft deletes and restores, and the clause that
hides (or shows only) deleted documents in searches. Registered when ``esmapper`` is
imported; the core never names it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, WriteCall, register
from esmapper._patch_actions import stored_deleted
from esmapper.signals import ChangeType

if TYPE_CHECKING:
    from esmapper._pending import PendingWrite
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

    # -- writes (points: settle, change_type) --------------------------------------------

    def settle(self, call: WriteCall, confirmed: Sequence[PendingWrite]) -> None:
        """Confirmed soft deletes (a save setting ``is_deleted``) and restores (a removal,
        or a save clearing a stored ``is_deleted``) go to the shared recently-deleted list
        (``deleted_ttl`` seconds) that unrefreshed searches hide. Nothing without a cache.
        Patches: :meth:`settle_patches`."""
        documents = call.ctx.documents
        if documents is None:  # soft deletes and restores are shared through it
            return
        if confirmed and confirmed[0].kind == "patch":  # a batch of patches is never mixed
            self.settle_patches(call, confirmed)
            return
        gone: list[str] = []
        back: list[str] = []
        for pending in confirmed:
            doc, kind = pending.doc, pending.kind
            if doc is None or (kind == "add" and pending.original_source is None):
                continue  # a new document is neither
            if kind == "remove":
                back.append(doc.id)
            elif doc.is_deleted:
                if kind == "save":
                    gone.append(doc.id)
            else:
                original = pending.original_source
                if original is not None and original.get("is_deleted"):
                    back.append(doc.id)
        alias = call.ctx.spec(self.info.cls).alias
        if gone:
            documents.remember_deleted(alias, gone)
        if back:
            documents.forget_deleted(alias, back)

    def change_type(
        self, pending: PendingWrite, original: Mapping[str, Any] | None, written: Any
    ) -> ChangeType | None:
        """A save **or a patch** turning ``is_deleted`` from false (as stored before) to
        true (as written) is a removal; anything else its kind's change (``None``)."""
        if (
            pending.kind in ("save", "patch")
            and original is not None
            and written is not None
            and written.get("is_deleted")
            and not original.get("is_deleted")
        ):
            return ChangeType.REMOVED
        return None

    # -- patches (point: settle, for writes of kind "patch") ------------------------------

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
