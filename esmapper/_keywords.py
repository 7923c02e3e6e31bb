"""The option keywords as ``TypedDict``\\ s, for methods that pass them on.

A method that takes the options and hands them to another call spells them
``**options: Unpack[OptionKeywords]`` (``Unpack[UntenantedSearchKeywords]`` for a
search's own keywords too, the ``Untenanted`` ones where the method's own ``tenant``
argument takes that name): type checkers then check each keyword's name and type as they do for the
methods that list them, and such a method is a compatible override of one that lists
them. :func:`esmapper.options.keywords_checked` reads the ``TypedDict`` of a method's
``**options`` (:func:`~esmapper.options.keywords_of`) and refuses, at run time, a keyword
it does not name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from typing_extensions import TypedDict

from esmapper.options import Consistency, LogLevel, Snapshot, SoftDeleteMode, Timeout
from esmapper.query._dsl_aggs import AggregationsSpec
from esmapper.query.highlight import HighlightSpec
from esmapper.query.sort import SortSpec

__all__ = [
    "OptionKeywords",
    "UntenantedOptionKeywords",
    "UntenantedSearchKeywords",
]


class UntenantedOptionKeywords(TypedDict, total=False):
    """The options but ``tenant``: for a method whose own ``tenant`` argument is the
    tenant it works on."""

    consistency: Consistency | None
    soft_deletes: SoftDeleteMode | None
    cache: bool | None
    cache_key: str | None
    notifications: bool | None
    validate: bool | None
    version_check: bool | None
    timeout: Timeout | None
    retries: int | None
    query_log_level: LogLevel | None


class OptionKeywords(UntenantedOptionKeywords, total=False):
    """The options (:class:`esmapper.options.Options`) as keyword arguments: ``None``
    means the repository's (or session's) default."""

    tenant: str | None


class UntenantedSearchKeywords(UntenantedOptionKeywords, total=False):
    """A search's own keywords (those of ``Repository.find``) and the options but
    ``tenant``."""

    sort: SortSpec
    aggregations: AggregationsSpec
    limit: int | None
    page: int | None
    search_after: Any
    includes: Sequence[str] | None
    excludes: Sequence[str] | None
    snapshot: Snapshot
    partitions: tuple[Any, Any] | None
    highlight: HighlightSpec
    total: bool | int | None
    partial_results: bool | None
