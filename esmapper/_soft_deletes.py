"""Soft deletes as a feature of the core (:mod:`esmapper._features`): the
recently-deleted list kept for confirmed soft deletes and restores, and the clause that
hides (or shows only) deleted documents in searches. Registered when ``esmapper`` is
imported; the core never names it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from esmapper._features import Feature, Visibility, register
from esmapper.errors import QueryValidationError

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["SoftDeleteFeature", "recently_deleted"]


@register
class SoftDeleteFeature(Feature):
    """``SoftDeletes`` models: ``is_deleted`` bookkeeping and its search clause."""

    name = "soft_deletes"
    __slots__ = ()

    @classmethod
    def attach(cls, info: ModelInfo) -> SoftDeleteFeature | None:
        return cls(info) if info.soft_deletes else None

    # -- writes (point: settle) ----------------------------------------------------------

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
    documents = ctx.documents
    if documents is None or not info.soft_deletes:
        return []
    return documents.recently_deleted(ctx.spec(info.cls).alias)
