"""The ``idx`` rebuild a reindex owes its custom-field model, recorded before the swap.

A reindex whose scripts ran over a custom-field model (``HasCustomFields``) leaves ``idx``
as the old index held it: the scripts may have changed ``custom_fields`` or the tenant
field, so ``mapper.custom_fields(Model).rebuild_idx()`` must follow the swap
(:mod:`esmapper.indexes.reindex`, step 8). A process killed between the swap and the end
of that rebuild would leave ``idx`` stale for good (the alias is current: a rerun has
nothing to copy). So the debt is written down first, in the new index's mapping ``_meta``
right after it is prepared, long before the swap (:func:`owe_idx_rebuild`)::

    "_meta": {"esmapper_idx_rebuild": {"from": "<alias>-vK"}}

and paid by :func:`settle_idx_rebuild`: every ``reindex`` of the model (the run that wrote
it, after its lock is released, and any later one, ``up_to_date`` included) and every
``migrate`` reads the marks of the indexes behind the model's alias, rebuilds ``idx``
when one is there, and only then removes them. A failed run's new index is deleted (or
kept outside the alias): its mark is never read.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from elasticsearch import Elasticsearch, NotFoundError

from esmapper.indexes._meta import put_meta
from esmapper.locks import LockProvider

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.indexes.spec import IndexSpec

__all__ = ["MARKER", "owe_idx_rebuild", "owed_idx_rebuilds", "owed_rebuilds", "settle_idx_rebuild"]

log = logging.getLogger("esmapper.indexes")

MARKER: Final = "esmapper_idx_rebuild"


def owe_idx_rebuild(client: Elasticsearch, index: str, old: str) -> None:
    """Record in ``index``'s ``_meta`` that ``idx`` must be rebuilt once it serves (its
    documents are copied from ``old`` by scripts). Sends ``GET`` and ``PUT
    /<index>/_mapping`` (:func:`~esmapper.indexes._meta.put_meta`: a lost answer is read
    back)."""
    put_meta(client, index, MARKER, {"from": old})


def owed_idx_rebuilds(client: Elasticsearch, alias: str) -> list[str]:
    """The indexes behind ``alias`` (a model's read alias) that carry the mark, sorted.
    Sends ``GET /<alias>/_mapping`` (a missing alias: none)."""
    try:
        body: dict[str, Any] = dict(client.indices.get_mapping(index=alias).body)
    except NotFoundError:
        return []
    return sorted(
        name
        for name, entry in body.items()
        if ((entry.get("mappings") or {}).get("_meta") or {}).get(MARKER)
    )


def owed_rebuilds(ctx: Context, spec: IndexSpec) -> list[str]:
    """:func:`owed_idx_rebuilds` of ``spec``'s read alias; ``[]`` without a request for a
    ``plain`` model or one whose features have no ``rebuild`` point (nothing derived)."""
    if not spec.info.points.rebuild or spec.kind == "plain":
        return []
    return owed_idx_rebuilds(ctx.client, spec.read_target)


def settle_idx_rebuild(ctx: Context, model: type, *, held: bool = False) -> int | None:
    """Pay the ``idx`` rebuild a reindex of ``model`` owes, if any: ``None`` when no index
    behind its alias carries the mark (one ``GET /<alias>/_mapping``; nothing for models
    without custom fields or ``plain`` ones), else the ``rebuild`` point of the model's
    features (:mod:`esmapper._features`; custom fields: ``mapper.custom_fields(model)
    .rebuild_idx()``, conditional partial updates of the documents whose ``idx`` is
    stale) and then the marks removed (``PUT _mapping`` per index); returns the number
    of documents updated. A failure raises, the marks stay
    (the next run rebuilds again: the rebuild writes only what is stale).

    The marks are removed under the lock ``reindex:<alias>`` (``held``: the caller holds
    it; else one attempt to take it, :meth:`~esmapper.locks.LockProvider.try_acquire`):
    ``_meta`` is written whole (read, merged, put back), and a reindex holding that lock
    writes its own markers there (the write block's). A lock held elsewhere leaves the
    marks for the next run (logged): nothing waits, and nothing is lost."""
    spec = ctx.spec(model)
    owed = owed_rebuilds(ctx, spec)
    if not owed:
        return None
    log.info("%s: rebuilding idx, owed by the reindex into %s", spec.alias, ", ".join(owed))
    updated: int = sum(hook(ctx) for hook in spec.info.points.rebuild)
    if held:
        _clear_marks(ctx.client, spec.read_target, owed)
        return updated
    locks = LockProvider(ctx.client, index_prefix=ctx.index_prefix, clock=ctx.clock)
    lock = locks.try_acquire(f"reindex:{spec.alias}")
    if lock is None:
        log.warning(
            "%s: idx rebuilt, its marks left for the next run (a reindex holds the lock)",
            spec.alias,
        )
        return updated
    with lock:
        _clear_marks(ctx.client, spec.read_target, owed)
    return updated


def _clear_marks(client: Elasticsearch, alias: str, owed: list[str]) -> None:
    """Take the mark off the indexes of ``owed`` that still carry it (read again: under
    the lock)."""
    for index in set(owed) & set(owed_idx_rebuilds(client, alias)):
        put_meta(client, index, MARKER, None)
