"""Reading a search's answer (:mod:`esmapper._search`): the page of documents hydrated from
its hits (a hit read with ``includes``/``excludes`` is partial: a save then writes only the
fields that changed), its :class:`~esmapper.results.FindHit` s, its total and whether more
pages follow, its aggregations; the point in time released with the last page; and the
page a search with ``cache_key=`` stores and may serve (:func:`page_entry`,
:func:`cached_page`). Sends nothing else."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from esmapper._raw_answers import Hit
from esmapper.model._wire_decode import hydrate
from esmapper.model.state import DocState, version_of
from esmapper.query import parse_aggregations
from esmapper.results import FindHit, FindResults, LazyHits, Shards

if TYPE_CHECKING:
    from esmapper._search import SearchRequest
    from esmapper.model.info import ModelInfo

__all__ = ["cached_page", "hit", "hydrate_hit", "page_entry", "results", "total_of"]

#: the key of a cached search page stored by a scoped search (see :func:`page_entry`)
_SCOPE = "__esmapper_tenant__"


def page_entry(response: dict[str, Any], scope: str | None) -> dict[str, Any]:
    """What a search with ``cache_key=`` stores under its key: the response, tagged with
    the search's ``scope`` (a tenant) when it has one, so that :func:`cached_page` serves
    it to that scope only (the key stays the caller's: ``invalidate_cache(key)`` drops it)."""
    return response if scope is None else {_SCOPE: scope, "response": response}


def cached_page(value: Any, scope: str | None) -> dict[str, Any] | None:
    """The response a search of ``scope`` (``None``: none) may serve from the cached
    ``value`` of its key, or ``None`` (a page stored for another scope, or for none, is a
    miss: the search runs and stores its own)."""
    if not isinstance(value, dict):
        return None
    scoped = value.get(_SCOPE)
    if scoped is None:
        return value if scope is None else None
    if scoped != scope:
        return None
    response: dict[str, Any] = value["response"]
    return response


def results(
    request: SearchRequest, response: dict[str, Any], page: int, pit_id: str | None, shards: Shards
) -> FindResults[Any]:
    pit_id = response.get("pit_id", pit_id)
    raw_hits: list[Any] = response["hits"]["hits"]  # dicts, or Hits read as bytes
    peeked = False  # a page read with one hit more (see _peeks): that hit is not shown
    if request._peeks and len(raw_hits) > request.limit:
        raw_hits, peeked = raw_hits[: request.limit], True  # (a copy: the cache keeps it)
    project = request.project
    documents: list[Any]
    if project is not None:
        documents = [
            project(raw, version_of(raw.get("_seq_no"), raw.get("_primary_term"))[0])
            for raw in raw_hits
        ]
    elif raw_hits and type(raw_hits[0]) is Hit:  # read as bytes (SearchRequest._raw_reader)
        in_part = request.partial_source
        documents = hydrate(request.info, raw_hits, in_part)
    else:
        from_source = request.info.from_source
        in_part = request.partial_source
        documents = []
        append = documents.append
        for raw in raw_hits:
            version, condition = version_of(raw.get("_seq_no"), raw.get("_primary_term"))
            source = raw.get("_source")
            if source is None:
                append(from_source({}, raw["_id"], version))
                continue
            # the parsed _source itself becomes the original (no copy: hydration copies
            # every mutable value it hands to the document); a hit read with
            # includes/excludes is partial (a save then writes only the fields that
            # changed)
            state = DocState(source, raw.get("_index"), None, in_part, version, condition)
            append(from_source(source, raw["_id"], version, state))
    hits = LazyHits(documents, raw_hits, partial(hit, request))
    total, exact = total_of(request, response, page, len(response["hits"]["hits"]))
    if request.limit == 0:  # counts and aggregations only: there is no next page
        has_more = False
    elif request._peeks:
        has_more = peeked
    elif request.search_after_mode:  # a page of MAX_LIMIT hits cannot peek: full or not
        has_more = len(documents) == request.limit
    else:
        has_more = (page - 1) * request.limit + len(documents) < total
    aggregations = (
        parse_aggregations(
            response.get("aggregations"),
            hydrate_hit=partial(hydrate_hit, request.info),
            request=request.aggs,
        )
        if request.aggs
        else None
    )
    if not has_more and pit_id is not None:
        request._close_pit(pit_id)
        pit_id = None
    return FindResults(
        hits=None,
        total=total,
        total_exact=exact,
        page=page,
        has_more=has_more,
        aggregations=aggregations,
        limit=request.limit,
        fetch_next=request._next,
        pit_id=pit_id,
        lazy=hits,
        shards=shards,
    )


def hit(request: SearchRequest, raw: Mapping[str, Any], document: Any) -> FindHit[Any]:
    """The :class:`FindHit` of ``raw``, whose hydrated document is ``document``."""
    sort = raw.get("sort")
    if sort is not None and request.search_after_mode:
        # the values of our sort only: inside a point in time Elasticsearch appends its
        # _shard_doc tiebreaker, whose values are meaningless in another point in time
        sort = sort[: len(request.sort)]
    highlight = raw.get("highlight")
    return FindHit(
        raw["_id"],
        version_of(raw.get("_seq_no"), raw.get("_primary_term"))[0],
        raw.get("_score"),
        document,
        sort,
        raw.get("_index"),
        {}
        if not highlight
        else highlight
        if request.name_highlight is None
        else request.name_highlight(highlight),
    )


def total_of(
    request: SearchRequest, response: Mapping[str, Any], page: int, hits: int
) -> tuple[int, bool]:
    """``(total, exact)`` of a page's answer: its ``hits.total`` (``relation: gte``
    -> not exact), else (not counted) the first page's, else the matches seen so far
    (a lower bound)."""
    found = response["hits"].get("total")
    if isinstance(found, Mapping):
        counted = (int(found["value"]), found.get("relation", "eq") == "eq")
        if request.counted is None:
            request.counted = counted
        return counted
    if request.counted is not None:
        return request.counted
    if request.search_after_mode:  # the pages read before this one, and this one
        return request.documents_read + hits, False
    return (page - 1) * request.limit + hits, False


def hydrate_hit(info: ModelInfo, raw: dict[str, Any]) -> Any:
    """A top hit of an aggregation as a document of the model, loaded *partially*: the
    aggregation's own body may filter its ``_source`` (``top_hits: {_source: [...]}``),
    which the search cannot see, so a save writes only the fields that changed (never the
    defaults of the fields the hit left out). The hit of a nested object (a top hit under
    a ``nested`` aggregation: ``_nested`` names its place) is no document: its
    ``_source`` dict."""
    source = raw.get("_source") or {}
    if "_nested" in raw:
        return source
    version, condition = version_of(raw.get("_seq_no"), raw.get("_primary_term"))
    state = DocState(source, raw.get("_index"), None, True, version, condition)
    return info.from_source(source, raw.get("_id"), version, state)
