"""Scanning every match of a search, page by page, in a point in time: ``batch_process``
and the batch paths of ``patch_all``/``remove_all``.

What is sent: ``POST /<alias>/_pit?keep_alive=K`` (a time-series model: ``GET
/_alias/<umbrella>``, then the point in time on its partitions' dated aliases with
``ignore_unavailable=true``, :mod:`esmapper.indexes._pit_target`; the same names after a
``partitions=`` range), then one ``POST /_search`` per page
with ``"pit": {"id", "keep_alive": K}`` (so every page extends the point in time by ``K``
from that request), sorted by the caller's sort plus ``id`` and continued with
``search_after``; ``DELETE /_pit`` after the last page, and also when the callback stops
the scan (returns ``False``) or raises.

Over several time-series partitions the scan is one point in time over all of them: pages
follow the sort across partitions (``id`` order by default; ``sort="created_utc"`` or the
model's ``date_field`` gives the date order), and a ``search_after`` token is the sort
values of the last hit, valid across partition boundaries.

A point in time can still be lost between two pages (a page took longer than ``K``, it
was closed, its index deleted): the next page request raises
:class:`~esmapper.errors.SnapshotExpiredError`. Then:

- ``reopen=False`` (``batch_process``): raised, with the documents and pages delivered
  and the last sort value / ``search_after`` token, so the caller decides. Continuing by
  itself would not be the run the caller asked for: the callback's effects are unknown to
  us, and a new point in time shows documents written since the scan began (and, with a
  sort on a field that changed meanwhile, can put a document on the other side of the
  cursor: skipped, or given to the callback twice).
- ``reopen=True`` (``patch_all``/``remove_all``, whose writes are conditioned on the
  version the scan saw): a new point in time is opened and the scan continues after the
  last hit delivered. In ``id`` order no document is delivered twice and none that still
  matches is skipped; documents after the cursor are seen as they are now (changed ones
  at their new version, new ones included, deleted ones not). Only a point in time that
  delivered at least one page is replaced (each replacement moves the cursor forward),
  at most :data:`MAX_REOPENS` times per scan; after that the error is raised, with the
  progress of the whole scan.

Every page must be answered by every shard: each search asks for a complete answer
(``allow_partial_search_results=false``) and a page some shards did not answer anyway
raises :class:`~esmapper.errors.PartialResultsError` (its point in time closed), never a
page that silently misses their documents (a ``remove_all`` or ``patch_all`` would skip
them, a ``batch_process`` callback never see them). Nothing after the pages delivered
was given to ``on_page``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
from elasticsearch.dsl import Q
from elasticsearch.dsl.query import Query

from esmapper._pit import expired_error, release
from esmapper._search import SearchRequest
from esmapper.errors import SnapshotExpiredError
from esmapper.options import Options, Snapshot
from esmapper.results import FindResults, decode_token

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.indexes.spec import IndexSpec
    from esmapper.model.info import ModelInfo

__all__ = ["MAX_REOPENS", "Listing", "scan"]

log = logging.getLogger("esmapper.repository")

#: How many lost points in time one ``reopen=True`` scan replaces before it gives up.
MAX_REOPENS: Final = 10


@attrs.frozen(slots=True)
class Listing:
    """The searches of one model as a repository makes them, and what a scan or a
    by-query write needs besides: the context, the model, its index spec, and ``scope``,
    a clause every search of the listing is restricted to (a custom-field definitions
    repository sees only its entity type). Sends nothing by itself."""

    ctx: Context
    info: ModelInfo
    spec: IndexSpec
    scope: Query | None = None

    def request(
        self, filter: str | Query | None, options: Options, search_args: Mapping[str, Any]
    ) -> SearchRequest:
        """The compiled search of ``filter`` under ``options`` (``search_args``: the
        search's own keywords, those of ``find``), within :attr:`scope`. Raises
        QueryValidationError before anything is sent."""
        request = SearchRequest(self.ctx, self.info, options, filter=filter, **search_args)
        scope = self.scope
        if scope is not None:
            query = request.query
            request.query = scope if query is None else Q("bool", filter=[scope], must=[query])
        return request


def scan(
    listing: Listing,
    filter: str | Query | None,
    on_page: Callable[[FindResults[Any]], bool | None],
    options: Options,
    *,
    limit: int,
    snapshot: Snapshot = True,
    reopen: bool = False,
    **search_args: Any,
) -> int:
    """Call ``on_page`` with each page of results (at most ``limit`` hits) until they run out or it
    returns ``False``; returns the number of hits delivered. ``snapshot`` is the keep-alive
    (see :func:`esmapper._pit.keep_alive`); each page is ``listing``'s search under
    ``options`` with the other keywords of ``find`` in ``search_args`` (a ``search_after`` token
    starts after it). Raises
    :class:`~esmapper.errors.SnapshotExpiredError` as the module docstring says, and
    whatever ``on_page`` raises."""
    after = search_args.pop("search_after", None)
    last_sort = None if after is None or after is True else decode_token(after)
    delivered = pages = reopened = 0
    while True:
        try:
            # every page complete (allow_partial_search_results=false): no match skipped
            paging = {
                "limit": limit,
                "snapshot": snapshot,
                "search_after": after,
                "complete_only": True,
            }
            results = listing.request(filter, options, {**search_args, **paging}).find()
        except SnapshotExpiredError as exc:  # a new point in time lost at once: no progress
            raise _so_far(listing, exc, delivered, pages, last_sort) from exc
        try:
            while results:
                stop = on_page(results) is False
                pages += 1
                delivered += len(results)
                last_sort = results._last_sort()
                if stop:
                    return delivered
                try:
                    if not results.next_page():
                        return delivered
                except SnapshotExpiredError as exc:
                    results.pit_id = None  # gone: nothing to close
                    if not reopen or reopened >= MAX_REOPENS:
                        raise _so_far(listing, exc, delivered, pages, last_sort) from exc
                    reopened += 1
                    log.warning(
                        "%s scan: the point in time was lost after %d page(s) (%s); "
                        "continuing after %r in a new one",
                        listing.info.name,
                        pages,
                        exc.reason,
                        last_sort,
                    )
                    after = last_sort
                    break
            else:
                return delivered
        finally:
            _close(listing, results)


def _close(listing: Listing, results: FindResults[Any]) -> None:
    """Close the point in time of a scan that ends before its last page."""
    if results.pit_id is not None:
        release(listing.ctx.client, results.pit_id)
        results.pit_id = None


def _so_far(
    listing: Listing,
    exc: SnapshotExpiredError,
    delivered: int,
    pages: int,
    last_sort: list[Any] | None,
) -> SnapshotExpiredError:
    """``exc`` with the progress of the whole scan (it may span several points in time)."""
    return expired_error(
        listing.info.name,
        keep_alive=exc.keep_alive,
        processed=delivered,
        pages=pages,
        last_sort=last_sort,
        index=exc.index,
        error_type=exc.error_type,
        reason=exc.reason,
    )
