"""By-query writes of a repository: ``patch_all`` and ``remove_all``. Which request each
sends, how conflicts are retried, how the by-query requests run as server tasks and when
the index is refreshed: :mod:`esmapper._patching`'s docstring (it re-exports both).

The writes of the scans are pending writes (:class:`~esmapper._pending.PatchForm`: an
update at the scanned version, a conditional index of a client-side patched source, a
conditional delete) through :func:`esmapper._writes.write_documents`, as ``add``'s are;
the two by-query requests are :mod:`esmapper._by_query_send`'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch.dsl.query import Ids, Query

from esmapper import signals
from esmapper._by_query_send import ByQuery
from esmapper._cache_hooks import sees_writes
from esmapper._limits import current as current_limits
from esmapper._patch_actions import (
    announce,
    changed_ids,
    client_side_pending,
    per_document,
    removed_ids,
    update_body,
    update_pending,
)
from esmapper._pending import PendingWrite
from esmapper._scan import Listing, scan
from esmapper._search import refresh_index
from esmapper._settle import failure_error
from esmapper._writes import write_documents
from esmapper.bulk import BulkOutcome
from esmapper.errors import BulkWriteError, DocumentError, VersionConflictError
from esmapper.options import Options
from esmapper.patches import PartialPatch, Patch, ScriptPatch
from esmapper.results import FindHit, FindResults

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = ["explicit_ids", "patch_all", "remove_all"]

_REMOVE_SIGNALS = (
    signals.documents_removing,
    signals.documents_removed,
    signals.documents_changing,
    signals.documents_changed,
)
_PAGE = 500
_CONFLICT_ROUNDS = 5  # re-reads of conflicting documents by patch_all (``retries=``)


def _batched(listing: Listing, options: Options) -> bool:
    """Whether by-query writes go through the per-document batch path: the model is
    cached by default, the call asks for ``cache=True``, or the model's repository keeps
    keys of its own made of the content (its ``invalidate_cache_for`` hook is given each
    document: :func:`esmapper._cache_hooks.sees_writes`)."""
    ctx, info = listing.ctx, listing.info
    return options.cache is True or ctx.is_cached(info) or sees_writes(ctx, info)


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
    listing: Listing, filter: str | Query | None, options: Options, ids: list[str]
) -> list[FindHit[Any]]:
    """Those of ``ids`` that still match the by-query write's filter and options
    (:func:`_scan_options`): the filter compiled as the scan compiled it, restricted to
    ``ids``."""
    # every shard must answer: an id missing here would be dropped from the retries
    paging = {"limit": len(ids), "complete_only": True}
    request = listing.request(filter, _scan_options(options, retry=True), paging)
    only = Ids(values=ids)
    request.query = only if request.query is None else only & request.query
    return request.find().hits


def _each_match(
    listing: Listing,
    filter: str | Query | None,
    options: Options,
    apply: Callable[[list[FindHit[Any]]], list[str]],
) -> list[str]:
    """Call ``apply`` with the matching hits, page by page (a point in time, so a page
    written meanwhile is not seen again; lost between two pages, it is replaced and the
    scan continues after the last hit: see :mod:`esmapper._scan`); ``apply`` returns the
    ids that got a version conflict. Those are searched again (after a refresh) and, if
    they still match, passed to ``apply`` at their new version, up to 5 rounds (the call's
    ``retries=``). Returns the ids still conflicting, after refreshing the index unless
    the call is ``consistency="eventual"`` (also when it raises)."""
    conflicted: list[str] = []

    def page(results: FindResults[Any]) -> None:
        conflicted.extend(apply(results.hits))

    try:
        scan(listing, filter, page, _scan_options(options), limit=_PAGE, reopen=True)
        for _round in range(current_limits().retry_rounds(_CONFLICT_ROUNDS)):
            if not conflicted:
                break
            retry, conflicted = conflicted, []
            for start in range(0, len(retry), _PAGE):
                # refreshed ("immediate"): the conflicting writes are visible, and the
                # recently-soft-deleted hint (for unrefreshed searches only) does not hide
                # a document restored meanwhile
                hits = _matching_again(listing, filter, options, retry[start : start + _PAGE])
                if hits:
                    conflicted.extend(apply(hits))
    finally:
        if options.consistency != "eventual":  # the inner writes are eventual: one refresh
            refresh_index(listing.ctx.client, listing.spec.alias)
    return conflicted


def patch_all(
    listing: Listing,
    filter: str | Query | None,
    patch: Patch,
    options: Options,
    *,
    notify_ids: list[str] | None = None,
    seen: set[str] | None = None,
    each: bool = False,
) -> int:
    """See the module docstring. ``listing`` searches the matches (the filter compiled
    as the model's searches compile it, the scans); the writes take its context and
    model. ``notify_ids``: publish one message per listed id (noop ids included) once
    anything changed, instead of one per changed id; ``seen`` collects the ids that
    matched; ``each``: a ``ScriptPatch`` too is written per document (never by query)."""
    ctx, info = listing.ctx, listing.info
    if (
        isinstance(patch, ScriptPatch)
        and not each
        and notify_ids is None
        and not _batched(listing, options)
        and not per_document(info, patch)  # a feature needs each stored document
    ):
        # it writes each match at the version the last refresh made searchable: refreshed
        query = listing.request(filter, _scan_options(options, retry=True), {})
        script = update_body(ctx, info, patch)["script"]
        by_query = ByQuery(ctx, info, options)
        return by_query.update(query.query_body(), script, notify=explicit_ids(filter))

    changed = 0
    failures: list[BulkOutcome] = []
    removed: set[str] = set()  # soft-deleted by the patch: published as removals
    inner = options.merge(consistency="eventual")  # one refresh at the end

    def apply(hits: list[FindHit[Any]]) -> list[str]:
        nonlocal changed
        pendings = []
        for hit in hits:
            if seen is not None:
                seen.add(hit.id)
            pending = _hit_pending(ctx, info, hit, patch)
            if pending is not None:
                pendings.append(pending)
        if not pendings:
            return []
        outcomes: list[BulkOutcome] = []
        write_documents(ctx, pendings, inner, outcomes=outcomes)
        done = changed_ids(outcomes)
        changed += len(done)
        gone = removed_ids(info, outcomes)
        removed.update(gone)
        if notify_ids is None:
            announce(ctx, info, done, options, removed=gone)
        # 409: changed since the scan; 404 (Elasticsearch's answer to an update at the
        # version of a document deleted since): gone. Both are looked up again, and
        # patched only if they (still, or again) match
        again = [o for o in outcomes if o.status in (404, 409)]
        failures.extend(o for o in outcomes if not o.ok and o.status not in (404, 409))
        return [str(o.id) for o in again]

    still = _each_match(listing, filter, options, apply)
    if notify_ids is not None and changed:
        # one per listed id that matched (noop ones included), never one for an id that
        # is not there (missing, or another tenant's)
        listed: list[str | None] = [i for i in notify_ids if seen is None or i in seen]
        announce(ctx, info, listed, options, removed=removed)
    if still:
        raise _kept_changing(listing, "patch_all", "patched", still, changed)
    if failures:
        raise failure_error(failures, [], len(failures) + changed)
    return changed


def explicit_ids(filter: str | Query | None) -> list[str] | None:
    """The ids a ``patch_all`` filter lists explicitly (an ``Ids`` query:
    ``Ids(values=[...])``, ``Q("ids", values=[...])``), in order, once each; ``None`` for
    any other filter. Its ``_update_by_query`` then publishes one message per listed id
    (the answer does not say which matched: an id that matched nothing is published too),
    as the reference's ``PatchAllAsync`` with explicit ids does, instead of one
    ``id=None`` message."""
    if not isinstance(filter, Ids):
        return None
    values = filter.to_dict()["ids"].get("values") or []
    if isinstance(values, str):
        values = [values]
    return [str(v) for v in dict.fromkeys(values)] or None


def _hit_pending(
    ctx: Context, info: ModelInfo, hit: FindHit[Any], patch: Patch
) -> PendingWrite | None:
    """The write of ``patch`` for one scanned hit, at the hit's version, through the
    alias of the hit's index (to its fence when conditioned: the scanned version means
    something in that index only); ``None``: a client-side no-op."""
    state = hit.document._esm_state
    source = state.original if state is not None else {}
    if isinstance(patch, PartialPatch | ScriptPatch):
        body = update_body(ctx, info, patch, source)
        return update_pending(info, patch, hit.id, body, hit.index, hit.version, source)
    return client_side_pending(ctx, info, patch, hit.id, hit.index, source, hit.version)


def remove_all(listing: Listing, filter: str | Query | None, options: Options) -> int:
    """See the module docstring: ``listing`` searches the matches; the deletes take its
    context and model."""
    ctx, info = listing.ctx, listing.info
    listened = any(signals.has_receivers(s, info.cls) for s in _REMOVE_SIGNALS)
    if not listened and not _batched(listing, options):
        query = listing.request(filter, _scan_options(options), {}).query_body()
        return ByQuery(ctx, info, options).delete(query)

    removed = 0
    inner = options.merge(consistency="eventual")

    def apply(hits: list[FindHit[Any]]) -> list[str]:
        nonlocal removed
        pendings = [PendingWrite("remove", hit.document, info, guard=hit.version) for hit in hits]
        try:
            removed += len(write_documents(ctx, pendings, inner))
        except (BulkWriteError, DocumentError) as exc:
            removed += len(exc.succeeded)
            conflicts = [str(f.id) for f in exc.failures if f.status == 409]
            if len(conflicts) != len(exc.failures):
                raise
            return conflicts
        return []

    still = _each_match(listing, filter, options, apply)
    if still:
        raise _kept_changing(listing, "remove_all", "removed", still, removed)
    return removed


def _kept_changing(
    listing: Listing, call: str, done: str, still: list[str], count: int
) -> VersionConflictError:
    """The error for documents that still conflicted after every retry round."""
    return VersionConflictError(
        f"{call} on {listing.info.name}: {len(still)} document(s) kept changing "
        f"concurrently and were not {done} ({count} were)",
        ids=still,
        index=listing.spec.alias,
        error_type="version_conflict_engine_exception",
    )
