"""Search results: :class:`FindResults` and :class:`FindHit`; :class:`Count`, what
``count`` returns; :class:`Shards`, how many shards answered a search."""

from __future__ import annotations

import base64
import datetime as _dt
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar, overload

import attrs

from esmapper import _json

__all__ = [
    "AsyncSearchStatus",
    "Count",
    "FindHit",
    "FindResults",
    "LazyHits",
    "ShardFailure",
    "Shards",
    "decode_token",
    "encode_token",
]

#: Held while a page builds its hits from its raw hits (once per page): two threads reading
#: ``hits`` of one page at once get the same list.
_BUILDING = threading.Lock()

T = TypeVar("T")


def encode_token(sort_values: Sequence[Any]) -> str:
    """An opaque, URL-safe search-after token for the sort values of a hit."""
    return base64.urlsafe_b64encode(_json.dumps(list(sort_values))).decode("ascii")


def decode_token(token: str | Sequence[Any]) -> list[Any]:
    """The sort values of a token from :func:`encode_token` (a list is taken as is)."""
    if not isinstance(token, str):
        return list(token)
    try:
        values = _json.loads(base64.urlsafe_b64decode(token.encode("ascii")))
    except Exception as exc:
        raise ValueError(f"invalid search_after token {token[:40]!r}") from exc
    if not isinstance(values, list):
        raise ValueError(f"invalid search_after token {token[:40]!r}")
    return values


@attrs.frozen(slots=True)
class ShardFailure:
    """One shard that did not answer a search: its ``index`` and ``shard`` number, the
    ``node`` it was on, and the server's ``error_type`` and ``reason``
    (``node_disconnected_exception``, ``es_rejected_execution_exception``...). Any of them
    is ``None`` when the answer did not say."""

    index: str | None
    shard: int | None
    node: str | None
    error_type: str | None
    reason: str | None

    def __str__(self) -> str:
        where = f"[{self.index or '?'}][{'?' if self.shard is None else self.shard}]"
        node = f" on node {self.node}" if self.node else ""
        return f"{where}{node}: {self.error_type or 'error'}: {self.reason or 'no reason given'}"


@attrs.frozen(slots=True)
class Shards:
    """How many shards answered a search, a scroll page or a count (the answer's
    ``_shards``), and whether one ran out of time (``timed_out``).

    ``total`` shards were searched: ``successful`` answered (``skipped`` of them without
    searching, sure to hold no match), ``failed`` did not (``failures`` says which and
    why). An answer is :attr:`complete` when no shard failed and none timed out: only
    then do its hits, total, count and aggregations cover every matching document.
    """

    total: int = 0
    successful: int = 0
    skipped: int = 0
    failed: int = 0
    failures: tuple[ShardFailure, ...] = ()
    timed_out: bool = False

    @property
    def complete(self) -> bool:
        """Whether every shard answered in time: no shard failed, none timed out."""
        return self.failed == 0 and not self.timed_out

    def __str__(self) -> str:
        if self.complete:
            return f"all {self.total} shard(s) answered"
        parts = []
        if self.failed:
            of = f" of {self.total}" if self.total >= self.failed else ""  # 0: not said
            parts.append(f"{self.failed}{of} shard(s) failed")
        if self.timed_out:
            parts.append("shards timed out (their hits are cut short)")
        text = " and ".join(parts)
        if self.failures:
            text += ": " + "; ".join(map(str, self.failures))
        return text


class Count(int):
    """The number ``count`` returns: an ``int`` that also says how many ``shards``
    answered. ``partial`` is true only for a count of ``count(..., partial_results=True)``
    that some shards did not answer: it counts the documents of the shards that did (a
    lower bound). A count that is not partial is exact."""

    shards: Shards

    def __new__(cls, value: int, shards: Shards | None = None) -> Count:
        count = super().__new__(cls, value)
        count.shards = Shards() if shards is None else shards
        return count

    @property
    def partial(self) -> bool:
        """Whether some shards did not answer (the count is a lower bound)."""
        return not self.shards.complete

    def __getnewargs__(self) -> tuple[int, Shards]:  # type: ignore[override]
        return int(self), self.shards

    def __repr__(self) -> str:
        return f"Count({int(self)}, partial=True)" if self.partial else int.__repr__(self)


@attrs.frozen
class AsyncSearchStatus:
    """Where an async search is (``GET /_async_search/status/<id>``: no hits): ``async_id``;
    ``is_running``; ``is_partial`` (Elasticsearch's: always true while it runs, then true
    when some shards failed or the search failed); ``shards`` (the shards done so far);
    ``completion_status`` (the HTTP status of its final answer, ``None`` while it runs);
    ``started_at`` and ``expires_at`` (when the cluster forgets it unless it is read with a
    new ``keep_alive``), UTC."""

    async_id: str
    is_running: bool
    is_partial: bool
    shards: Shards
    completion_status: int | None
    started_at: _dt.datetime | None
    expires_at: _dt.datetime | None


@attrs.define(slots=True)
class FindHit(Generic[T]):
    """One search hit: ``id``, ``version`` (``"<primary_term>:<seq_no>"``), ``score``
    (``None`` when the search was sorted on fields), the hydrated ``document``, the hit's
    ``sort`` values (pass them as ``search_after=`` to continue after this hit), the
    physical ``index`` and ``highlight``: field -> fragments when ``highlight=`` asked for
    them (empty otherwise)."""

    id: str
    version: str | None
    score: float | None
    document: T
    sort: list[Any] | None = None
    index: str | None = None
    highlight: dict[str, list[str]] = attrs.field(factory=dict)


@attrs.define(slots=True, eq=False)
class FindResults(Generic[T]):
    """A page of search results.

    ``documents`` and ``hits`` hold this page; ``total`` counts every match when
    ``total_exact`` (the default: ``find(total=True)``), else it is a lower bound (at least
    that many match: ``find(total=N)`` counted up to N, or ``total=False`` counted no
    further than paging needed); a later page of search-after or snapshot paging keeps the
    first page's ``total`` (it is not counted again);
    ``page`` is 1-based (for search-after paging it counts the pages fetched);
    ``has_more`` says whether another page exists; ``aggregations`` holds the parsed
    aggregation results keyed by name. Iterating yields the documents, and so does
    indexing: ``results[0]`` is the first document, ``results[1:3]`` a list of documents
    (``results.hits[0]`` for the hit with its score, sort values and highlights).

    ``shards`` says how many shards answered the page's search; ``partial`` is true when
    some did not (a failed shard, a timeout): such a page is returned only to ``find(...,
    partial_results=True)``, and it misses the documents of those shards (``total`` counts
    the others). Otherwise a partial answer raises
    :class:`~esmapper.errors.PartialResultsError`.

    A page read from the store hydrates its documents at once; its :class:`FindHit`
    objects are built from the raw hits the first time ``hits`` is read (a caller that
    only reads the documents does not pay for them), and are the same objects from then
    on: assigning ``hit.document`` changes what ``documents`` and iteration yield.
    """

    _hits: list[FindHit[T]] | None = attrs.field(alias="hits")
    total: int
    page: int
    has_more: bool
    aggregations: Any = None
    limit: int = 10
    _fetch_next: Callable[[FindResults[T]], FindResults[T] | None] | None = attrs.field(
        default=None, repr=False
    )
    pit_id: str | None = attrs.field(default=None, repr=False)
    #: the hits not built yet (``hits`` is ``None`` until they are): see :class:`LazyHits`
    _lazy: LazyHits[T] | None = attrs.field(default=None, alias="lazy", repr=False)
    #: whether ``total`` is every match (``False``: a lower bound, Elasticsearch's
    #: ``relation: gte``, or not counted)
    total_exact: bool = True
    #: how many shards answered this page's search (``None``: not read from a search)
    shards: Shards | None = attrs.field(default=None, repr=False)
    #: the id of the async search this page was read from (``repo.async_search``), to get
    #: it again or delete it; ``None``: not an async search, or one the server did not
    #: keep (it completed within its wait and ``keep_on_completion`` was not set)
    async_id: str | None = None
    #: the async search is still running: this page is what it found so far (Elasticsearch
    #: gives no hits before the end; ``total`` counts the shards done), get it again later
    is_running: bool = False
    #: the compiled search an async page was read for (reads the next answer the same way)
    _async_request: Any = attrs.field(default=None, alias="async_request", repr=False)

    @property
    def partial(self) -> bool:
        """Whether some shards did not answer this page's search (see the class doc)."""
        return self.shards is not None and not self.shards.complete

    @property
    def hits(self) -> list[FindHit[T]]:
        """This page's hits (built from the raw hits on first read, then kept)."""
        hits = self._hits
        if hits is None:
            with _BUILDING:
                hits = self._hits
                if hits is None:  # not built by another thread meanwhile
                    lazy = self._lazy
                    hits = [] if lazy is None else lazy.build()
                    self._hits, self._lazy = hits, None
        return hits

    @hits.setter
    def hits(self, hits: list[FindHit[T]]) -> None:
        self._hits, self._lazy = hits, None

    @property
    def documents(self) -> list[T]:
        hits, lazy = self._hits, self._lazy
        if hits is None and lazy is not None:
            return list(lazy.documents)
        return [hit.document for hit in self.hits]

    @property
    def search_after_token(self) -> str | None:
        """The token that continues after the last hit (``find(search_after=token)``)."""
        sort = self._last_sort()
        return None if sort is None else encode_token(sort)

    def _last_sort(self) -> list[Any] | None:
        """The ``sort`` values of the last hit of this page (``None`` without hits or
        for an unsorted search), without building the page's hits."""
        hits, lazy = self._hits, self._lazy
        if hits is None and lazy is not None:
            return lazy.last_sort()
        return self.hits[-1].sort if self.hits else None

    def next_page(self) -> bool:
        """Load the next page into this object; ``False`` (unchanged) when there is none.

        Sends the same search with the next ``from`` (page paging) or ``search_after`` the
        last hit (search-after and snapshot paging).
        """
        if not self.has_more or self._fetch_next is None:
            return False
        following = self._fetch_next(self)
        if following is None:
            self.has_more = False
            return False
        self._hits, self._lazy = following._hits, following._lazy
        self.total = following.total
        self.total_exact = following.total_exact
        self.page = following.page
        self.has_more = following.has_more
        self.aggregations = following.aggregations
        self.pit_id = following.pit_id
        self.shards = following.shards
        return True

    def _replace_documents(self, replace: Callable[[T], T]) -> None:
        """Put ``replace(document)`` in place of each document of this page (a session
        puts the object its identity map holds), hits built or not."""
        hits, lazy = self._hits, self._lazy
        if hits is None and lazy is not None:
            lazy.documents[:] = [replace(doc) for doc in lazy.documents]
            return
        for hit in self.hits:
            hit.document = replace(hit.document)

    def __iter__(self) -> Iterator[T]:
        return iter(self.documents)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        """The document at ``index`` of this page (``IndexError`` past the end), or a list
        of documents for a slice."""
        hits, lazy = self._hits, self._lazy
        if hits is None and lazy is not None:
            return lazy.documents[index]
        if isinstance(index, slice):
            return [hit.document for hit in self.hits[index]]
        return self.hits[index].document

    def __len__(self) -> int:
        hits, lazy = self._hits, self._lazy
        if hits is None and lazy is not None:
            return len(lazy.documents)
        return len(self.hits)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __repr__(self) -> str:
        return (
            f"FindResults(hits={self.hits!r}, total={self.total!r}, page={self.page!r}, "
            f"has_more={self.has_more!r}, aggregations={self.aggregations!r}, "
            f"limit={self.limit!r})"
        )


class LazyHits(Generic[T]):
    """The hits of a page before they are built: the hydrated ``documents``, the ``raw``
    hits they were read from (same order) and ``make(raw, document)``, which builds one
    :class:`FindHit`."""

    __slots__ = ("documents", "make", "raw")

    def __init__(
        self,
        documents: list[T],
        raw: Sequence[Mapping[str, Any]],
        make: Callable[[Mapping[str, Any], T], FindHit[T]],
    ) -> None:
        self.documents = documents
        self.raw = raw
        self.make = make

    def build(self) -> list[FindHit[T]]:
        make = self.make
        return [make(raw, document) for raw, document in zip(self.raw, self.documents, strict=True)]

    def last_sort(self) -> list[Any] | None:
        if not self.documents:
            return None
        return self.make(self.raw[-1], self.documents[-1]).sort
