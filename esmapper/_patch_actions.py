"""The pieces patch writes share, by id and by query (:mod:`esmapper._patching`): the
pending writes a patch compiles to (:class:`~esmapper._pending.PatchForm`: the Update API
body of a Partial/Script patch, the client-side result of a Json/Action patch), and what
follows their outcomes (the error a failed one raises, which ones soft-deleted, the
``documents_changed`` signal and change notifications). Nothing here sends: the writes go
through :func:`esmapper._writes.write_documents` (whose feature points add what a
feature owns: custom-field ``idx``, the tenant rule, soft-delete bookkeeping), the
by-query requests through :mod:`esmapper._by_query_send`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import jsonpatch

from esmapper import signals
from esmapper._dates import partial_dates, script_dates, stamp_document, stamp_source
from esmapper._pending import PatchForm, PendingWrite, change_type
from esmapper._settle import failure_error, publish_changes
from esmapper.bulk import BulkOutcome
from esmapper.errors import DocumentError, DocumentNotFoundError, VersionConflictError
from esmapper.ids import Id
from esmapper.model.dates import parse_datetime
from esmapper.options import Options
from esmapper.patches import ActionPatch, JsonPatch, PartialPatch, Patch, ScriptPatch
from esmapper.signals import ChangeType

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = [
    "announce",
    "changed_ids",
    "client_side_pending",
    "raise_for",
    "patch_written",
    "per_document",
    "removed_ids",
    "update_body",
    "update_pending",
]


def update_body(
    ctx: Context,
    info: ModelInfo,
    patch: PartialPatch | ScriptPatch,
    stored: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Update API body of a Partial/Script patch, with the dates of
    :mod:`esmapper._dates` (``stored``: the source a scanned write is conditioned on, which
    lets a PartialPatch correct the created date)."""
    now = parse_datetime(ctx.clock())
    if isinstance(patch, PartialPatch):
        doc = partial_dates(info, patch.doc, now, stored) if info.has_dates else dict(patch.doc)
        return {"doc": doc, "detect_noop": True}
    source, params = patch.source, dict(patch.params or {})
    if info.has_dates:
        source, params = script_dates(info, source, params, now)
    return {"script": {"source": source, "lang": "painless", "params": params}}


def update_pending(  # noqa: PLR0917 - the parts of one update
    info: ModelInfo,
    patch: PartialPatch | ScriptPatch,
    id: str,
    body: dict[str, Any],
    read_from: str | None,
    version: str | None = None,
    source: dict[str, Any] | None = None,
) -> PendingWrite:
    """The update of document ``id`` by a Partial/Script ``patch`` (``body``:
    :func:`update_body`), through the alias of ``read_from``; ``version``/``source``:
    what a scan read (the write is conditioned on that version, see
    :func:`esmapper._bodies.document_action`). Unscanned (by id), it carries the patch's
    ``retry_on_conflict``."""
    retry = patch.retry_on_conflict if version is None else None
    form = PatchForm(patch, True, body, read_from, version, retry)
    return PendingWrite("patch", None, info, id=id, original_source=source, form=form)


def client_side_pending(  # noqa: PLR0917 - what one read gave
    ctx: Context,
    info: ModelInfo,
    patch: JsonPatch | ActionPatch,
    id: str,
    index: str | None,
    source: dict[str, Any],
    version: str | None,
) -> PendingWrite | None:
    """The conditional ``index`` of a Json/Action patch applied to ``source`` (read from
    ``index`` at ``version``), or ``None`` for a no-op (an empty JsonPatch, an ActionPatch
    whose callables all returned False). Raises DocumentError for a JsonPatch that does
    not apply. The dates are set (:mod:`esmapper._dates`); the features complete the
    document at the write's ``prepare`` point (custom-field ``idx``) and judge it at
    ``check`` (the tenant rule)."""
    body: dict[str, Any] | None = None
    if isinstance(patch, JsonPatch):
        if not patch.operations:
            return None
        try:
            body = jsonpatch.JsonPatch(list(patch.operations)).apply(source)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise DocumentError(
                f"JsonPatch of {info.name} {id!r} failed: {exc}",
                ids=[id],
                index=index,
                error_type="json_patch_failed",
                reason=str(exc),
            ) from exc
        if info.has_dates:
            stamp_source(info, body, parse_datetime(ctx.clock()))
        document = info.from_source(body, id, version)
    else:
        document = info.from_source(source, id, version)
        if not patch.apply(document):
            return None
        if info.has_dates:
            stamp_document(info, document, parse_datetime(ctx.clock()))
    form = PatchForm(patch, False, body, index, version)
    return PendingWrite("patch", document, info, id=id, original_source=source, form=form)


def raise_for(outcome: BulkOutcome, info: ModelInfo) -> None:
    kwargs: dict[str, Any] = {
        "index": outcome.index,
        "error_type": outcome.error_type,
        "reason": outcome.reason,
    }
    if outcome.status == 404:
        raise DocumentNotFoundError(str(outcome.id), **kwargs)
    if outcome.status == 409:
        raise VersionConflictError(
            f"version conflict patching {info.name} {outcome.id!r}: {outcome.reason}",
            ids=[outcome.id],
            **kwargs,
        )
    raise failure_error([outcome], [], 1)


def announce(  # noqa: PLR0917
    ctx: Context,
    info: ModelInfo,
    ids: list[str | None],
    options: Options,
    documents: list[Any] | None = None,
    removed: set[str] | frozenset[str] = frozenset(),
) -> None:
    """``documents_changed`` and one notification per id, after confirmed changes: SAVED,
    or REMOVED for the ids in ``removed`` (a patch that soft-deleted them: see
    :func:`removed_ids`; the recently-deleted list is the soft-delete feature's
    ``settle``)."""
    if not ids:
        return
    if signals.has_receivers(signals.documents_changed, info.cls):
        signals.send_safely(
            signals.documents_changed,
            info.cls,
            documents=documents or [],
            change_type=ChangeType.SAVED,
            options=options,
        )
    changes = [(i, ChangeType.REMOVED if i in removed else ChangeType.SAVED) for i in ids]
    publish_changes(ctx, info, changes, options)


def removed_ids(info: ModelInfo, outcomes: Iterable[BulkOutcome]) -> set[str]:
    """The ids of confirmed patches a feature judges removals (the ``change_type`` point,
    :func:`esmapper._pending.change_type`: a soft delete) from the stored source the write
    was conditioned on (``PendingWrite.original_source``, set where the patch read it:
    scans, client-side patches) and what it stored (:func:`patch_written`). A write whose
    original or result is not known (a script) is not a removal."""
    if not info.points.change_type:
        return set()
    out: set[str] = set()
    for outcome in outcomes:
        if not outcome.ok or outcome.result == "noop" or outcome.id is None:
            continue
        ref = outcome.action.ref
        if not isinstance(ref, PendingWrite):
            continue
        if change_type(ref, ref.original_source, patch_written(ref)) is ChangeType.REMOVED:
            out.add(str(outcome.id))
    return out


def changed_ids(outcomes: Iterable[BulkOutcome]) -> list[str | None]:
    """The ids the ``outcomes`` changed (not a noop), each with the routing its action
    sent (an :class:`~esmapper.ids.Id`: what its change notification names)."""
    return [
        o.id if o.id is None or o.action.routing is None else Id(o.id, routing=o.action.routing)
        for o in outcomes
        if o.ok and o.result != "noop"
    ]


def patch_written(pending: PendingWrite) -> Mapping[str, Any] | None:
    """What a patch stores, as far as it is known before the server applies it: the
    fields a partial update sets, the whole source a client-side patch indexes; ``None``
    for a script (its result is the server's)."""
    form = pending.form
    if form is None:
        return None
    if not form.update:  # an index of the patched source (ActionPatch: of the document)
        return form.body if form.body is not None else pending.info.to_source(pending.doc)
    doc = (form.body or {}).get("doc")
    return doc if isinstance(doc, dict) else None


def per_document(info: ModelInfo, patch: Patch) -> bool:
    """Whether a feature of ``info``'s model needs ``patch`` written document by document
    from the stored source (the ``reads_stored`` point)."""
    return any(hook(patch) for hook in info.points.reads_stored)
