"""By-query writes of a repository: ``patch_all`` and ``remove_all`` (the rules are those
of :mod:`esmapper._patching`, which re-exports both).

``patch_all(filter, ScriptPatch)`` on a model not cached is one ``_update_by_query``;
every other ``patch_all`` scans the matches in a point in time and writes each page as
per-document actions conditioned on the versions the scan saw, re-reading the documents
that conflicted (up to 5 rounds, the call's ``retries=``). ``remove_all`` is
``_delete_by_query`` (re-run while version conflicts remain, at most 10 times) unless
removal signals have receivers or the model is cached: then the scan's pages are deleted
through the write pipeline at the scanned versions.

The two by-query requests run through :func:`esmapper._server_tasks.run_task`: on a server
that keeps tasks, as a task (``wait_for_completion=false``) followed until it ends, however
long it takes and whatever the client's request timeout; it is cancelled when the call's
``timeout=`` passes (:class:`OutcomeUnknownError` with how far it got) or on Ctrl-C (the
``KeyboardInterrupt`` goes on), and its result is deleted from ``.tasks``. A re-run of
``remove_all`` for version conflicts starts only once the previous run ended; a start
whose answer was lost is followed if its task runs, else ``_delete_by_query`` is run again
(no run of it runs) and ``_update_by_query`` raises :class:`OutcomeUnknownError`. On a
server without tasks they are sent synchronously, and a lost answer raises
:class:`OutcomeUnknownError` for both (it may still be running). The failures a by-query
answer reports (a refused document, a failed shard: the server stopped there) raise
:class:`BulkWriteError`."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch import ApiError, NotFoundError
from elasticsearch.dsl.query import Ids, Query

from esmapper import signals
from esmapper._limits import current as current_limits
from esmapper._patch_actions import (
    announce,
    changed_ids,
    client_side_action,
    removed_ids,
    track_soft_deletes,
    update_body,
)
from esmapper._scan import scan
from esmapper._search import is_index_missing
from esmapper._server_tasks import (
    Kind,
    TaskError,
    TaskResult,
    TaskStartUnknown,
    TaskTimedOut,
    run_task,
)
from esmapper._writes import (
    UNKNOWN,
    PendingWrite,
    failure_error,
    publish_changes,
    send,
    split_version,
    write_documents,
)
from esmapper.bulk import BulkAction, BulkOutcome
from esmapper.custom_fields import indexing as custom_fields
from esmapper.errors import (
    BulkItemFailure,
    BulkWriteError,
    DocumentError,
    OutcomeUnknownError,
    VersionConflictError,
)
from esmapper.indexes._pit_target import pit_target
from esmapper.indexes.pipelines import by_query_params
from esmapper.options import Options, refresh_param
from esmapper.patches import PartialPatch, Patch, ScriptPatch
from esmapper.results import FindHit, FindResults
from esmapper.signals import ChangeType

if TYPE_CHECKING:
    from esmapper.repository import Repository

__all__ = ["patch_all", "remove_all"]

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
    # every shard must answer: an id missing here would be dropped from the retries
    paging = {"limit": len(ids), "complete_only": True}
    request = repo._search_request(filter, _scan_options(options, retry=True), paging)
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

    def page(results: FindResults[Any]) -> None:
        conflicted.extend(apply(results.hits))

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
    removed: set[str] = set()  # soft-deleted by the patch: published as removals
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
        track_soft_deletes(repo, outcomes)
        done = changed_ids(outcomes)
        if isinstance(patch, ScriptPatch) and repo.info.custom_fields:
            custom_fields.reconcile(repo.mapper, repo.info, done, refresh=refresh)
        changed += len(done)
        gone = removed_ids(repo, outcomes)
        removed.update(gone)
        if notify_ids is None:
            announce(repo, done, options, removed=gone)
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
        # one per listed id that matched (noop ones included), never one for an id that
        # is not there (missing, or another tenant's)
        listed: list[str | None] = [i for i in notify_ids if seen is None or i in seen]
        announce(repo, listed, options, removed=removed)
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
            # the scanned version means something in the hit's index only: its fence
            index = repo.spec.conditioned_target(index, hit.index)
        body = update_body(repo, patch)
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
            ref=PendingWrite("patch", None, repo.info, id=hit.id, original_source=source),
        )
    return client_side_action(  # maps the hit's index itself (alias, or fence when conditioned)
        repo, patch, options, id=hit.id, index=hit.index, source=source, version=hit.version
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
    target = _target(repo)
    if target is None:  # a time-series model without partitions: nothing to patch
        return 0
    _log_query(options, "update_by_query", target["index"], body)
    call = f"patch_all on {repo.info.name}"
    params = {
        **target,
        "query": body,
        "script": update_body(repo, patch)["script"],
        "conflicts": "proceed",
        "refresh": bool(refresh_param(options.consistency, by_query=True)),
        **by_query_params(repo.spec),  # the model's ingest pipeline, if any
    }
    try:
        result = _run(repo, "update_by_query", params, call)
    except NotFoundError as exc:
        if is_index_missing(exc):
            return 0
        raise
    except TaskError as exc:
        effect = "the script may have run on some or all matches"
        raise _task_unknown(repo, effect, "updated", exc) from exc
    finally:
        repo.mapper.invalidate_model(repo.info)
    if _nothing_to_write(repo, call, result):
        return 0
    updated = result.count("updated")
    if updated:
        announce(repo, [None], options)
    _raise_failures(repo, call, "update_by_query", result, f"{updated} were patched")
    conflicts = result.count("version_conflicts")
    if conflicts:
        raise VersionConflictError(
            f"{call}: {conflicts} matching document(s) changed "
            f"concurrently and were NOT patched ({updated} were); the update-by-query cannot "
            "say which, so re-run it with a filter that excludes the patched documents, or "
            "patch with cache=True (per-document writes that retry conflicts)",
            index=repo.spec.alias,
            error_type="version_conflict_engine_exception",
            reason=f"{conflicts} version conflicts, {updated} updated",
        )
    return updated


def _target(repo: Repository[Any]) -> dict[str, Any] | None:
    """Where a by-query request of ``repo``'s model is sent: its alias; for a time-series
    model its partitions named one by one (:func:`~esmapper.indexes._pit_target.pit_target`,
    after ``GET /_alias/<umbrella>``), with ``ignore_unavailable=true`` and
    ``allow_no_indices=true`` (a partition retention deletes in between is skipped), as
    the scans' point in time is: the local test server runs a by-query request on an
    alias of several indexes over one of them only. ``None``: no partition exists."""
    spec = repo.spec
    if not spec.is_time_series:
        return {"index": spec.write_target}
    found = pit_target(repo.mapper.client, spec, None)
    if found is None:
        return None
    return {"index": found.index, "ignore_unavailable": True, "allow_no_indices": True}


def _run(repo: Repository[Any], kind: Kind, params: dict[str, Any], call: str) -> TaskResult:
    """One by-query request as a task (:func:`esmapper._server_tasks.run_task`) on the
    call's client: cancelled when the call's ``timeout=`` passes, on Ctrl-C too."""
    result = run_task(repo.mapper.client, kind, params, what=call, timeout=current_limits().timeout)
    counts = ("total", "updated", "deleted", "noops", "version_conflicts")
    log.debug(
        "%s: %s, failures=%d (task %s)",
        call,
        ", ".join(f"{k}={result.count(k)}" for k in counts),
        len(result.failures),
        result.task,
    )
    return result


def _nothing_to_write(repo: Repository[Any], call: str, result: TaskResult) -> bool:
    """Whether the task failed because its index does not exist (nothing to write); any
    other error of the task as a whole (a script that does not compile, ...) raises
    :class:`DocumentError` with the server's type and reason."""
    error = result.error
    if error is None:
        return False
    if error.get("type") == "index_not_found_exception":
        return True
    raise DocumentError(
        f"{call}: the request failed: {error.get('type')}: {error.get('reason')}",
        index=repo.spec.alias,
        error_type=error.get("type"),
        reason=error.get("reason"),
    )


def _raise_failures(
    repo: Repository[Any], call: str, what: str, result: TaskResult, done: str
) -> None:
    """Raise :class:`BulkWriteError` for the failures a by-query answer reports (documents
    refused, shards that failed: the request stopped there)."""
    failures = [_failure(f, what) for f in result.failures]
    if not failures:
        return
    first = failures[0]
    raise BulkWriteError(
        failures,
        message=(
            f"{call}: the {what.replace('_', '-')} stopped on {len(failures)} failure(s) "
            f"({done}); first: id={first.id!r} index={first.index!r} status={first.status} "
            f"{first.error_type}: {first.reason}"
        ),
    )


def _failure(item: dict[str, Any], what: str) -> BulkItemFailure:
    """One entry of a by-query answer's ``failures``: a document (``id``, ``cause``) or a
    shard (``shard``, ``reason``)."""
    cause = item.get("cause") if isinstance(item.get("cause"), dict) else item.get("reason")
    cause = cause if isinstance(cause, dict) else {"reason": str(cause)}
    return BulkItemFailure(
        id=None if item.get("id") is None else str(item["id"]),
        index=item.get("index"),
        op="delete" if what == "delete_by_query" else "update",
        status=int(item.get("status") or 0),
        error_type=cause.get("type"),
        reason=cause.get("reason"),
    )


def _task_unknown(
    repo: Repository[Any], effect: str, verb: str, exc: TaskError
) -> OutcomeUnknownError:
    """The error of a by-query request whose outcome is not known: its answer was lost
    (no task of it runs, or nothing could tell), its task was cancelled at the call's
    timeout (then ``effect`` says how many it had ``verb``, the task's count), or could
    not be followed. It is never resent."""
    if isinstance(exc, TaskTimedOut) and exc.result is not None:
        done, total = exc.result.count(verb), exc.result.count("total")
        which = " (which ones is not known)" if done else ""
        effect = f"it had {verb} {done} of {total} matching documents{which}"
    return OutcomeUnknownError(
        f"{exc}; {effect}. It was not resent: check the documents before running it again",
        index=repo.spec.alias,
        error_type=UNKNOWN,
        reason=str(exc),
    )


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
    target = _target(repo)
    if target is None:  # a time-series model without partitions: nothing to delete
        return 0
    _log_query(options, "delete_by_query", target["index"], query)
    call = f"remove_all on {repo.info.name}"
    params = {
        **target,
        "query": query,
        "conflicts": "proceed",
        "refresh": bool(refresh_param(options.consistency, by_query=True)),
    }
    total = 0
    # the start of the last run whose answer was lost (and of which no task runs): it may
    # have deleted documents, so a later run that fails does not mean "nothing was deleted"
    lost: TaskStartUnknown | None = None
    try:
        attempts = 1 + current_limits().retry_rounds(_DELETE_RETRIES)
        for attempt in range(attempts):
            if attempt:
                # a re-run: the conflicting documents changed since the last refresh (and
                # what the previous run deleted is still searchable); without a refresh
                # it would meet the same versions and conflict again
                _refresh(repo)
            try:
                result = _run(repo, "delete_by_query", params, call)
            except ApiError as exc:
                if isinstance(exc, NotFoundError) and is_index_missing(exc):
                    return total
                if lost is not None:
                    raise _removal_unknown(repo, lost, exc) from exc
                raise
            except TaskStartUnknown as exc:
                if not exc.listed:  # it may still be running: never run a second one
                    raise _task_unknown(repo, _MAY_HAVE_DELETED, "deleted", exc) from exc
                # Deleting what matches is idempotent, and no run of it is running: run it
                # again; what the lost run deleted is not counted.
                log.warning(
                    "%s; running it again (the returned count may miss what it deleted)", exc
                )
                lost = exc
                continue
            except TaskError as exc:
                raise _task_unknown(repo, _MAY_HAVE_DELETED, "deleted", exc) from exc
            lost = None
            if _nothing_to_write(repo, call, result):
                return total
            total += result.count("deleted")
            _raise_failures(repo, call, "delete_by_query", result, f"{total} were removed")
            if not result.count("version_conflicts"):
                break
        else:
            if lost is not None:
                raise _removal_unknown(repo, lost, None)
            left = result.count("version_conflicts")
            raise VersionConflictError(
                f"{call}: {left} matching document(s) were still "
                f"changing concurrently after {attempts} delete-by-query rounds and were NOT "
                f"removed ({total} were); run it again",
                index=repo.spec.alias,
                error_type="version_conflict_engine_exception",
                reason=f"{left} version conflicts, {total} deleted",
            )
    finally:
        repo.mapper.invalidate_model(repo.info)
        if total:  # also when a later round failed: these are gone
            publish_changes(repo.mapper, repo.info, [(None, ChangeType.REMOVED)], options)
    return total


_MAY_HAVE_DELETED = "some or all matching documents may have been deleted"


def _removal_unknown(
    repo: Repository[Any], lost: TaskStartUnknown, last: Exception | None
) -> OutcomeUnknownError:
    """A delete-by-query whose answer was lost and whose re-runs did not complete: some or
    all matches may be deleted (raising the re-run's own error would say "nothing was")."""
    then = f"; running it again failed: {last}" if last is not None else ""
    return OutcomeUnknownError(
        f"remove_all on {repo.info.name}: the delete-by-query was sent but no answer came "
        f"back ({lost.cause}){then}; {_MAY_HAVE_DELETED}",
        index=repo.spec.alias,
        error_type=UNKNOWN,
        reason=str(lost.cause),
    )
