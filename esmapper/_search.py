"""Building and running searches for one model: the only place paging limits, the sort
tiebreaker, source filtering and version retrieval are applied to reads, and where the
model's features meet a search (:mod:`esmapper._features`: ``search_catalog`` and
``compile_search`` while it compiles, ``search`` for its clauses, ``search_targets`` for
its point in time); it names none of them.

A sorted search (an explicit ``sort``, search-after paging, or ``snapshot=`` which pages
through a point in time) ends with the document ``id`` ascending, and a
hit's ``sort`` holds only the sort's values (not the ``_shard_doc`` tiebreaker
Elasticsearch adds inside a point in time, whose values mean nothing in another one), so
``hit.sort`` or a ``search_after_token`` continues at the same place in a live search or a
new point in time.

Whether an answer is complete (every shard answered in time) is decided by
:mod:`esmapper._shards`: a page, count, ``exists`` or aggregation that some shards did not
answer raises :class:`~esmapper.errors.PartialResultsError` (carrying what the others
answered) unless the call passed ``partial_results=True`` (or the mapper's
``partial_results`` default says so): then it is returned marked ``partial``, with its
``shards``. A scan that decides writes (``complete_only``) asks the server for a complete
answer and never takes a partial one. A partial page is never cached.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from elasticsearch import Elasticsearch, NotFoundError
from elasticsearch.dsl.query import Query

from esmapper import _gcpause as _gc
from esmapper import signals
from esmapper._features import check_call_options
from esmapper._limits import applied
from esmapper._pit import (
    PitTarget,
    context_reason,
    expired_error,
    is_context_missing,
    keep_alive,
    lost_shards,
    release,
)
from esmapper._raw_answers import RawJson, answer, decode_search, parse
from esmapper._search_answers import cached_page, hydrate_hit, page_entry
from esmapper._search_answers import results as read_results
from esmapper._server_mapping import server_fields
from esmapper._shards import partial_error, sent, shards_of
from esmapper.errors import PartialResultsError, QueryValidationError, SnapshotExpiredError
from esmapper.options import Options
from esmapper.query import (
    Aggregations,
    compile_aggregations,
    compile_filter,
    compile_highlight,
    compile_sort,
    merge_source_filter,
    parse_aggregations,
)
from esmapper.query._dsl_aggs import AggregationsSpec
from esmapper.query.fields import FieldSelection, named_fields
from esmapper.query.highlight import HighlightSpec, highlight_body, needs_version
from esmapper.query.sort import SortSpec, named_sort, sorts_on_id
from esmapper.results import Count, FindResults, Shards, decode_token
from esmapper.signals import QueryContext

if TYPE_CHECKING:
    from esmapper._context import Context
    from esmapper.model.info import ModelInfo

__all__ = [
    "MAX_LIMIT",
    "SEARCH_OPTIONS",
    "SearchRequest",
    "is_index_missing",
    "refresh_index",
]

log = logging.getLogger("esmapper.query")

MAX_LIMIT = 10_000
DEFAULT_LIMIT = 10
#: The keyword arguments of a search besides the per-call options (``Options``).
SEARCH_OPTIONS = (
    "aggregations",
    "excludes",
    "highlight",
    "includes",
    "limit",
    "page",
    "partial_results",
    "partitions",
    "search_after",
    "snapshot",
    "sort",
    "total",
)
#: What the error of a partial answer to a user's read suggests.
_ACCEPT = (
    "pass partial_results=True to take what the other shards answered (results.partial, "
    "results.shards), or search again once every shard is available"
)
#: The field every sorted search ends with (ascending) as a tiebreaker, so that any hit's
#: ``sort`` values can be passed as ``search_after``.
TIEBREAKER_FIELD = "id"


def is_index_missing(exc: NotFoundError) -> bool:
    return exc.error == "index_not_found_exception"


def refresh_index(client: Elasticsearch, index: str) -> None:
    """Refresh ``index`` (``POST /<index>/_refresh``) so that what was written is
    searchable; a missing index: nothing to refresh."""
    with contextlib.suppress(NotFoundError):
        client.indices.refresh(index=index)


class SearchRequest:
    """A compiled search: validated before anything is sent (QueryValidationError).

    The user's filter is the scored part of the query (``bool.must``); the clauses of the
    model's features (a soft-delete mode, recently deleted ids, a tenant) go in
    ``filter``/``must_not`` and never change a score. A sorted search (an explicit
    ``sort``, or search-after paging) always ends with the mapped ``id`` ascending as a
    tiebreaker, so the ``sort`` values of any hit continue the paging
    (``search_after=hit.sort``). Without a sort, hits come best first and carry their
    ``score``.

    ``snapshot`` (``True``, a keep-alive like ``"5m"`` or a ``timedelta``; see
    :func:`esmapper._pit.keep_alive`) pages through a point in time: ``find`` opens it
    (``POST /<alias>/_pit?keep_alive=K``; for a time-series model on its partitions named
    one by one, with ``ignore_unavailable=true``: :meth:`pit_target`, so
    the order, the total and a ``search_after`` token are those of one search over every
    partition), every page request sends ``"pit": {"id", "keep_alive": K}`` (extending
    it), and it is closed (``DELETE /_pit``) after the last page. A page request whose
    point in time is gone raises :class:`~esmapper.errors.SnapshotExpiredError` with the
    pages and documents delivered before and the last sort value.

    ``partial_results`` (``None``: the mapper's default, ``False`` unless
    ``Mapper(partial_results=True)``): whether an answer some shards did not give is
    returned (marked ``partial``) instead of raising
    :class:`~esmapper.errors.PartialResultsError`. ``complete_only`` (esmapper's own scans
    that decide writes): every search asks the server for a complete answer
    (``allow_partial_search_results=false``) and a partial one always raises.
    """

    def __init__(
        self,
        ctx: Context,
        info: ModelInfo,
        options: Options,
        *,
        filter: str | Query | None = None,
        sort: SortSpec = None,
        aggregations: AggregationsSpec = None,
        limit: int | None = None,
        page: int | None = None,
        search_after: Any = None,
        includes: FieldSelection = None,
        excludes: FieldSelection = None,
        snapshot: bool | str | _dt.timedelta | None = False,
        partitions: tuple[Any, Any] | None = None,
        highlight: HighlightSpec = None,
        total: bool | int | None = None,
        partial_results: bool | None = None,
        complete_only: bool = False,
        source_defaults: bool = False,
        session_tenant: str | None = None,
    ) -> None:
        self.ctx = ctx
        self.info = info
        self.options = options
        #: the tenant of the session searching (``None``: not a session's, or none): it
        #: scopes the models a query reaches beyond this one (a join query's inner model
        #: with tenants, when this model has none: :mod:`esmapper._join`)
        self.session_tenant = session_tenant
        points = info.points
        check_call_options(info, options)  # tenant= of a model no feature gives one
        #: the names the search's fields resolve in (a feature may widen it: a tenant's
        #: custom fields), and the inputs as given (a feature may rewrite them for it)
        self.catalog = info.catalog
        # typed field references (``Employee.name``, ``-Employee.age``) as names
        includes = named_fields(includes, info.cls, keyword="includes")
        excludes = named_fields(excludes, info.cls, keyword="excludes")
        sort = named_sort(sort, info.cls)
        self.filter, self.includes, self.excludes = filter, includes, excludes
        #: the hits may hold part of each ``_source`` whatever ``includes``/``excludes``
        #: say (an async search read by id: the submit's source filter is not known)
        self.source_unknown = False
        #: the period ``partitions=`` asks for, and the names a feature pruned the search
        #: to (``None``: the model's alias)
        self.partitions = partitions
        self.targets: list[str] | None = None
        #: :meth:`find` served the page cached under ``cache_key``
        self.served_cached = False
        #: the reservation of ``cache_key`` for the page :meth:`find` reads (see there)
        self._reserved: Any = None
        #: who a page cached under ``cache_key`` is for (:func:`page_entry`)
        self.scope: str | None = None
        #: renames the keys of a hit's ``highlight`` (a feature's slots by their names)
        self.name_highlight: Callable[[dict[str, list[str]]], dict[str, list[str]]] | None
        self.name_highlight = None
        #: names the filter language takes as ``name:(expr)``, compiled by the function
        #: (a feature's: the other side of a parent/child join)
        self.subqueries: dict[str, Callable[[str], Any]] = {}
        for hook in points.search_catalog:
            hook(ctx, self)
        # a name the catalog does not declare: the fields the server maps (read only then)
        self.catalog = self.catalog.with_server(server_fields(ctx, info))
        catalog = self.catalog
        index = info.index
        assert index is not None
        compiled = compile_filter(
            self.filter,
            catalog,
            default_fields=index.default_search_fields,
            subqueries=self.subqueries,
        )
        #: the fields the filter names (a feature may refuse one it filters itself)
        self.filter_fields = compiled.fields
        self.query = compiled.query
        self.sort = compile_sort(sort, catalog)
        self.aggs = compile_aggregations(aggregations, catalog)
        self.highlight = compile_highlight(highlight, catalog)
        self.limit = DEFAULT_LIMIT if limit is None else limit
        if not isinstance(self.limit, int) or isinstance(self.limit, bool):
            raise QueryValidationError(
                f"limit must be a number of documents (an int from 0 to {MAX_LIMIT}), "
                f"not {limit!r} ({type(limit).__name__})",
                field="limit",
            )
        if self.limit < 0 or self.limit > MAX_LIMIT:
            raise QueryValidationError(
                f"limit={limit!r} is out of range: 0 to {MAX_LIMIT} (use search_after for "
                "deeper paging)",
                field="limit",
            )
        self.total = True if total is None else total
        if not isinstance(self.total, bool | int) or self.total < 0:
            raise QueryValidationError(
                f"total={total!r} must be True (count every match), False (count no more "
                "than paging needs) or a number of matches to count up to",
                field="total",
            )
        #: the first page's ``(total, exact)``: later search-after pages do not count
        self.counted: tuple[int, bool] | None = None
        accept = ctx.partial_results if partial_results is None else partial_results
        if not isinstance(accept, bool):
            raise QueryValidationError(
                f"partial_results={partial_results!r} must be True, False or None (the "
                "mapper's default)",
                field="partial_results",
            )
        #: an answer some shards did not give is returned (marked) instead of refused
        self.accept_partial = accept and not complete_only
        #: the server is asked for complete answers (and a partial one always raises)
        self.complete_only = complete_only
        self.page = 1 if page is None else page
        if not isinstance(self.page, int) or self.page < 1:
            raise QueryValidationError(f"page={page!r} must be an integer >= 1", field="page")
        self.keep_alive = keep_alive(snapshot)
        self.snapshot = self.keep_alive is not None
        self.search_after_mode = search_after is not None or self.snapshot
        self.search_after = (
            None if search_after is None or search_after is True else decode_token(search_after)
        )
        if self.search_after_mode and page not in (None, 1):
            raise QueryValidationError(
                "page cannot be combined with search_after paging", field="page"
            )
        if not self.search_after_mode and self.page * self.limit > MAX_LIMIT:
            raise QueryValidationError(
                f"page {self.page} of {self.limit} goes past {MAX_LIMIT} results; use "
                "search_after paging",
                field="page",
            )
        if self.search_after_mode and not self.snapshot:
            _warn_unstable_keys(info, self.sort)
        if (
            (self.sort or self.search_after_mode)
            and TIEBREAKER_FIELD in catalog
            and not sorts_on_id(self.sort)
        ):
            self.sort = [*self.sort, {TIEBREAKER_FIELD: {"order": "asc"}}]
        if self.search_after is not None and len(self.search_after) != len(self.sort):
            raise QueryValidationError(
                f"search_after has {len(self.search_after)} value(s) but the sort has"
                f" {len(self.sort)} key(s) ({_sort_keys(self.sort)}, the id tiebreaker"
                " included); pass hit.sort or results.search_after_token of a page sorted"
                " the same way",
                field="search_after",
            )
        inc, exc = merge_source_filter(
            self.includes, self.excludes, catalog=catalog, **_source_rules(info, source_defaults)
        )
        self.includes, self.excludes = inc, exc
        # how far search-after paging got (for SnapshotExpiredError)
        self.pages_read = 0
        self.documents_read = 0
        self.last_sort: list[Any] | None = self.search_after
        #: builds each hit's ``document`` from the raw hit and its version instead of the
        #: model (``repo.find_as`` projections); ``None``: the model's documents
        self.project: Callable[[dict[str, Any], str | None], Any] | None = None
        for hook in points.compile_search:
            hook(ctx, self)

    def query_body(self) -> dict[str, Any]:
        """The ``query`` part: the user's filter, scored (``bool.must``), plus the clauses
        of the model's features (the ``search`` point: a soft-delete mode, a tenant), not
        scored: ``filter`` clauses and ids to hide (``must_not``)."""
        own: list[dict[str, Any]] = []
        hidden: list[str] = []
        for hook in self.info.points.search:
            clauses, ids = hook(self.ctx, self.options)
            own.extend(clauses)
            hidden.extend(ids)
        user = None if self.query is None else self.query.to_dict()
        if not own and not hidden:
            return {"match_all": {}} if user is None else user
        query: dict[str, Any] = {}
        if user is not None:
            query["must"] = [user]
        if own:
            query["filter"] = own
        if hidden:
            query["must_not"] = [{"ids": {"values": hidden}}]
        return {"bool": query}

    def body(self, *, size: int | None = None, page: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "query": self.query_body(),
            "size": self.limit if size is None else size,
            "track_total_hits": self._track_total(self.page if page is None else page),
            "seq_no_primary_term": True,
        }
        if self.sort:
            body["sort"] = self.sort
        if self.aggs:
            body["aggs"] = self.aggs
        if self.highlight is not None:  # its form may depend on the server's version
            version = self.ctx.server_version() if needs_version(self.highlight) else None
            body["highlight"] = highlight_body(self.highlight, version)
        page = self.page if page is None else page
        if not self.search_after_mode and page > 1:
            body["from"] = (page - 1) * self.limit
        if self.includes is not None or self.excludes is not None:
            source: dict[str, Any] = {}
            if self.includes is not None:
                source["includes"] = self.includes
            if self.excludes is not None:
                source["excludes"] = self.excludes
            body["_source"] = source
        return body

    def _track_total(self, page: int) -> bool | int:
        """``track_total_hits`` of page ``page``: how far Elasticsearch counts the matches.

        ``total=True`` (the default) counts every match on the first page and on every
        page of ``page=`` paging (``results.total`` is exact there). A later page of
        search-after or snapshot paging never counts (``false``): the pages are linked by
        ``search_after`` and ``has_more`` by one hit more, and ``results.total`` keeps the
        first page's count. ``total=N`` counts up to N; ``total=False`` counts no further
        than ``page=`` paging needs to know whether another page exists (``page * limit +
        1``), and nothing in search-after paging: ``results.total`` is then a lower bound
        (``results.total_exact`` is false)."""
        if self.search_after_mode and page > 1:
            return False
        wanted = self.total
        if wanted is True:
            return True
        needed = 0 if self.search_after_mode else page * self.limit + 1
        count = max(int(wanted), needed)
        return count if count else False

    # -- running ---------------------------------------------------------------------

    @property
    def partial_source(self) -> bool:
        """Whether the hits may hold part of each document's ``_source`` (``includes``,
        ``excludes``, or :attr:`source_unknown`): the documents read are then partial, a
        save writes only the fields that changed."""
        return self.includes is not None or self.excludes is not None or self.source_unknown

    @property
    def _peeks(self) -> bool:
        """Whether a page of ``search_after`` paging asks for one hit more than ``limit``:
        then ``has_more`` is whether that hit came back, so the last page says ``False``
        even when it is full (a page of :data:`MAX_LIMIT` cannot: ``from + size`` is
        bounded by ``index.max_result_window``)."""
        return bool(self.search_after_mode) and 0 < self.limit < MAX_LIMIT

    def _refresh_for_consistency(self) -> None:
        if self.options.consistency in ("immediate", "wait"):
            refresh_index(self.ctx.client, self.ctx.spec(self.info.cls).alias)

    @property
    def target(self) -> str:
        """The alias searched, or the dated partitions ``partitions=`` pruned it to."""
        if self.targets is not None:
            return ",".join(self.targets)
        return self.ctx.spec(self.info.cls).read_target

    @property
    def _allow_partial(self) -> bool | None:
        """The search's ``allow_partial_search_results``: ``False`` for a scan that decides
        writes, ``True`` when partial answers are accepted, else the cluster's default (a
        partial answer is then refused here, carrying what the other shards answered)."""
        if self.complete_only:
            return False
        return True if self.accept_partial else None

    def _raw_reader(self) -> Elasticsearch | None:
        """The client copy a page of documents is read through as bytes
        (:attr:`~esmapper._services.Services.raw_client`: its hits hydrated from their
        ``_source`` bytes, :mod:`esmapper._search_answers`), or ``None``: read through the
        client (a projection, aggregations, a page stored under ``cache_key``, an
        ``after_query`` receiver: they take the parsed answer)."""
        if self.project is not None or self.aggs:
            return None
        if self.options.cache_key is not None and self.ctx.cache_of(self.info) is not None:
            return None
        if signals.has_receivers(signals.after_query, self.info.cls):
            return None
        return self.ctx.raw_client

    def _send(
        self,
        body: dict[str, Any],
        pit_id: str | None,
        raw: Elasticsearch | None = None,
        *,
        via: Callable[..., Any] | None = None,
    ) -> dict[str, Any] | None:
        """Send one search (through ``before_query``/``after_query``); ``None`` when the
        index does not exist yet. The server's refusal of a partial answer raises
        :class:`~esmapper.errors.PartialResultsError`. ``raw``: the client copy to send it
        on (:meth:`_raw_reader`): the answer's hits are then
        :class:`~esmapper._raw_answers.Hit` s (their ``_source`` as bytes), its error
        answers raised as the client raises them. ``via``: the client method that sends
        the search instead of ``client.search``, with the same parameters (an async
        search's submit, :mod:`esmapper._async_search`): its answer is returned as it
        came, ``after_query`` given the search response it holds (``response``)."""
        alias = self.target
        pruned = self.targets is not None
        context = QueryContext(self.info.cls, body, self.options, alias)
        if signals.has_receivers(signals.before_query, self.info.cls):
            signals.before_query.send(self.info.cls, query=context, options=self.options)
            body = context.body
        level = self.options.query_log_level
        log.log(logging.DEBUG if level is None else level, "search %s %s", alias, body)
        client, partial = self.ctx.client, self._allow_partial
        if pit_id is not None:  # the point in time names the indexes
            pit = {"id": pit_id, "keep_alive": self.keep_alive}
            params: dict[str, Any] = {"body": {**body, "pit": pit}}
        else:
            listed = True if pruned else None
            params = {"index": alias, "body": body}
            params.update(ignore_unavailable=listed, allow_no_indices=listed)
        if raw is not None:
            client = raw
        search = client.search if via is None else via
        try:
            response = sent(
                lambda: answer(lambda: search(**params, allow_partial_search_results=partial)),
                what=f"the search of {alias}",
                index=alias,
                remedy=self._remedy,
            )
        except NotFoundError as exc:
            if pit_id is not None and is_context_missing(exc):
                raise self._expired(context_reason(exc)) from exc
            if is_index_missing(exc):
                return None
            raise
        except PartialResultsError:
            if pit_id is not None:  # the paging ends here
                release(self.ctx.client, pit_id)
            raise
        answered: Any = response.body
        result: dict[str, Any] = (
            (decode_search(answered) or parse(answered)) if type(answered) is RawJson else answered
        )
        lost = lost_shards(result) if pit_id is not None else None
        if lost is not None:  # some shards answered: their hits would be missing silently
            release(self.ctx.client, str(result.get("pit_id") or pit_id))
            raise self._expired(lost)
        if signals.has_receivers(signals.after_query, self.info.cls):
            searched = result if via is None else result.get("response") or {}
            signals.after_query.send(
                self.info.cls, query=context, result=searched, options=self.options
            )
        return result

    @property
    def _remedy(self) -> str:
        return "run it again once every shard is available" if self.complete_only else _ACCEPT

    def _settle(self, shards: Shards, what: str, results: Any) -> None:
        """Raise :class:`~esmapper.errors.PartialResultsError` (carrying ``results``) when
        ``shards`` did not all answer and the call does not accept that."""
        if shards.complete or self.accept_partial:
            return
        raise partial_error(
            shards, what=f"{what} of {self.target}", index=self.target, results=results,
            remedy=self._remedy,
        )  # fmt: skip

    def count(self) -> Count:
        """Every match, counted exactly (``track_total_hits: true``): a ``size=0`` search;
        a :class:`Count` that says how many shards answered (partial ones: see
        :meth:`_settle`)."""
        self._refresh_for_consistency()
        response = self._send({**self.body(size=0), "track_total_hits": True}, None)
        if response is None:
            return Count(0)
        shards = shards_of(response)
        count = Count(int(response["hits"]["total"]["value"]), shards)
        self._settle(shards, "the count", count)
        return count

    def exists(self) -> bool:
        """Whether anything matches: a ``size=0`` search that stops at the first match on
        each shard (``terminate_after=1``). A match on the shards that answered is a match
        (``True``, even when others failed); no match with shards missing is refused
        unless partial answers are accepted (then ``False``)."""
        self._refresh_for_consistency()
        body = {**self.body(size=0), "terminate_after": 1, "track_total_hits": True}
        response = self._send(body, None)
        if response is None:
            return False
        if int(response["hits"]["total"]["value"]) > 0:
            return True
        self._settle(shards_of(response), "the exists search", False)
        return False

    def aggregate_only(self) -> Aggregations:
        """The aggregations of the matches (the matches are not counted): a ``size=0``
        search; top hits are documents of the model, as in :meth:`find`; ``shards`` says
        how many shards answered (partial ones: see :meth:`_settle`)."""
        self._refresh_for_consistency()
        response = self._send({**self.body(size=0), "track_total_hits": False}, None)
        if response is None:
            return parse_aggregations(None, request=self.aggs)
        shards = shards_of(response)
        # top hits as models, as in find
        hydrate = functools.partial(hydrate_hit, self.info)
        parsed = parse_aggregations(
            response.get("aggregations"), hydrate_hit=hydrate, request=self.aggs
        )
        aggregations = attrs.evolve(parsed, shards=shards)
        self._settle(shards, "the aggregation", aggregations)
        return aggregations

    def find(self) -> FindResults[Any]:
        key = self.options.cache_key
        documents = None if key is None else self.ctx.documents_of(self.info)
        if key is not None and documents is not None:
            entry = documents.client.get(key)
            if self.options.read_cache is not False:
                # the page stored under the key for this search's scope (or none) only
                cached = cached_page(entry, self.scope)
                if cached is not None:
                    shards = shards_of(cached)
                    if shards.complete:  # never stored partial; one that is anyway: a miss
                        self.served_cached = True
                        return read_results(self, cached, self.page, None, shards)
            # reserved before the search: a write that drops the key meanwhile (a hook)
            # refuses this search's page (the by-id reads' rule)
            self._reserved = documents.reserve_key(key, entry)
        try:
            self._refresh_for_consistency()
            pit_id = None
            if self.keep_alive is not None:
                pit_id = self._open_pit()
                if pit_id is None:  # no index (yet), no partition: nothing matches
                    return FindResults(hits=[], total=0, page=1, has_more=False, limit=self.limit)
            return self._page(self.page, self.search_after, pit_id)
        finally:
            if self._reserved is not None and documents is not None and key is not None:
                documents.release(key, self._reserved)  # nothing stored: not kept reserved
                self._reserved = None

    def pit_target(self) -> PitTarget | None:
        """Where the point in time of ``snapshot=`` paging (or a by-query request over
        is opened: the feature implementing the ``search_targets``
        point (a time-series model's partitions, named one by one: it may send ``GET
        /_alias/<umbrella>``), else :attr:`target` (the names ``partitions=`` pruned the
        search to, a list esmapper made, or the model's alias). ``None``: there is
        nothing to search (no partition)."""
        hooks = self.info.points.search_targets
        if hooks:
            found: PitTarget | None = hooks[0](self.ctx, self.targets)
            return found
        return PitTarget(self.target, listed=self.targets is not None)

    def _open_pit(self) -> str | None:
        """Open the point in time of ``snapshot=`` paging: ``POST /<names>/_pit?keep_alive=K``
        on the names :meth:`pit_target` chooses (a list esmapper made is sent with
        ``ignore_unavailable=true``, as the plain search of ``partitions=`` is). Its id,
        or ``None`` when there is nothing to open (the index or every partition is
        missing: 404 ``index_not_found_exception``)."""
        assert self.keep_alive is not None
        target = self.pit_target()
        if target is None:
            return None
        try:
            pit = self.ctx.client.open_point_in_time(
                index=target.index,
                keep_alive=self.keep_alive,
                ignore_unavailable=True if target.listed else None,
            )
        except NotFoundError as exc:
            if is_index_missing(exc):
                return None
            raise
        return str(pit["id"])

    def page_body(self, page: int, after: list[Any] | None) -> dict[str, Any]:
        """The body of the search of page ``page`` (``after``: the sort values it continues
        after, in search-after paging): :meth:`body`, one hit more when the page peeks
        (:attr:`_peeks`). Sends nothing."""
        body = self.body(page=page)
        if self._peeks:  # one hit more than the page: whether another page exists
            body["size"] = self.limit + 1
        if self.search_after_mode and after is not None:
            body["search_after"] = after
        return body

    @_gc.paused()  # the parsed response and the documents all live on: no GC passes
    def _page(self, page: int, after: list[Any] | None, pit_id: str | None) -> FindResults[Any]:
        body = self.page_body(page, after)
        response = self._send(body, pit_id, self._raw_reader())
        if response is None:
            return FindResults(hits=[], total=0, page=page, has_more=False, limit=self.limit)
        shards = shards_of(response)
        key, token = self.options.cache_key, self._reserved
        documents = None if key is None else self.ctx.documents_of(self.info)
        # a partial page is never cached; only the page this search reserved the key for
        if (
            token is not None
            and key is not None
            and documents is not None
            and page == self.page
            and shards.complete
        ):
            seconds = documents.seconds(self.ctx.cache_ttl(self.info, self.options))
            if seconds is None or seconds > 0:  # (an expires_at past stores nothing)
                entry = page_entry(response, self.scope)
                documents.client.compare_and_set(key, token, entry, seconds)
                self._reserved = None
        results = read_results(self, response, page, pit_id, shards)
        if not shards.complete and not self.accept_partial:
            if results.pit_id is not None:  # the paging ends here
                release(self.ctx.client, results.pit_id)
                results.pit_id = None
            self._settle(shards, f"page {page} of the search", results)
        if results:
            self.pages_read += 1
            self.documents_read += len(results)
            self.last_sort = results._last_sort()
        return results

    def _expired(self, reason: str) -> SnapshotExpiredError:
        return expired_error(
            self.info.name,
            keep_alive=str(self.keep_alive),
            processed=self.documents_read,
            pages=self.pages_read,
            last_sort=self.last_sort,
            index=self.target,
            reason=reason,
        )

    def _next(self, current: FindResults[Any]) -> FindResults[Any] | None:
        # a later page runs under the limits of the call that made the search
        with applied(self.options.timeout, self.options.retries):
            return self._next_page(current)

    def _next_page(self, current: FindResults[Any]) -> FindResults[Any] | None:
        if self.search_after_mode:
            after = current._last_sort()
            if after is None:
                return None
            try:
                return self._page(current.page + 1, after, current.pit_id)
            except PartialResultsError:
                current.pit_id = None  # released: the paging ends here
                raise
        if current.page * self.limit >= MAX_LIMIT:
            return None
        return self._page(current.page + 1, None, None)

    def _close_pit(self, pit_id: str) -> None:
        release(self.ctx.client, pit_id)


def _source_rules(info: ModelInfo, source_defaults: bool) -> dict[str, Any]:
    """The ``required`` fields and ``default_excludes`` of ``merge_source_filter`` for a
    search of ``info``'s documents: with ``source_defaults`` (the searches that hand
    documents to the caller: find, find_one, find_as, batch_process, a session's find),
    the model's ``Index.default_excludes`` and ``id`` + ``Index.required_fields``;
    otherwise ``id`` only and no default excludes (the scans behind patch_all and
    remove_all read what they need). Unlike the reference, ``created_utc`` is not
    required by default: a partially loaded document is saved as a partial update, which
    never needs it."""
    index = info.index
    if not source_defaults or index is None:
        return {}
    return {"required": ("id", *index.required_fields), "default_excludes": index.default_excludes}


#: sort keys whose values are not stable between two requests of a live search
_UNSTABLE_KEYS = ("_doc", "_score")


def _warn_unstable_keys(info: ModelInfo, sort: Sequence[dict[str, Any]]) -> None:
    """Log a warning (``esmapper.query``) when live search-after paging sorts on ``_doc`` or
    ``_score``: their values change between requests as segments merge or
    documents change, so a page may repeat or skip hits; a point in time (``snapshot=``)
    freezes them."""
    unstable = [key for entry in sort for key in entry if key in _UNSTABLE_KEYS]
    if unstable:
        log.warning(
            "%s: search_after paging sorted on %s outside a point in time: these values"
            " are not stable between requests, so pages may repeat or skip documents; sort"
            " on fields, or page with snapshot=",
            info.name,
            " and ".join(unstable),
        )


def _sort_keys(sort: Sequence[dict[str, Any]]) -> str:
    return ", ".join(key for entry in sort for key in entry)
