"""Search results: :class:`FindResults` and :class:`FindHit`."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

import attrs

from esmapper import _json

__all__ = ["FindHit", "FindResults", "decode_token", "encode_token"]

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

    ``documents`` and ``hits`` hold this page; ``total`` counts every match (exact);
    ``page`` is 1-based (for search-after paging it counts the pages fetched);
    ``has_more`` says whether another page exists; ``aggregations`` holds the parsed
    aggregation results keyed by name. Iterating yields the documents, and so does
    indexing: ``results[0]`` is the first document, ``results[1:3]`` a list of documents
    (``results.hits[0]`` for the hit with its score, sort values and highlights).
    """

    hits: list[FindHit[T]]
    total: int
    page: int
    has_more: bool
    aggregations: Any = None
    limit: int = 10
    _fetch_next: Callable[[FindResults[T]], FindResults[T] | None] | None = attrs.field(
        default=None, repr=False
    )
    pit_id: str | None = attrs.field(default=None, repr=False)

    @property
    def documents(self) -> list[T]:
        return [hit.document for hit in self.hits]

    @property
    def search_after_token(self) -> str | None:
        """The token that continues after the last hit (``find(search_after=token)``)."""
        if not self.hits or self.hits[-1].sort is None:
            return None
        return encode_token(self.hits[-1].sort)

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
        self.hits = following.hits
        self.total = following.total
        self.page = following.page
        self.has_more = following.has_more
        self.aggregations = following.aggregations
        self.pit_id = following.pit_id
        return True

    def __iter__(self) -> Iterator[T]:
        return iter(self.documents)

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        """The document at ``index`` of this page (``IndexError`` past the end), or a list
        of documents for a slice."""
        if isinstance(index, slice):
            return [hit.document for hit in self.hits[index]]
        return self.hits[index].document

    def __len__(self) -> int:
        return len(self.hits)

    def __bool__(self) -> bool:
        return bool(self.hits)
