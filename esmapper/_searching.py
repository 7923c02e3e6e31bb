"""The search side of a repository: :meth:`find` and its relatives, which compile a
:class:`~esmapper._search.SearchRequest` under the call's options and send it (one
``_search``, or a point in time paged through), and :meth:`batch_process`, which scans
every match through a point in time. :class:`~esmapper.repository.Repository` inherits
these; they read the model (``info``), the mapper and the repository's default options.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from elasticsearch.dsl.query import Query
from typing_extensions import Unpack

from esmapper import _scan
from esmapper._async_search import AsyncSearch
from esmapper._cache_hooks import add_read
from esmapper._keywords import CountKeywords, FindKeywords, FindOneKeywords, ScanKeywords
from esmapper._limits import limited
from esmapper._projection import projection
from esmapper._search import SEARCH_OPTIONS, SearchRequest
from esmapper._server_mapping import forget
from esmapper.errors import QueryValidationError
from esmapper.options import Options, given, split
from esmapper.query import Aggregations
from esmapper.query._dsl_aggs import AggregationsSpec
from esmapper.query.fields import named_fields
from esmapper.results import Count, FindResults

if TYPE_CHECKING:
    from esmapper._services import Services
    from esmapper.mapper import Mapper
    from esmapper.model import Document
    from esmapper.model.info import ModelInfo

__all__ = ["Searching"]

#: A model: a subclass of :class:`~esmapper.model.Document`.
T = TypeVar("T", bound="Document")
R = TypeVar("R")


def _defaults(repo: Searching[Any]) -> Options:
    """The options (limits included) a repository call runs under when it gives none
    (see ``_limits``)."""
    return repo.defaults


class Searching(Generic[T]):
    """The searches of a repository (see the module docstring)."""

    mapper: Mapper
    #: what the core is given (the mapper's :class:`~esmapper._services.Services`)
    services: Services
    model: type[T]
    info: ModelInfo
    #: the options a call runs under where it gives none
    defaults: Options
    #: a clause every search of the repository is restricted to (``None``: none)
    _scope: Query | None = None

    def options(self, **overrides: Any) -> Options:
        """The repository's default options with ``overrides`` applied."""
        return self.defaults.merge(**overrides)

    def search(
        self, filter: str | Query | None = None, **options: Unpack[FindKeywords]
    ) -> SearchRequest:
        """The compiled :class:`SearchRequest` (validated; nothing is sent yet).

        Takes the keywords of :meth:`find`; an unknown one raises ``TypeError`` listing
        every keyword the call takes.
        """
        return self._request(filter, given(options))

    def _request(
        self, filter: str | Query | None, kwargs: dict[str, Any], *, documents: bool = True
    ) -> SearchRequest:
        """The compiled search of ``filter`` under the call's keywords ``kwargs`` (the
        search's own, those of :meth:`find`, and the options)."""
        search_args = split(kwargs, SEARCH_OPTIONS)
        # the searches that return documents apply Index.default_excludes/required_fields
        search_args["source_defaults"] = documents
        return self._listing().request(filter, self.options(**kwargs), search_args)

    def _listing(self) -> _scan.Listing:
        """This repository's searches as a scan or a by-query write runs them (the
        repository's mapper as their context, its model, spec and scope)."""
        return _scan.Listing(self.services, self.info, self.services.spec(self.model), self._scope)

    def refresh_mapping(self) -> None:
        """Forget the server mapping read for this model: the next filter, sort,
        aggregation, highlight or field selection naming a field the model does not
        declare reads ``GET /<alias>/_mapping`` again, instead of using a read up to a
        minute old. Sends nothing itself; a name the model declares never needs the read
        (see :mod:`esmapper._server_mapping`)."""
        forget(self.services, self.model)

    @property
    def async_search(self) -> AsyncSearch[T]:
        """This repository's async searches (:mod:`esmapper._async_search`): ``submit``
        (the search ``find`` sends, run in the background: ``POST
        /<alias>/_async_search``), ``get`` its page later by id, ``status`` and
        ``delete``; their pages are :class:`FindResults` with ``async_id`` and
        ``is_running``."""
        return AsyncSearch(self)

    @limited(_defaults)
    def find(
        self, filter: str | Query | None = None, **options: Unpack[FindKeywords]
    ) -> FindResults[T]:
        """Search (near-real-time); sends one ``_search`` to the model's alias (a
        point-in-time is opened first for ``snapshot``).

        ``filter`` in Lucene syntax or a ``Q`` object (scored: without ``sort`` the best
        hits come first, with their ``score``); ``sort`` (``"-age name"``, ``{"age":
        "desc"}`` or a list of those; a sorted search ends with the ``id`` tiebreaker, so
        ``search_after=hit.sort`` continues after any hit); ``aggregations`` (an
        expression, ``A(...)`` objects or a dict of named ones); ``highlight`` (field
        names: fragments in ``hit.highlight``); ``limit`` (default 10, max 10,000; ``0``
        for counts and aggregations only); ``page`` (1-based); ``search_after`` (``True``,
        a token from ``results.search_after_token`` or a hit's ``sort`` values);
        ``snapshot`` (page through a point in time: ``True`` keeps it alive 5 minutes
        between page requests, ``"90s"``/``"10m"``/a ``timedelta`` that long; every
        ``next_page()`` extends it); ``includes``/``excludes``; ``partitions=(start,
        end)`` (time-series models: search only the dated partitions of that period);
        ``total`` (how far matches are counted, ``track_total_hits``: ``True``, the
        default, counts every match on the first page and on every ``page=`` page; a
        number ``N`` counts up to N; ``False`` no further than paging needs; later pages
        of search-after and snapshot paging never count again and keep the first page's
        ``results.total``; ``results.total_exact`` is false when the total is a lower
        bound); ``partial_results`` (``True``: a page some shards did not answer is returned,
        ``results.partial`` set and ``results.shards`` saying which failed; default: the
        mapper's ``partial_results``, ``False``); and the options
        (:class:`~esmapper.options.Options`). These keywords are
        :class:`~esmapper._keywords.FindKeywords`.

        Raises QueryValidationError (naming the field or the argument) before sending
        anything, and ``TypeError`` for an unknown keyword; ``next_page()`` of a snapshot
        whose point in time is gone raises :class:`SnapshotExpiredError`. A page some
        shards did not answer (a failed shard, a timeout: Elasticsearch answers it with
        status 200 and the other shards' hits) raises
        :class:`~esmapper.errors.PartialResultsError`, which carries that page, unless
        ``partial_results=True``; such a page is never cached under ``cache_key``.
        """
        request = self._request(filter, given(options))
        return self._cached_hits(request, request.find())

    def _cached_hits(self, request: SearchRequest, results: FindResults[T]) -> FindResults[T]:
        """``results``, after the repository's ``add_to_cache`` hook saw their documents
        when the search is cached (its ``cache_key``, ``cache=True`` or the model's
        default) and its page came from Elasticsearch, whole documents (not
        ``includes``/``excludes``): :func:`esmapper._cache_hooks.add_read`, a dirty read
        unless the search refreshed first."""
        services = self.services
        if not services.custom_keys or self.info.cls not in services.custom_keys:
            return results
        if request.served_cached or request.includes is not None or request.excludes is not None:
            return results
        opts = request.options
        ttl = services.cache_ttl(self.info, opts)
        if ttl is not None and results:
            dirty = opts.consistency == "eventual"
            add_read(services, self.info, self._keyed(results.documents), ttl, dirty_read=dirty)
        return results

    def _keyed(self, documents: list[T]) -> list[T]:
        """The documents of a cached read its ``add_to_cache`` hook is given: those a read
        under the repository's defaults shows (the features' ``visible`` point: a
        soft-deleted one, fetched by ``soft_deletes="all"`` or hidden by the read, is not
        put under a key that the searches hiding it would be served)."""
        hooks = self.info.points.visible
        if not hooks:
            return documents
        rules = [rule for rule in (hook(self.defaults) for hook in hooks) if rule is not None]
        return [doc for doc in documents if all(rule.test(doc) for rule in rules)]

    @limited(_defaults)
    def find_as(
        self,
        result_type: type[R],
        filter: str | Query | None = None,
        **options: Unpack[FindKeywords],
    ) -> FindResults[R]:
        """:meth:`find`, each hit's ``document`` a projection of its ``_source`` into
        ``result_type`` instead of the model: ``dict`` (the ``_source`` as stored), an
        ``em.InnerDoc`` subclass (its own fields and converters) or an attrs class (its
        attributes the model declares, with the model's values; ``id`` from the hit).
        Without ``includes=`` a class asks only for its own fields. Sends one search (and
        one per ``next_page()``); projections are not documents (they cannot be saved).
        Raises QueryValidationError before sending for a bad filter, or a required
        attribute the model does not declare or ``includes`` leave out (see
        :mod:`esmapper._projection`), ``TypeError`` for another ``result_type``."""
        kwargs = given(options)
        includes = named_fields(kwargs.get("includes"), self.info.cls, keyword="includes")
        project, projected = projection(self.info, result_type, includes)
        if projected is not None:
            kwargs["includes"] = projected
        request = self._request(filter, kwargs)
        request.project = project
        return request.find()

    @limited(_defaults)
    def find_one(
        self, filter: str | Query | None = None, **options: Unpack[FindOneKeywords]
    ) -> T | None:
        """The first document :meth:`find` would return, or ``None``. Takes the keywords of
        :meth:`find` but ``limit`` and ``total`` (:class:`~esmapper._keywords.FindOneKeywords`)."""
        # one document: count no further than that (track_total_hits: 2)
        kwargs = {**given(options), "limit": 1, "total": False}
        request = self._request(filter, kwargs)
        results = self._cached_hits(request, request.find())
        return results[0] if results else None

    @limited(_defaults)
    def count(self, filter: str | Query | None = None, **options: Unpack[CountKeywords]) -> Count:
        """The number of matching documents (exact; soft-delete mode applies): one
        ``_search`` with ``size=0``. Takes ``partitions``, ``partial_results`` (as for
        :meth:`find`) and the options (:class:`~esmapper._keywords.CountKeywords`). Raises
        QueryValidationError before sending.

        Returns a :class:`~esmapper.results.Count` (an ``int`` with ``shards`` and
        ``partial``). A count some shards did not answer (a failed shard, a timeout) is
        never returned as if it were exact: it raises
        :class:`~esmapper.errors.PartialResultsError` (``.results``: the lower count), or,
        with ``partial_results=True``, is returned with ``partial`` set."""
        return self._request(filter, given(options), documents=False).count()

    @limited(_defaults)
    def aggregate(
        self,
        filter: str | Query | None = None,
        *old_order: Any,
        aggregations: AggregationsSpec = None,
        **options: Unpack[CountKeywords],
    ) -> Aggregations:
        """Only the aggregations of the documents matching ``filter``: one ``_search`` with
        ``size=0``. ``filter`` comes first, as in :meth:`find`; ``aggregations`` (an
        expression, ``A(...)`` objects or a dict of named ones) is keyword-only; the other
        keywords are those of :meth:`count`.

        Raises ``TypeError`` when ``aggregations`` is missing or a second positional
        argument is given (esmapper 0.1 took ``aggregate(aggregations, filter)``),
        QueryValidationError for a bad filter or aggregation, before sending anything.
        Aggregations some shards did not answer raise
        :class:`~esmapper.errors.PartialResultsError` (carrying them), or with
        ``partial_results=True`` come back with ``partial`` set and ``shards``.
        """
        if old_order or aggregations is None:
            raise TypeError(
                "aggregate() takes the filter as its only positional argument and the"
                " aggregations as a keyword, like find(): aggregate(filter,"
                " aggregations='terms:company_id') (the order was aggregate(aggregations,"
                " filter) before)"
            )
        kwargs = {**given(options), "aggregations": aggregations}
        return self._request(filter, kwargs, documents=False).aggregate_only()

    @limited(_defaults)
    def batch_process(
        self,
        filter: str | Query | None,
        fn: Callable[[list[T]], bool | None],
        batch_size: int = 100,
        **options: Unpack[ScanKeywords],
    ) -> int:
        """Call ``fn`` with batches of matching documents until they run out or ``fn``
        returns ``False``; returns the number of documents given to ``fn``.

        Sends ``POST /<alias>/_pit?keep_alive=K`` (a time-series model: ``GET
        /_alias/<umbrella>`` first, and the point in time names every partition; batches
        follow the sort across partitions), one search per batch (``pit`` with the
        same ``keep_alive``, so each batch extends the point in time; sorted by ``sort``,
        if given, then ``id``; ``search_after`` the previous batch) and ``DELETE /_pit`` at
        the end, also when ``fn`` stops or raises. ``K`` is ``snapshot=`` (``"5m"`` by
        default; ``"30m"``, a ``timedelta``): the longest ``fn`` may take on one batch.
        Other keyword arguments (:class:`~esmapper._keywords.ScanKeywords`) are those of
        :meth:`find`: ``sort``, ``search_after`` (``=token`` to start after a document),
        ``includes``, ``excludes`` and ``partitions``, and the options.

        Raises ``ValueError`` for a ``batch_size`` outside 1..10000 and
        :class:`QueryValidationError` for a bad filter, sort or ``snapshot`` (before
        anything is sent). When the point in time is gone anyway (``fn`` took longer than
        ``K``, or it was closed) raises :class:`SnapshotExpiredError` with ``processed``,
        ``pages`` and ``last_sort``/``search_after``: ``batch_process(filter, fn,
        search_after=err.search_after)`` continues after the last document ``fn`` got. It
        does not reopen a point in time by itself: a new one shows documents written since
        the run began, which ``fn`` would then see, in the same run.
        """
        if batch_size < 1 or batch_size > 10_000:
            raise ValueError("batch_size must be between 1 and 10000")
        kwargs = given(options)
        scan_args = split(kwargs, SEARCH_OPTIONS)
        snapshot = scan_args.pop("snapshot", None)
        if snapshot is False:
            raise QueryValidationError(
                "batch_process always pages through a point in time; snapshot= sets its "
                "keep-alive (e.g. snapshot='10m')",
                field="snapshot",
            )
        return _scan.scan(
            self._listing(),
            filter,
            lambda page: fn(page.documents),
            self.options(**kwargs),
            limit=batch_size,
            snapshot=True if snapshot is None else snapshot,
            source_defaults=True,
            **scan_args,
        )
