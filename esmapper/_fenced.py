"""Writes refused by a gone fence alias: superseded versions.

A write conditioned on a version (``if_seq_no``/``if_primary_term``) is sent to the fence
alias of the physical index the version was read from
(:meth:`IndexSpec.conditioned_target <esmapper.indexes.spec.IndexSpec.conditioned_target>`);
a reindex's swap removes that fence in the same atomic request that moves the model's
alias. From then on such a write is answered 404 ``index_not_found_exception`` and not
applied. :func:`superseded` (called by :func:`esmapper._outcomes.send` on every answer,
resends included) is the one owner of what that means: a version conflict, never "the
alias vanished, make it again".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError

from esmapper import _json
from esmapper._pending import PendingWrite
from esmapper.bulk import BulkAction, BulkOutcome
from esmapper.indexes._ensure import restore_fence
from esmapper.indexes._fence import FENCE_SUFFIX, is_fence
from esmapper.model.state import state_of

if TYPE_CHECKING:
    from esmapper._context import Context

__all__ = ["fence_gone", "superseded"]

log = logging.getLogger("esmapper.writes")

#: ``send(actions) -> outcomes``: how :func:`superseded` sends its re-checked writes
Resend = Callable[[list[BulkAction]], list[BulkOutcome]]


def fence_gone(outcome: BulkOutcome) -> bool:
    """A write sent to a fence alias (conditioned on a version read from its index) and
    refused because the fence does not exist: 404 ``index_not_found_exception`` (under
    ``require_alias`` for an index/update; a delete never creates an index). Not applied."""
    return (
        outcome.status == 404
        and outcome.error_type == "index_not_found_exception"
        and is_fence(outcome.action.index)
    )


def superseded(
    ctx: Context, outcomes: list[BulkOutcome], resend: Resend | None
) -> list[BulkOutcome]:
    """``outcomes`` with every write refused by a gone fence (:func:`fence_gone`) settled.

    Such a write becomes a version conflict (409 ``version_conflict_engine_exception``,
    ``index``: the physical index its version was read from): a reindex's swap removed the
    fence, the version belongs to an index that no longer serves the model, and the caller
    must read the document again (the scan paths of ``patch_all``/``patch(ids)``/
    ``remove_all`` do, in their conflict rounds). It is never made to exist again.

    Re-checked against the content first (``resend`` given): a save or remove of a
    document loaded whole (``DocState.original``) whose stored copy, read through the
    model's alias (one real-time ``_mget``), still has exactly the content it was loaded
    with is sent again (``resend``), conditioned on the version just read and through the
    fence of the index it was read from: nobody changed the document since it was loaded,
    only the index it lives in. A change made between that read and the resend answers
    409, a real conflict.

    An index that still serves the model but carries no fence (made before fences
    existed, by a process that has not ensured it) gets its fence here
    (:func:`esmapper.indexes._ensure.restore_fence`, once per index and call); the write
    is a conflict (or re-checked) all the same.
    """
    positions = [i for i, o in enumerate(outcomes) if fence_gone(o)]
    if not positions:
        return outcomes
    result = list(outcomes)
    serving: dict[tuple[type, str], bool] = {}
    for i in positions:
        outcome = result[i]
        action = outcome.action
        physical = action.index[: -len(FENCE_SUFFIX)]
        key = (action.ref.info.cls, physical)
        if key not in serving:
            try:
                serving[key] = restore_fence(ctx.client, ctx.spec(key[0]), physical)
            except (ApiError, TransportError) as exc:
                log.warning("checking whether %s still serves failed: %s", physical, exc)
                serving[key] = False
        why = (
            f"its version was read from {physical}, whose fence alias was missing (now "
            "added); read the document again"
            if serving[key]
            else f"its version was read from {physical}, which no longer serves the model "
            "(a reindex replaced it); read the document again"
        )
        result[i] = attrs.evolve(
            outcome,
            index=physical,
            status=409,
            error_type="version_conflict_engine_exception",
            reason=f"{why} ({outcome.error_type}: {outcome.reason})",
        )
    if resend is not None:
        _recheck(ctx, result, positions, resend)
    return result


def _loaded_with(action: BulkAction) -> dict[str, Any] | None:
    """The ``_source`` a save/remove's document was loaded with, when it was loaded whole
    (``None``: a patch, a partial document, a document never read)."""
    ref = action.ref
    if not isinstance(ref, PendingWrite) or ref.kind not in ("save", "remove"):
        return None
    state = state_of(ref.doc) if ref.doc is not None else None
    if state is None or state.partial or ref.original_source is None:
        return None
    loaded: dict[str, Any] = _json.loads(_json.dumps(ref.original_source))
    return loaded


def _recheck(
    ctx: Context, result: list[BulkOutcome], positions: Sequence[int], resend: Resend
) -> None:
    """The content re-check of :func:`superseded`, in place on ``result``."""
    candidates = [(i, loaded) for i in positions if (loaded := _loaded_with(result[i].action))]
    if not candidates:
        return
    docs = []
    for i, _loaded in candidates:
        action = result[i].action
        spec = ctx.spec(action.ref.info.cls)
        entry: dict[str, Any] = {"_index": spec.write_name(result[i].index), "_id": action.id}
        if action.routing is not None:
            entry["routing"] = action.routing
        docs.append(entry)
    try:
        stored = ctx.client.mget(docs=docs).body["docs"]
    except (ApiError, TransportError) as exc:
        log.warning("re-reading %d superseded write(s) failed: %s", len(docs), exc)
        return
    again: list[tuple[int, BulkAction]] = []
    for (i, loaded), current in zip(candidates, stored, strict=True):
        if not current.get("found") or current.get("_source") != loaded:
            continue  # changed (or gone) since it was loaded: the conflict stands
        index = str(current["_index"])
        action = result[i].action
        spec = ctx.spec(action.ref.info.cls)
        again.append(
            (
                i,
                attrs.evolve(
                    action,
                    index=spec.conditioned_target(spec.write_name(index), index),
                    if_seq_no=current["_seq_no"],
                    if_primary_term=current["_primary_term"],
                ),
            )
        )
    if not again:
        return
    for (i, _action), outcome in zip(again, resend([a for _, a in again]), strict=True):
        result[i] = outcome
