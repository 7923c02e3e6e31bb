"""Patches and by-query writes of a repository.

Every write here compiles to pending writes of kind ``patch``
(:class:`~esmapper._pending.PatchForm`: a partial or script update, a conditional index of
a source patched client-side, at the version read) and goes through
:func:`esmapper._writes.write_documents`, as ``add`` does (the features' points, one bulk
writer, unknown outcomes read back, every touched id removed from the cache), except the
two by-query requests (:mod:`esmapper._by_query_send`), which are sent once (never resent
by the transport), run as server tasks where the server keeps them (see below) and drop
the model's cache entries:

- Every patch by id or ids is first given to the features' ``check`` point as writes by
  those ids (:func:`check_by_id`), before anything is read: whichever path below it takes,
  one rule refuses what a feature refuses by id (a join child's plain id).
- With ``tenant=`` every patch by id or ids runs as the ``patch_all`` over those ids
  (the scan's tenant filter: another tenant's id is absent; see
  :mod:`esmapper.custom_fields._tenancy`). Otherwise:
- ``patch(id, Partial|Script)`` is one ``update`` (server-side merge or script,
  ``detect_noop``); ``patch(ids, Partial|Script)`` one update per id. A model whose
  repository overrides ``invalidate_cache_for`` (:func:`esmapper._cache_hooks.sees_writes`)
  patches by id as over ``patch_all`` instead (each document read and written at the
  version read): the hook sees the stored document and the patched one.
- ``patch(id, Json|Action)`` GETs the document, applies the patch client-side and writes it
  back with ``if_seq_no``/``if_primary_term`` (the ``_source`` fields the model does not
  declare are kept); ``patch(ids, Json|Action)`` runs as ``patch_all`` over those ids and
  reports the ids that do not exist.
- Every per-document write names the model's alias of the index its document was read
  from (:meth:`IndexSpec.write_name <esmapper.indexes.spec.IndexSpec.write_name>`:
  versioned alias, dated alias), never the physical index: a reindex that swapped and
  deleted it meanwhile must not get it created again. A write conditioned on the version
  read goes to the fence alias of the index it was read from
  (:meth:`IndexSpec.conditioned_target
  <esmapper.indexes.spec.IndexSpec.conditioned_target>`), which that swap removed: a
  conflict like any other, never applied to the new index's document at the same numbers.
- ``patch_all(filter, ScriptPatch)`` on a model not cached by default is one
  ``_update_by_query``: version conflicts (documents changed by another writer while it
  ran) are *reported* (:class:`VersionConflictError` with the counts), never skipped
  silently; documents it refused are reported (:class:`BulkWriteError`); a lost answer
  raises :class:`OutcomeUnknownError` (the script may have run).
- Every other ``patch_all`` (PartialPatch always: the Update API's deep merge is the one
  merge rule, by id or by query) scans the matches in a point in time and writes each
  page as per-document actions conditioned on the version the scan saw. A document
  changed meanwhile (409) or deleted (404, Elasticsearch's answer to an update of it) is
  looked up again: if it still matches, it is patched at its new version (up to 5
  rounds), if not it is left alone; what still conflicts is reported.
- ``remove_all`` is ``_delete_by_query`` (re-run while version conflicts remain, at most 10
  times, then :class:`VersionConflictError` says how many matches were left) unless
  removal signals have receivers or the model is cached: then the scan's pages go through
  the write pipeline as deletes conditioned on the scanned versions.
- Both by-query requests run through :func:`esmapper._server_tasks.run_task` (where the
  server keeps tasks, one followed until it ends, whatever the client's request timeout):
  cancelled when the call's ``timeout=`` passes (:class:`OutcomeUnknownError`, with how
  far it got) or on Ctrl-C. A task someone else cancelled is not a complete one
  (:class:`~esmapper._server_tasks.TaskCancelled`): :class:`OutcomeUnknownError` with
  ``error_type="task_cancelled"`` and how far it got, never run again by the call.
  Never two runs at once: a re-run for conflicts starts after the previous run ended,
  and a start whose answer was lost is followed when its task is listed as running, else
  only the delete is run again (nothing of it runs; deleting is idempotent). Sent
  synchronously (no tasks), a lost answer is :class:`OutcomeUnknownError`.
- The scans (:mod:`esmapper._scan`) keep their point in time alive 5 minutes between two
  pages; one lost anyway is replaced and the scan continues after the last hit (id
  order), at most 10 times, then :class:`SnapshotExpiredError` tells how far it got.

Read side: ``consistency="immediate"``/``"wait"`` refresh the index before the scan or the
by-query request; inner writes are eventual, with one refresh at the
end. A by-query request writes each match at the version the last refresh made
searchable, so a document written since conflicts: ``_update_by_query`` (which cannot
retry) always refreshes first, and ``_delete_by_query`` refreshes before each re-run.

Patches skip validation and the saving/saved signals; ``documents_changed`` fires (with an
empty list except for a single-document ActionPatch) only when something changed; a no-op
(ScriptPatch ``ctx.op = 'none'``, ActionPatch returning False, an empty JsonPatch) writes
and publishes nothing. A patch that turns ``is_deleted`` from false to true publishes
``REMOVED``, like a save that does (:func:`esmapper._pending.change_type`; not a
``ScriptPatch``, whose result is not known). The dates are set on every patch
(:mod:`esmapper._dates`: the updated date, a caller-supplied value winning for
Partial/Script; the created date corrected where the path can judge it).

The patches by id are here; the by-query writes (``patch_all``, ``remove_all``, re-exported
here) in :mod:`esmapper._by_query`; what both build and do after a write in
:mod:`esmapper._patch_actions`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from elasticsearch.dsl.query import Ids

from esmapper._by_query import patch_all, remove_all
from esmapper._cache_hooks import sees_writes
from esmapper._features import WriteCall
from esmapper._patch_actions import (
    announce,
    changed_ids,
    client_side_pending,
    per_document,
    raise_for,
    removed_ids,
    update_body,
    update_pending,
)
from esmapper._pending import PatchForm, PendingWrite
from esmapper._writes import write_documents
from esmapper.bulk import BulkOutcome
from esmapper.errors import BulkItemFailure, BulkWriteError, DocumentNotFoundError
from esmapper.ids import check_id
from esmapper.indexes.reads import get_document, locate_documents
from esmapper.options import Options
from esmapper.patches import ActionPatch, JsonPatch, PartialPatch, Patch, ScriptPatch
from esmapper.signals import ModifiedDocument

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper._scan import Listing
    from esmapper.indexes.spec import IndexSpec
    from esmapper.model.info import ModelInfo

__all__ = ["check_by_id", "check_patch", "patch_all", "patch_ids", "remove_all"]


def check_patch(ctx: Context, info: ModelInfo, patch: Patch, options: Options) -> None:
    """Refuse ``patch`` before anything is read or sent: the ``check`` point of the
    model's features, given the patch as a write of no document yet (the tenant rule
    refuses a PartialPatch that moves documents to another tenant)."""
    if not info.points.check:
        return
    form = PatchForm(patch, isinstance(patch, PartialPatch | ScriptPatch))
    check_by_id(ctx, info, options, [PendingWrite("patch", None, info, form=form)])


def check_by_id(
    ctx: Context, info: ModelInfo, options: Options, pendings: Sequence[PendingWrite]
) -> None:
    """The ``check`` point of the model's features for writes by id (``pendings``: of
    no document, their ``id`` set), before anything is read or sent, whatever path the
    write then takes (one update per id, a scan over the ids with ``tenant=`` or
    repository hooks, a client-side patch, a removal that loads its documents first): a
    child's plain id (its shard not known) is refused on every path, not only where
    nothing is loaded (:mod:`esmapper._join`). Raises what a feature's check raises
    (DocumentValidationError)."""
    if not info.points.check or not pendings:
        return
    call = WriteCall(ctx, options, ctx.clock())
    for hook in info.points.check:
        hook(call, pendings)


def patch_ids(listing: Listing, ids: str | Iterable[str], patch: Patch, options: Options) -> None:
    """``repo.patch``: see the module docstring. ``listing`` searches the ids where a
    patch runs as ``patch_all`` over them; the writes take its context, model and spec."""
    id_list = [ids] if isinstance(ids, str) else list(dict.fromkeys(ids))
    for id in id_list:
        check_id(id)
    if not id_list:
        return
    ctx, info, spec = listing.ctx, listing.info, listing.spec
    form = PatchForm(patch, isinstance(patch, PartialPatch | ScriptPatch))
    check_by_id(
        ctx, info, options, [PendingWrite("patch", None, info, id, form=form) for id in id_list]
    )
    if options.tenant is not None:
        # the tenant rule (custom_fields._tenancy): the scan's tenant filter makes another
        # tenant's id absent, whatever the patch type (and refuses tenant= on a model
        # without custom fields)
        notify_all = isinstance(patch, JsonPatch | ActionPatch)  # as without tenant=
        _patch_scanned(listing, id_list, patch, options, notify_all=notify_all)
        return
    if isinstance(patch, PartialPatch | ScriptPatch) and sees_writes(ctx, info):
        # the repository's invalidate_cache_for drops keys made of the content: each
        # document is read and written at the version read, so it sees what was stored
        # (the partial patch merged in as the value; a script's result is not known)
        _patch_scanned(listing, id_list, patch, options, notify_all=False, each=True)
        return
    if isinstance(patch, PartialPatch) and per_document(info, patch):
        # a feature derives what is written from the stored document (custom fields'
        # idx) or judges the write by it (a soft delete is a removal only if the stored
        # one was not deleted): per document, at the version read
        _patch_scanned(listing, id_list, patch, options, notify_all=False)
        return
    if isinstance(patch, PartialPatch | ScriptPatch):
        _patch_located(ctx, info, spec, id_list, patch, options)
        return
    if len(id_list) > 1:
        _patch_scanned(listing, id_list, patch, options, notify_all=True)
        return
    _patch_one_client_side(ctx, info, spec, id_list[0], patch, options)


def _patch_located(  # noqa: PLR0917
    ctx: Context,
    info: ModelInfo,
    spec: IndexSpec,
    id_list: list[str],
    patch: PartialPatch | ScriptPatch,
    options: Options,
) -> None:
    """One update per id, unconditioned (``retry_on_conflict``), through the alias that
    holds it (:func:`~esmapper.indexes.reads.locate_documents`)."""
    body = update_body(ctx, info, patch)
    targets = locate_documents(ctx.client, spec, id_list)
    # time-series ids stored nowhere: not found, like a 404 of the update
    missing = [_missing(spec, id) for id in id_list if id not in targets]
    pendings = [
        update_pending(info, patch, id, body, targets[id]) for id in id_list if id in targets
    ]
    outcomes: list[BulkOutcome] = []
    write_documents(ctx, pendings, options, outcomes=outcomes)
    changed = changed_ids(outcomes)
    announce(ctx, info, changed, options)
    failed = [o for o in outcomes if not o.ok]
    if len(id_list) == 1 and missing:
        raise DocumentNotFoundError(id_list[0], index=spec.alias)
    if failed or missing:
        if len(outcomes) == 1 and not missing:
            raise_for(failed[0], info)
        failures = [o.to_failure() for o in failed] + missing
        raise BulkWriteError(failures, changed)


def _patch_scanned(
    listing: Listing,
    id_list: list[str],
    patch: Patch,
    options: Options,
    *,
    notify_all: bool,
    each: bool = False,
) -> None:
    """``patch(ids)`` as a ``patch_all`` over those ids (each document written at the version
    the scan read); ``notify_all``: one message per listed id once anything changed;
    ``each``: a script too is written per document."""
    seen: set[str] = set()
    # by id is real-time: refresh, so documents written a moment ago are found
    consistency = "immediate" if options.consistency == "eventual" else options.consistency
    patch_all(
        listing,
        Ids(values=id_list),
        patch,
        options.merge(soft_deletes="all", consistency=consistency),
        notify_ids=id_list if notify_all else None,
        seen=seen,
        each=each,
    )
    absent = [id for id in id_list if id not in seen]
    if absent and len(id_list) == 1:
        raise DocumentNotFoundError(id_list[0], index=listing.spec.alias)
    if absent:
        raise BulkWriteError([_missing(listing.spec, id) for id in absent], sorted(seen))


def _missing(spec: IndexSpec, id: str) -> BulkItemFailure:
    return BulkItemFailure(
        id, spec.alias, "update", 404, "document_missing_exception", "document missing"
    )


def _patch_one_client_side(  # noqa: PLR0917
    ctx: Context,
    info: ModelInfo,
    spec: IndexSpec,
    id: str,
    patch: JsonPatch | ActionPatch,
    options: Options,
) -> None:
    """GET the document, apply ``patch`` client-side, write it back at the version read."""
    raw = get_document(ctx.client, spec, id)  # the one owner of by-id reads (routing...)
    if raw is None:
        raise DocumentNotFoundError(id, index=spec.alias)
    version = f"{raw['_primary_term']}:{raw['_seq_no']}" if "_seq_no" in raw else None
    source = raw.get("_source") or {}
    pending = client_side_pending(ctx, info, patch, raw["_id"], raw.get("_index"), source, version)
    if pending is None:
        return
    outcomes: list[BulkOutcome] = []
    # (settled: the patched document holds the version and source stored)
    write_documents(ctx, [pending], options, outcomes=outcomes)
    outcome = outcomes[0]
    if not outcome.ok:
        raise_for(outcome, info)
    documents = (
        [ModifiedDocument(pending.doc, info.from_source(source, id, version))]
        if isinstance(patch, ActionPatch)
        else []
    )
    announce(ctx, info, [id], options, documents, removed=removed_ids(info, [outcome]))
