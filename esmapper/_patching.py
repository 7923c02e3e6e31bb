"""Patches and by-query writes of a repository.

Every write here goes through :func:`esmapper._outcomes.send` (one bulk writer, unknown
outcomes read back, every touched id removed from the cache), except the two by-query
requests, which are sent once (never resent by the transport) and drop the model's cache
entries:

- ``patch(id, Partial|Script)`` is one ``update`` (server-side merge or script,
  ``detect_noop``); ``patch(ids, Partial|Script)`` one update per id.
- ``patch(id, Json|Action)`` GETs the document, applies the patch client-side and writes it
  back with ``if_seq_no``/``if_primary_term`` (the ``_source`` fields the model does not
  declare are kept); ``patch(ids, Json|Action)`` runs as ``patch_all`` over those ids and
  reports the ids that do not exist.
- Every per-document write names the model's alias of the index its document was read
  from (:meth:`IndexSpec.write_name <esmapper.indexes.spec.IndexSpec.write_name>`:
  versioned alias, dated alias), never the physical index: a reindex that swapped and
  deleted it meanwhile must not get it created again; the version read from the old index
  answers 409 in the new one, a conflict like any other.
- ``patch_all(filter, ScriptPatch)`` on a model not cached by default is one
  ``_update_by_query``: version conflicts (documents changed by another writer while it
  ran) are *reported* (:class:`VersionConflictError` with the counts), never skipped
  silently; a lost answer raises :class:`OutcomeUnknownError` (the script may have run).
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
and publishes nothing. ``updated_utc`` is set on every patch (a caller-supplied value wins
for Partial/Script).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import attrs
import jsonpatch
from elastic_transport import TransportError
from elasticsearch import ApiError, NotFoundError
from elasticsearch.dsl.query import Ids, Query

from esmapper import signals
from esmapper._limits import current as current_limits
from esmapper._scan import scan
from esmapper._search import is_index_missing
from esmapper._transport import is_unknown_outcome, once
from esmapper._writes import (
    UNKNOWN,
    PendingWrite,
    failure_error,
    publish_changes,
    send,
    split_version,
    with_extras,
    write_documents,
)
from esmapper.bulk import BulkAction, BulkOutcome
from esmapper.custom_fields import indexing as custom_fields
from esmapper.errors import (
    BulkItemFailure,
    BulkWriteError,
    DocumentError,
    DocumentNotFoundError,
    OutcomeUnknownError,
    VersionConflictError,
)
from esmapper.ids import check_id
from esmapper.indexes.pipelines import by_query_params
from esmapper.indexes.reads import get_document, locate_documents
from esmapper.model.codec import format_datetime
from esmapper.options import Options, refresh_param
from esmapper.patches import ActionPatch, JsonPatch, PartialPatch, Patch, ScriptPatch
from esmapper.results import FindHit
from esmapper.signals import ChangeType, ModifiedDocument

if TYPE_CHECKING:
    from esmapper.repository import Repository

__all__ = ["patch_all", "patch_ids", "remove_all"]

log = logging.getLogger("esmapper.repository")

_REMOVE_SIGNALS = (
    signals.documents_removing,
    signals.documents_removed,
    signals.documents_changing,
    signals.documents_changed,
)
_PAGE = 500
_CONFLICT_ROUNDS = 5  # re-reads of conflicting documents by patch_all (``retries=``)
_DELETE_RETRIES = 9  # remove_all: 10 delete-by-query rounds in all (``retries=`` + 1)


def _now_text(repo: Repository[Any]) -> str:
    return format_datetime(repo.mapper.clock())


def _once(repo: Repository[Any]) -> Any:
    """The client for a request that must not be resent blindly (by-query writes)."""
    return once(repo.mapper.client)


def _update_body(repo: Repository[Any], patch: PartialPatch | ScriptPatch) -> dict[str, Any]:
    """The Update API body of a Partial/Script patch, with ``updated_utc`` tracking."""
    dated = repo.info.has_dates
    if isinstance(patch, PartialPatch):
        doc = dict(patch.doc)
        if dated and "updated_utc" not in doc:
            doc["updated_utc"] = _now_text(repo)
        return {"doc": doc, "detect_noop": True}
    params = dict(patch.params or {})
    source = patch.source
    if dated and "updated_utc" not in params:
        params["__esm_now"] = _now_text(repo)
        source = f"{source.rstrip().rstrip(';')};\nctx._source.updated_utc = params.__esm_now;"
    return {"script": {"source": source, "lang": "painless", "params": params}}


def _raise_for(outcome: BulkOutcome, repo: Repository[Any]) -> None:
    kwargs: dict[str, Any] = {
        "index": outcome.index,
        "error_type": outcome.error_type,
        "reason": outcome.reason,
    }
    if outcome.status == 404:
        raise DocumentNotFoundError(str(outcome.id), **kwargs)
    if outcome.status == 409:
        raise VersionConflictError(
            f"version conflict patching {repo.info.name} {outcome.id!r}: {outcome.reason}",
            ids=[outcome.id],
            **kwargs,
        )
    raise failure_error([outcome], [], 1)


def _announce(
    repo: Repository[Any],
    ids: list[str | None],
    options: Options,
    documents: list[Any] | None = None,
) -> None:
    """``documents_changed`` and one notification per id, after confirmed changes (SAVED:
    a patch does not see the previous state; a patch setting ``is_deleted``
    updates the recently-deleted list through :func:`_track_soft_deletes`)."""
    if not ids:
        return
    if signals.has_receivers(signals.documents_changed, repo.model):
        signals.send_safely(
            signals.documents_changed,
            repo.model,
            documents=documents or [],
            change_type=ChangeType.SAVED,
            options=options,
        )
    publish_changes(repo.mapper, repo.info, [(i, ChangeType.SAVED) for i in ids], options)


def _changed(outcomes: Iterable[BulkOutcome]) -> list[str | None]:
    return [o.id for o in outcomes if o.ok and o.result != "noop"]


def _soft_delete_flag(action: BulkAction) -> bool | None:
    """The ``is_deleted`` a patch action stores (``None``: it does not say, e.g. a script)."""
    body = action.body or {}
    if action.op == "index":
        return bool(body.get("is_deleted"))
    doc = body.get("doc")
    if isinstance(doc, dict) and "is_deleted" in doc:
        return bool(doc["is_deleted"])
    return None


def _track_soft_deletes(repo: Repository[Any], outcomes: Iterable[BulkOutcome]) -> None:
    """A patch that sets ``is_deleted`` is a soft delete or a restore, like a save that does:
    confirmed ones update the shared recently-deleted list, or a restored
    document stays hidden from searches (by-query writes included) for ``deleted_ttl``."""
    documents = repo.mapper.documents
    if documents is None or not repo.info.soft_deletes:
        return
    gone: list[str] = []
    back: list[str] = []
    for outcome in outcomes:
        flag = _soft_delete_flag(outcome.action) if outcome.ok and outcome.id else None
        if flag is not None:
            (gone if flag else back).append(str(outcome.id))
    if gone:
        documents.remember_deleted(repo.spec.alias, gone)
    if back:
        documents.forget_deleted(repo.spec.alias, back)


# -- by id ---------------------------------------------------------------------------------


def patch_ids(
    repo: Repository[Any], ids: str | Iterable[str], patch: Patch, options: Options
) -> None:
    id_list = [ids] if isinstance(ids, str) else list(dict.fromkeys(ids))
    for id in id_list:
        check_id(id)
    if not id_list:
        return
    if isinstance(patch, PartialPatch) and repo.info.custom_fields:
        # idx is recomputed from the stored document: per document, at the version read
        _patch_scanned(repo, id_list, patch, options, notify_all=False)
        return
    if isinstance(patch, PartialPatch | ScriptPatch):
        body = _update_body(repo, patch)
        targets = locate_documents(repo.mapper.client, repo.spec, id_list)
        # time-series ids stored nowhere: not found, like a 404 of the update
        missing = [_missing(repo, id) for id in id_list if id not in targets]
        actions = [
            BulkAction(
                op="update",
                index=targets[id],
                id=id,
                body=body,
                retry_on_conflict=patch.retry_on_conflict,
                ref=PendingWrite("patch", None, repo.info, id=id),
            )
            for id in id_list
            if id in targets
        ]
        outcomes = (
            send(repo.mapper, actions, refresh=refresh_param(options.consistency))
            if actions
            else []
        )
        _track_soft_deletes(repo, outcomes)
        changed = _changed(outcomes)
        if repo.info.custom_fields:  # a script: idx brought up to date afterwards
            refresh = refresh_param(options.consistency)
            custom_fields.reconcile(repo.mapper, repo.info, changed, refresh=refresh)
        _announce(repo, changed, options)
        failed = [o for o in outcomes if not o.ok]
        if len(id_list) == 1 and missing:
            raise DocumentNotFoundError(id_list[0], index=repo.spec.alias)
        if failed or missing:
            if len(outcomes) == 1 and not missing:
                _raise_for(failed[0], repo)
            failures = [o.to_failure() for o in failed] + missing
            raise BulkWriteError(failures, changed)
        return
    if len(id_list) > 1:
        _patch_scanned(repo, id_list, patch, options, notify_all=True)
        return
    _patch_one_client_side(repo, id_list[0], patch, options)


def _patch_scanned(
    repo: Repository[Any], id_list: list[str], patch: Patch, options: Options, *, notify_all: bool
) -> None:
    """``patch(ids)`` as a ``patch_all`` over those ids (each document written at the version
    the scan read); ``notify_all``: one message per listed id once anything changed."""
    seen: set[str] = set()
    # by id is real-time: refresh, so documents written a moment ago are found
    consistency = "immediate" if options.consistency == "eventual" else options.consistency
    patch_all(
        repo,
        Ids(values=id_list),
        patch,
        options.merge(soft_deletes="all", consistency=consistency),
        notify_ids=id_list if notify_all else None,
        seen=seen,
    )
    absent = [id for id in id_list if id not in seen]
    if absent and len(id_list) == 1:
        raise DocumentNotFoundError(id_list[0], index=repo.spec.alias)
    if absent:
        raise BulkWriteError([_missing(repo, id) for id in absent], sorted(seen))


def _missing(repo: Repository[Any], id: str) -> BulkItemFailure:
    return BulkItemFailure(
        id, repo.spec.alias, "update", 404, "document_missing_exception", "document missing"
    )


def _patch_one_client_side(
    repo: Repository[Any], id: str, patch: JsonPatch | ActionPatch, options: Options
) -> None:
    if repo.spec.is_time_series:
        found = get_document(repo.mapper.client, repo.spec, id)
        if found is None:
            raise DocumentNotFoundError(id, index=repo.spec.alias)
        raw = found
    else:
        try:
            raw = repo.mapper.client.get(index=repo.spec.read_target, id=id).body
        except NotFoundError as exc:
            raise DocumentNotFoundError(id, index=repo.spec.alias) from exc
    version = f"{raw['_primary_term']}:{raw['_seq_no']}" if "_seq_no" in raw else None
    action = _client_side_action(
        repo,
        patch,
        options,
        id=raw["_id"],
        index=raw.get("_index"),
        source=raw.get("_source") or {},
        version=version,
    )
    if action is None:
        return
    outcome = send(repo.mapper, [action], refresh=refresh_param(options.consistency))[0]
    if not outcome.ok:
        _raise_for(outcome, repo)
    _track_soft_deletes(repo, [outcome])
    _confirm_client_side(repo, action, outcome)
    pending: PendingWrite = action.ref
    documents = (
        [
            ModifiedDocument(
                pending.doc, repo.info.from_source(raw.get("_source") or {}, id, version)
            )
        ]
        if isinstance(patch, ActionPatch)
        else []
    )
    _announce(repo, [id], options, documents)


def _client_side_action(
    repo: Repository[Any],
    patch: JsonPatch | ActionPatch,
    options: Options,
    *,
    id: str,
    index: str | None,
    source: dict[str, Any],
    version: str | None,
) -> BulkAction | None:
    """The conditional ``index`` action of a Json/Action patch applied to ``source``,
    through the alias of ``index`` (the index ``source`` was read from), or
    ``None`` for a no-op (an empty JsonPatch, an ActionPatch whose callables all returned
    False)."""
    info = repo.info
    if isinstance(patch, JsonPatch):
        if not patch.operations:
            return None
        try:
            new_source = jsonpatch.JsonPatch(list(patch.operations)).apply(source)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise DocumentError(
                f"JsonPatch of {info.name} {id!r} failed: {exc}",
                ids=[id],
                index=index,
                error_type="json_patch_failed",
                reason=str(exc),
            ) from exc
        if info.has_dates:
            new_source["updated_utc"] = _now_text(repo)
        document = info.from_source(new_source, id, version)
        if info.custom_fields:
            custom_fields.patched_source(repo.mapper, info, document, new_source)
    else:
        document = info.from_source(source, id, version)
        if not patch.apply(document):
            return None
        if info.has_dates:
            document.updated_utc = repo.mapper.clock()
        if info.custom_fields:
            custom_fields.refresh_idx(repo.mapper, [document])
        new_source = with_extras(info.to_source(document), source, info)
    seq_no = primary_term = None
    if options.version_check:
        seq_no, primary_term = split_version(version, owner=info.name, id=id)
    return BulkAction(
        op="index",
        index=repo.spec.write_name(index),  # through the alias: it follows a reindex
        id=id,
        body=new_source,
        if_seq_no=seq_no,
        if_primary_term=primary_term,
        ref=PendingWrite("patch", document, info, id=id),
    )


def _confirm_client_side(repo: Repository[Any], action: BulkAction, outcome: BulkOutcome) -> None:
    """Record the stored state on the patched document (for signal receivers)."""
    from esmapper.model.state import remember

    document = action.ref.doc
    if repo.info.versioned:
        document.version = outcome.version
    assert isinstance(action.body, dict)
    remember(document, action.body, outcome.index, outcome.version)


# -- by query --------------------------------------------------------------------------


def _batched(repo: Repository[Any], options: Options) -> bool:
    """Whether by-query writes go through the per-document batch path: the model is
    cached by default, or the call asks for ``cache=True``."""
    return options.cache is True or repo.mapper.is_cached(repo.info)


def _scan_options(options: Options, *, retry: bool = False) -> Options:
    """The options of the internal searches of by-query writes: the call's, never cached
    under a caller's custom key (those keys are for the caller's reads). The one place
    that says what a by-query write matches: the scan, the conflict retries (``retry``:
    refreshed, not cached) and the by-query requests all keep the call's ``tenant=`` and
    ``soft_deletes=`` (a retry without the tenant clause would write another tenant's
    document that moved meanwhile)."""
    return attrs.evolve(
        options,
        consistency="immediate" if retry else options.consistency,
        cache=False if retry or options.cache_key is not None else options.cache,
        cache_key=None,
    )


def _matching_again(
    repo: Repository[Any], filter: str | Query | None, options: Options, ids: list[str]
) -> list[FindHit[Any]]:
    """Those of ``ids`` that still match the by-query write's filter and options
    (:func:`_scan_options`): the filter compiled as the scan compiled it, restricted to
    ``ids``."""
    request = repo._search_request(filter, _scan_options(options, retry=True), {"limit": len(ids)})
    only = Ids(values=ids)
    request.query = only if request.query is None else only & request.query
    return request.find().hits


def _refresh(repo: Repository[Any]) -> None:
    with contextlib.suppress(NotFoundError):
        repo.mapper.client.indices.refresh(index=repo.spec.alias)


def _each_match(
    repo: Repository[Any],
    filter: str | Query | None,
    options: Options,
    apply: Callable[[list[FindHit[Any]]], list[str]],
) -> list[str]:
    """Call ``apply`` with the matching hits, page by page (a point in time, so a page
    written meanwhile is not seen again; lost between two pages, it is replaced and the
    scan continues after the last hit: see :mod:`esmapper._scan`); ``apply`` returns the
    ids that got a version conflict. Those are searched again (after a refresh) and, if
    they still match, passed to ``apply`` at their new version, up to 5 rounds (the call's
    ``retries=``). Returns
    the ids still conflicting."""
    conflicted: list[str] = []

    def page(hits: list[FindHit[Any]]) -> None:
        conflicted.extend(apply(hits))

    scan(repo, filter, page, _scan_options(options), limit=_PAGE, reopen=True)
    for _round in range(current_limits().retry_rounds(_CONFLICT_ROUNDS)):
        if not conflicted:
            break
        retry, conflicted = conflicted, []
        for start in range(0, len(retry), _PAGE):
            # refreshed ("immediate"): the conflicting writes are visible, and the
            # recently-soft-deleted hint (for unrefreshed searches only) does not hide
            # a document restored meanwhile
            hits = _matching_again(repo, filter, options, retry[start : start + _PAGE])
            if hits:
                conflicted.extend(apply(hits))
    return conflicted


def patch_all(
    repo: Repository[Any],
    filter: str | Query | None,
    patch: Patch,
    options: Options,
    *,
    notify_ids: list[str] | None = None,
    seen: set[str] | None = None,
) -> int:
    """See the module docstring. ``notify_ids``: publish one message per listed id (noop
    ids included) once anything changed, instead of one per changed id;
    ``seen`` collects the ids that matched."""
    if (
        isinstance(patch, ScriptPatch)
        and notify_ids is None
        and not _batched(repo, options)
        and not repo.info.custom_fields  # idx is brought up to date per document
    ):
        return _update_by_query(repo, filter, patch, options)

    changed = 0
    failures: list[BulkOutcome] = []
    refresh = refresh_param("eventual")

    def apply(hits: list[FindHit[Any]]) -> list[str]:
        nonlocal changed
        actions = []
        for hit in hits:
            if seen is not None:
                seen.add(hit.id)
            action = _hit_action(repo, hit, patch, options)
            if action is not None:
                actions.append(action)
        if not actions:
            return []
        outcomes = send(repo.mapper, actions, refresh=refresh)
        _track_soft_deletes(repo, outcomes)
        done = _changed(outcomes)
        if isinstance(patch, ScriptPatch) and repo.info.custom_fields:
            custom_fields.reconcile(repo.mapper, repo.info, done, refresh=refresh)
        changed += len(done)
        if notify_ids is None:
            _announce(repo, done, options)
        # 409: changed since the scan; 404 (Elasticsearch's answer to an update at the
        # version of a document deleted since): gone. Both are looked up again, and
        # patched only if they (still, or again) match
        again = [o for o in outcomes if o.status in (404, 409)]
        failures.extend(o for o in outcomes if not o.ok and o.status not in (404, 409))
        return [str(o.id) for o in again]

    try:
        still = _each_match(repo, filter, options, apply)
    finally:
        if options.consistency != "eventual":
            _refresh(repo)
    if notify_ids is not None and changed:
        _announce(repo, list(notify_ids), options)
    if still:
        raise _kept_changing(repo, "patch_all", "patched", still, changed)
    if failures:
        raise failure_error(failures, [], len(failures) + changed)
    return changed


def _hit_action(
    repo: Repository[Any], hit: FindHit[Any], patch: Patch, options: Options
) -> BulkAction | None:
    """The write of ``patch`` for one scanned hit, conditioned on the hit's version."""
    state = hit.document._esm_state
    source = state.original if state is not None else {}
    index = repo.spec.write_name(hit.index)  # through the alias: it follows a reindex
    if isinstance(patch, PartialPatch | ScriptPatch):
        seq_no = primary_term = None
        if options.version_check:
            seq_no, primary_term = split_version(hit.version, owner=repo.info.name, id=hit.id)
        body = _update_body(repo, patch)
        if isinstance(patch, PartialPatch) and repo.info.custom_fields:
            body["doc"] = custom_fields.partial_doc(
                repo.mapper, repo.info, source, body["doc"], hit.id
            )
        return BulkAction(
            op="update",
            index=index,
            id=hit.id,
            body=body,
            if_seq_no=seq_no,
            if_primary_term=primary_term,
            ref=PendingWrite("patch", None, repo.info, id=hit.id),
        )
    return _client_side_action(
        repo, patch, options, id=hit.id, index=index, source=source, version=hit.version
    )


def _update_by_query(
    repo: Repository[Any], filter: str | Query | None, patch: ScriptPatch, options: Options
) -> int:
    # it writes each match at the version the last refresh made searchable: a document
    # written since would be a conflict it cannot retry (it cannot say which), so it
    # always refreshes first (and the recently-soft-deleted hint is not needed)
    query = repo._search_request(filter, _scan_options(options, retry=True), {})
    body = query.query_body()
    _refresh(repo)
    _log_query(options, "update_by_query", repo.spec.write_target, body)
    try:
        response = (
            _once(repo)
            .update_by_query(
                index=repo.spec.write_target,
                query=body,
                script=_update_body(repo, patch)["script"],
                conflicts="proceed",
                refresh=bool(refresh_param(options.consistency, by_query=True)),
                **by_query_params(repo.spec),  # the model's ingest pipeline, if any
            )
            .body
        )
    except NotFoundError as exc:
        if is_index_missing(exc):
            return 0
        raise
    except TransportError as exc:
        if not is_unknown_outcome(exc):
            raise
        raise OutcomeUnknownError(
            f"patch_all on {repo.info.name}: the update-by-query was sent but no answer came "
            f"back ({exc}); the script may have run on some or all matches. It was not "
            "resent: check the documents before running it again",
            index=repo.spec.alias,
            error_type=UNKNOWN,
            reason=str(exc),
        ) from exc
    finally:
        repo.mapper.invalidate_model(repo.info)
    updated = int(response.get("updated", 0))
    if updated:
        _announce(repo, [None], options)
    conflicts = int(response.get("version_conflicts") or 0)
    if conflicts:
        raise VersionConflictError(
            f"patch_all on {repo.info.name}: {conflicts} matching document(s) changed "
            f"concurrently and were NOT patched ({updated} were); the update-by-query cannot "
            "say which, so re-run it with a filter that excludes the patched documents, or "
            "patch with cache=True (per-document writes that retry conflicts)",
            index=repo.spec.alias,
            error_type="version_conflict_engine_exception",
            reason=f"{conflicts} version conflicts, {updated} updated",
        )
    return updated


def remove_all(repo: Repository[Any], filter: str | Query | None, options: Options) -> int:
    listened = any(signals.has_receivers(s, repo.model) for s in _REMOVE_SIGNALS)
    if not listened and not _batched(repo, options):
        return _delete_by_query(repo, filter, options)

    removed = 0
    inner = options.merge(consistency="eventual")

    def apply(hits: list[FindHit[Any]]) -> list[str]:
        nonlocal removed
        pendings = [
            PendingWrite("remove", hit.document, repo.info, guard=hit.version) for hit in hits
        ]
        try:
            removed += len(write_documents(repo.mapper, pendings, inner))
        except (BulkWriteError, DocumentError) as exc:
            removed += len(exc.succeeded)
            conflicts = [str(f.id) for f in exc.failures if f.status == 409]
            if len(conflicts) != len(exc.failures):
                raise
            return conflicts
        return []

    try:
        still = _each_match(repo, filter, options, apply)
    finally:
        if options.consistency != "eventual":
            _refresh(repo)
    if still:
        raise _kept_changing(repo, "remove_all", "removed", still, removed)
    return removed


def _kept_changing(
    repo: Repository[Any], call: str, done: str, still: list[str], count: int
) -> VersionConflictError:
    """The error for documents that still conflicted after every retry round."""
    return VersionConflictError(
        f"{call} on {repo.info.name}: {len(still)} document(s) kept changing concurrently "
        f"and were not {done} ({count} were)",
        ids=still,
        index=repo.spec.alias,
        error_type="version_conflict_engine_exception",
    )


def _log_query(options: Options, what: str, target: str, query: Any) -> None:
    """Log a by-query request at the call's ``query_log_level`` (default DEBUG)."""
    level = options.query_log_level
    logging.getLogger("esmapper.query").log(
        logging.DEBUG if level is None else level, "%s %s %s", what, target, query
    )


def _delete_by_query(repo: Repository[Any], filter: str | Query | None, options: Options) -> int:
    query = repo._search_request(filter, _scan_options(options), {}).query_body()
    if options.consistency != "eventual":
        _refresh(repo)
    _log_query(options, "delete_by_query", repo.spec.write_target, query)
    total = 0
    # the error of the last attempt whose answer was lost: it may have deleted documents,
    # so a later attempt that fails does not mean "nothing was deleted"
    lost: TransportError | None = None
    try:
        attempts = 1 + current_limits().retry_rounds(_DELETE_RETRIES)
        for attempt in range(attempts):
            if attempt:
                # a re-run: the conflicting documents changed since the last refresh (and
                # what the previous run deleted is still searchable); without a refresh
                # it would meet the same versions and conflict again
                _refresh(repo)
            try:
                response = (
                    _once(repo)
                    .delete_by_query(
                        index=repo.spec.write_target,
                        query=query,
                        conflicts="proceed",
                        refresh=bool(refresh_param(options.consistency, by_query=True)),
                    )
                    .body
                )
            except ApiError as exc:
                if isinstance(exc, NotFoundError) and is_index_missing(exc):
                    return total
                if lost is not None:
                    raise _removal_unknown(repo, lost, exc) from exc
                raise
            except TransportError as exc:
                if not is_unknown_outcome(exc):
                    raise
                # Deleting what matches is idempotent: run it again; what the lost request
                # deleted is not counted.
                log.warning(
                    "remove_all on %s: no answer to the delete-by-query (%s); running it "
                    "again (the returned count may miss what it deleted)",
                    repo.spec.alias,
                    exc,
                )
                lost = exc
                continue
            lost = None
            total += int(response.get("deleted", 0))
            if not response.get("version_conflicts"):
                break
        else:
            if lost is not None:
                raise _removal_unknown(repo, lost, None)
            left = int(response.get("version_conflicts") or 0)
            raise VersionConflictError(
                f"remove_all on {repo.info.name}: {left} matching document(s) were still "
                f"changing concurrently after {attempts} delete-by-query rounds and were NOT "
                f"removed ({total} were); run it again",
                index=repo.spec.alias,
                error_type="version_conflict_engine_exception",
                reason=f"{left} version conflicts, {total} deleted",
            )
    finally:
        repo.mapper.invalidate_model(repo.info)
    if total:
        publish_changes(repo.mapper, repo.info, [(None, ChangeType.REMOVED)], options)
    return total


def _removal_unknown(
    repo: Repository[Any], lost: TransportError, last: Exception | None
) -> OutcomeUnknownError:
    """A delete-by-query whose answer was lost and whose re-runs did not complete: some or
    all matches may be deleted (raising the re-run's own error would say "nothing was")."""
    then = f"; running it again failed: {last}" if last is not None else ""
    return OutcomeUnknownError(
        f"remove_all on {repo.info.name}: the delete-by-query was sent but no answer came "
        f"back ({lost}){then}; some or all matching documents may have been deleted",
        index=repo.spec.alias,
        error_type=UNKNOWN,
        reason=str(lost),
    )
