"""The keyword arguments of repository and session calls, as ``TypedDict``\\ s: the one
place each group of them is spelled.

Every public call that takes the options spells them ``**options: Unpack[X]`` with ``X``
one of these (PEP 692): type checkers and IDEs expand ``X`` into its keywords and check
each one's name and type as for a listed keyword argument, and a subclass that takes the
same ``X`` is a compatible override. Every keyword defaults to ``None``: the repository's
(or the session's) value. At run time :func:`esmapper._limits.limited` and
:func:`esmapper.options.keywords_checked` read the ``TypedDict`` of a method's
``**options`` (:func:`esmapper.options.keywords_of`) and refuse a keyword it does not
name, with a ``TypeError`` listing every keyword the call takes.

The groups: :class:`OptionKeywords` (the options, :class:`esmapper.options.Options`;
the writes, ``session()``; ``get`` takes :class:`GetKeywords` and its own ``cache``),
:class:`FindKeywords` (``find``, ``find_as``, ``search``: the options and a search's own
keywords), :class:`FindOneKeywords`
(``find_one``: no ``limit`` or ``total``), :class:`CountKeywords` (``count``,
``exists``, ``aggregate``: ``partitions`` and ``partial_results``), :class:`ScanKeywords`
(``batch_process``); the ``Untenanted`` ones for a method whose own ``tenant`` argument
is the tenant it works on.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from typing_extensions import TypedDict

from esmapper.options import Consistency, LogLevel, Snapshot, SoftDeleteMode, Timeout
from esmapper.query._dsl_aggs import AggregationsSpec
from esmapper.query.fields import FieldSelection
from esmapper.query.highlight import HighlightSpec
from esmapper.query.sort import SortSpec

__all__ = [
    "CountKeywords",
    "FindKeywords",
    "FindOneKeywords",
    "GetKeywords",
    "OptionKeywords",
    "ScanKeywords",
    "UntenantedOptionKeywords",
    "UntenantedSearchKeywords",
]


class _OptionKeywordsButCache(TypedDict, total=False):
    """The options but ``tenant`` and ``cache``."""

    consistency: Consistency | None
    soft_deletes: SoftDeleteMode | None
    cache_key: str | None
    notifications: bool | None
    validate: bool | None
    version_check: bool | None
    timeout: Timeout | None
    retries: int | None
    query_log_level: LogLevel | None
    originals: bool | None
    expires_in: Timeout | None
    expires_at: datetime | None
    read_cache: bool | None


class _TenantKeyword(TypedDict, total=False):
    tenant: str | None


class UntenantedOptionKeywords(_OptionKeywordsButCache, total=False):
    """The options but ``tenant``: for a method whose own ``tenant`` argument is the
    tenant it works on."""

    cache: bool | None


class OptionKeywords(UntenantedOptionKeywords, _TenantKeyword, total=False):
    """The options (:class:`esmapper.options.Options`) as keyword arguments: ``None``
    means the repository's (or session's) default."""


class GetKeywords(_OptionKeywordsButCache, _TenantKeyword, total=False):
    """The keywords of ``Repository.get``: the options but ``cache``, a keyword argument
    of its own there (``get(id, cache=True)``, the cached get, passes no dict of
    keywords: one lookup of its value)."""


class _PartitionKeywords(TypedDict, total=False):
    """What a search reads of the model's partitions and of a partial answer."""

    partitions: tuple[Any, Any] | None
    partial_results: bool | None


class _FindOneOwn(_PartitionKeywords, total=False):
    """A search's own keywords but ``limit`` and ``total`` (see ``Repository.find``)."""

    sort: SortSpec
    aggregations: AggregationsSpec
    page: int | None
    search_after: Any
    includes: FieldSelection
    excludes: FieldSelection
    snapshot: Snapshot
    highlight: HighlightSpec


class _FindOwn(_FindOneOwn, total=False):
    """A search's own keywords (see ``Repository.find``)."""

    limit: int | None
    total: bool | int | None


class FindKeywords(_FindOwn, OptionKeywords, total=False):
    """The keywords of ``find``, ``find_as`` and ``search``: a search's own and the
    options."""


class FindOneKeywords(_FindOneOwn, OptionKeywords, total=False):
    """The keywords of ``find_one``: those of ``find`` but ``limit`` and ``total`` (one
    document is asked for, counted no further)."""


class UntenantedSearchKeywords(_FindOwn, UntenantedOptionKeywords, total=False):
    """A search's own keywords (those of ``Repository.find``) and the options but
    ``tenant``."""


class CountKeywords(_PartitionKeywords, OptionKeywords, total=False):
    """The keywords of ``count``, ``exists`` and ``aggregate``: ``partitions``,
    ``partial_results`` and the options."""


class ScanKeywords(OptionKeywords, total=False):
    """The keywords of ``batch_process``: the search keywords a scan through a point in
    time takes (``snapshot``: its keep-alive) and the options."""

    sort: SortSpec
    search_after: Any
    includes: FieldSelection
    excludes: FieldSelection
    snapshot: Snapshot
    partitions: tuple[Any, Any] | None
