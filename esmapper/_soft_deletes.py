"""Soft deletes as a feature of the core (:mod:`esmapper._features`): the
recently-deleted list kept for confirmed soft deletes and restores, and the clause that
hides (or shows only) deleted documents in searches. Registered when ``esmapper`` is
imported; the core never names it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, Visibility, WriteCall, register
from esmapper._patch_actions import patch_written
from esmapper.errors import QueryValidationError
from esmapper.patches import PartialPatch
from esmapper.signals import ChangeType

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._pending import PendingWrite
    from esmapper.model.info import ModelInfo

__all__ = ["SoftDeleteFeature", "recently_deleted"]


@register
class SoftDeleteFeature(Feature):
    """``SoftDeletes`` models: ``is_deleted`` bookkeeping and its search clause."""

    name = "soft_deletes"
    call_options = ("soft_deletes",)
    inert_values = frozenset({"active", "all"})
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> SoftDeleteFeature | None:
        return cls(info) if info.soft_deletes else None

    @classmethod
    def refuse_option(cls, info: ModelInfo, option: str) -> None:
        """``soft_deletes="deleted"`` on a model without ``SoftDeletes``: nothing of it is
        ever soft-deleted, and searching it without the clause would return every document
        (QueryValidationError). ``"active"`` and ``"all"`` are taken: they mean every
        document there."""
        raise QueryValidationError(
            f"soft_deletes='deleted' asks for the soft-deleted documents of {info.name}, "
            f"which has no soft deletes: derive {info.name} from em.SoftDeletes (class "
            f"{info.name}(em.Document, em.SoftDeletes)) to keep deleted documents, or "
            "leave soft_deletes= out",
            field=option,
        )

    # -- writes (points: settle, change_type, reads_stored) -------------------------------

    def reads_stored(self, patch: Any) -> bool:
        """A ``PartialPatch`` setting ``is_deleted`` is a removal only if the stored
        document was not deleted: it is judged per document, from what was read."""
        return isinstance(patch, PartialPatch) and bool(patch.doc.get("is_deleted"))

    def settle(self, call: WriteCall, confirmed: Sequence[PendingWrite]) -> None:
        """Confirmed soft deletes (a save or patch setting ``is_deleted``) and restores (a
        removal, a save clearing a stored ``is_deleted``, a patch clearing it, noops too)
        go to the shared recently-deleted list (``deleted_ttl`` seconds) that unrefreshed
        searches hide (by-query writes included). A script says nothing of it. Nothing
        without a cache; every cache a write of the model invalidates
        (``Services.written_caches``: the mapper's too when the model has a client of its
        own or none, for the mappers that read it there)."""
        if not confirmed:
            return
        # (one model: its writes) soft deletes and restores are shared through them
        caches = call.ctx.written_caches(confirmed[0].info)
        if not caches:
            return
        gone: list[str] = []
        back: list[str] = []
        for pending in confirmed:
            doc, kind = pending.doc, pending.kind
            if kind == "patch":
                flag = _deleted_flag(pending)
                if flag is not None and pending.id is not None:
                    (gone if flag else back).append(pending.id)
            elif kind == "remove":
                back.append(doc.id)
            elif doc.is_deleted:
                if kind == "save":
                    gone.append(doc.id)
            elif pending.stored_value("is_deleted"):  # (bytes: that key only is read)
                back.append(doc.id)  # a new document (add, nothing stored) is neither
        alias = call.ctx.spec(self.info.cls).alias
        for documents in caches:
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

    # -- search (points: compile_search, search, visible) --------------------------------

    def compile_search(self, ctx: Context, request: Any) -> None:
        """Refuse a filter naming ``is_deleted`` while the mode hides deleted documents."""
        if "is_deleted" in request.filter_fields and request.options.soft_deletes == "active":
            raise QueryValidationError(
                "the filter names is_deleted while soft_deletes='active' hides deleted "
                "documents; pass soft_deletes='all' or 'deleted' instead",
                field="is_deleted",
            )

    def search(self, ctx: Context, options: Any) -> tuple[list[Any], list[str]]:
        """The mode's clause, and the ids soft-deleted moments ago: a hint for searches
        that do not refresh; after a refresh (immediate/wait) the clause is exact and the
        hint may be stale (a restore whose outcome was unknown, or made by a process not
        sharing the cache)."""
        mode = options.soft_deletes
        if mode == "all":
            return [], []
        hidden = (
            recently_deleted(ctx, self.info)
            if mode == "active" and options.consistency == "eventual"
            else []
        )
        return [{"term": {"is_deleted": mode == "deleted"}}], hidden

    def visible(self, options: Any) -> Visibility | None:
        """By id: a deleted document only with ``soft_deletes="deleted"``, any with
        ``"all"``, an active one otherwise (it reads ``is_deleted`` only)."""
        mode = options.soft_deletes
        if mode == "all":
            return None
        return _DELETED if mode == "deleted" else _ACTIVE


_ACTIVE = Visibility(lambda doc: not doc.is_deleted, ("is_deleted",))
_DELETED = Visibility(lambda doc: bool(doc.is_deleted), ("is_deleted",))


def recently_deleted(ctx: Context, info: ModelInfo) -> list[str]:
    """Ids of ``info``'s model soft-deleted in the last 30 seconds by any mapper sharing
    the cache client (none without a document cache)."""
    documents = ctx.documents_of(info)
    if documents is None or not info.soft_deletes:
        return []
    return documents.recently_deleted(ctx.spec(info.cls).alias)


def _deleted_flag(pending: PendingWrite) -> bool | None:
    """The ``is_deleted`` a patch stores (``None``: it does not say, e.g. a script or a
    partial update of other fields)."""
    written = patch_written(pending)
    if written is None:
        return None
    form = pending.form
    if form is not None and form.update and "is_deleted" not in written:
        return None
    return bool(written.get("is_deleted"))
