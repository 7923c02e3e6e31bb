"""Typed aggregation results (QY-19..21): what :func:`parse_aggregations` produces.

The result type of each aggregation is chosen from its name prefix, as
:func:`~esmapper.query.aggregations.compile_aggregations` names them:

=========================================  ===========================
``terms_``, ``date_``, ``histogram_``      :class:`BucketAggregate`
``missing_``, ``nested_``, ``filter_``,    :class:`SingleBucketAggregate`
``reverse_nested_``
``min_``, ``max_``, ``avg_``, ``sum_``,    :class:`ValueAggregate`
``cardinality_``, ``value_count_``
``stats_``                                 :class:`StatsAggregate`
``percentiles_``                           :class:`PercentilesAggregate`
``tophits``                                :class:`TopHitsAggregate`
=========================================  ===========================

Other names are classified by the shape of the response. ``nested_{path}`` wrappers are kept
(their inner aggregations are reachable through ``.aggregations``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import attrs

__all__ = [
    "Aggregate",
    "Aggregations",
    "Bucket",
    "BucketAggregate",
    "PercentilesAggregate",
    "SingleBucketAggregate",
    "StatsAggregate",
    "TopHitsAggregate",
    "ValueAggregate",
    "parse_aggregations",
]

HitHydrator = Callable[[dict[str, Any]], Any]
_A = TypeVar("_A")


@attrs.frozen
class ValueAggregate:
    """A single-value metric (min, max, avg, sum, cardinality).

    ``value`` is ``None`` when no document had the field. On date fields ``value`` is epoch
    milliseconds and ``value_as_string`` the formatted date (see :meth:`as_datetime`).
    """

    value: float | int | None
    value_as_string: str | None = None

    def as_datetime(self) -> dt.datetime | None:
        """``value`` read as epoch milliseconds, as an aware UTC datetime (``None`` if unset)."""
        if self.value is None:
            return None
        return dt.datetime.fromtimestamp(self.value / 1000, tz=dt.timezone.utc)


@attrs.frozen
class StatsAggregate:
    """``stats``: count, min, max, avg, sum (``None`` when there were no values).

    ``strings`` holds the ``*_as_string`` forms the server sent (dates), keyed ``min``, ...
    """

    count: int
    min: float | None
    max: float | None
    avg: float | None
    sum: float | None
    strings: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class PercentilesAggregate:
    """``percentiles``: ``values`` maps each percent, keyed as the server sends it (``"50.0"``),
    to its value."""

    values: dict[str, float | None]

    def percentile(self, percent: float) -> float | None:
        """The value at ``percent`` (``None`` if it was not computed or has no value)."""
        return self.values.get(str(float(percent)))


@attrs.frozen
class TopHitsAggregate:
    """``tophits``: the raw ``hits`` and the ``documents`` built from them.

    ``documents`` are the hits passed through ``hydrate_hit`` (model instances in a find), or
    their ``_source`` dicts when no hydrator was given. ``total`` is the bucket's hit count.
    """

    hits: list[dict[str, Any]]
    documents: list[Any]
    total: int | None = None


@attrs.frozen
class Bucket:
    """One bucket: ``key`` (epoch ms for dates), ``key_as_string``, ``total`` (doc count) and
    the bucket's sub-``aggregations``."""

    key: Any
    key_as_string: str | None
    total: int
    aggregations: Aggregations


@attrs.frozen
class BucketAggregate:
    """A multi-bucket aggregation (terms, date histogram).

    ``other_count`` is terms' ``sum_other_doc_count`` and ``error_upper_bound`` its
    ``doc_count_error_upper_bound`` (``None`` for other aggregations).
    """

    buckets: list[Bucket]
    other_count: int | None = None
    error_upper_bound: int | None = None

    def keys(self) -> list[Any]:
        """The bucket keys, in bucket order."""
        return [b.key for b in self.buckets]


@attrs.frozen
class SingleBucketAggregate:
    """A single-bucket aggregation (``nested_{path}``, ``missing_{field}``): its doc count and
    inner ``aggregations``."""

    total: int
    aggregations: Aggregations


Aggregate = (
    ValueAggregate
    | StatsAggregate
    | PercentilesAggregate
    | TopHitsAggregate
    | BucketAggregate
    | SingleBucketAggregate
)


@attrs.frozen
class Aggregations(Mapping[str, Aggregate]):
    """The parsed aggregations of a response: a read-only mapping name -> aggregate.

    The typed accessors return ``None`` when the name is absent and raise ``TypeError`` when
    it holds another kind of aggregate.
    """

    _items: Mapping[str, Aggregate] = attrs.field(factory=dict)

    def __getitem__(self, name: str) -> Aggregate:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def _typed(self, name: str, cls: type[_A]) -> _A | None:
        item = self._items.get(name)
        if item is None:
            return None
        if not isinstance(item, cls):
            raise TypeError(f"aggregation {name!r} is a {type(item).__name__}, not {cls.__name__}")
        return item

    def terms(self, name: str) -> BucketAggregate | None:
        """The buckets of a terms aggregation (``"terms_company_id"``)."""
        return self._typed(name, BucketAggregate)

    def date_histogram(self, name: str) -> BucketAggregate | None:
        """The buckets of a date histogram (``"date_created_utc"``)."""
        return self._typed(name, BucketAggregate)

    def metric(self, name: str) -> ValueAggregate | None:
        """A single-value metric (``"avg_age"``, ``"max_created_utc"``, ``"cardinality_x"``)."""
        return self._typed(name, ValueAggregate)

    min = max = avg = sum = cardinality = metric

    def value(self, name: str) -> Any:
        """The value of a single-value metric (``None`` if absent or empty)."""
        item = self.metric(name)
        return None if item is None else item.value

    def stats(self, name: str) -> StatsAggregate | None:
        return self._typed(name, StatsAggregate)

    def percentiles(self, name: str) -> PercentilesAggregate | None:
        return self._typed(name, PercentilesAggregate)

    def top_hits(self, name: str = "tophits") -> TopHitsAggregate | None:
        return self._typed(name, TopHitsAggregate)

    def single_bucket(self, name: str) -> SingleBucketAggregate | None:
        """A single-bucket aggregate (``"nested_reviews"``, ``"missing_email"``)."""
        return self._typed(name, SingleBucketAggregate)

    nested = missing = single_bucket


def parse_aggregations(
    raw: Mapping[str, Any] | None, *, hydrate_hit: HitHydrator | None = None
) -> Aggregations:
    """The typed :class:`Aggregations` for a response's ``aggregations`` object.

    ``None`` gives an empty mapping. ``hydrate_hit`` builds ``TopHitsAggregate.documents``
    from raw hits (e.g. ``Model.from_hit``).
    """
    if not raw:
        return Aggregations()
    return Aggregations(
        {
            name: _parse(name, body, hydrate_hit)
            for name, body in raw.items()
            if isinstance(body, Mapping)
        }
    )


_BUCKETS = frozenset({"terms", "date", "histogram"})
_SINGLE = frozenset({"missing", "nested", "filter", "reverse"})
_VALUES = frozenset({"min", "max", "avg", "sum", "cardinality", "value"})
_BUCKET_KEYS = frozenset(
    {"key", "key_as_string", "doc_count", "from", "to", "from_as_string", "to_as_string",
     "doc_count_error_upper_bound", "meta"}
)  # fmt: skip


def _parse(name: str, raw: Mapping[str, Any], hydrate: HitHydrator | None) -> Aggregate:
    prefix = name.split("_", 1)[0]
    if prefix in _BUCKETS or (prefix not in _SINGLE and "buckets" in raw):
        return _buckets(raw, hydrate)
    if prefix == "tophits" or (prefix not in _SINGLE and "hits" in raw):
        return _top_hits(raw, hydrate)
    if prefix == "percentiles" or (
        prefix not in _SINGLE and isinstance(raw.get("values"), Mapping)
    ):
        values = raw.get("values") or {}
        return PercentilesAggregate({str(k): v for k, v in values.items()})
    if prefix == "stats" or (prefix not in _SINGLE and "count" in raw and "avg" in raw):
        return StatsAggregate(
            count=int(raw.get("count") or 0),
            min=raw.get("min"),
            max=raw.get("max"),
            avg=raw.get("avg"),
            sum=raw.get("sum"),
            strings={
                k[: -len("_as_string")]: v for k, v in raw.items() if k.endswith("_as_string")
            },
        )
    if prefix in _SINGLE or (prefix not in _VALUES and "doc_count" in raw):
        return SingleBucketAggregate(int(raw.get("doc_count") or 0), _sub(raw, hydrate))
    return ValueAggregate(raw.get("value"), raw.get("value_as_string"))


def _sub(raw: Mapping[str, Any], hydrate: HitHydrator | None) -> Aggregations:
    return Aggregations(
        {
            key: _parse(key, value, hydrate)
            for key, value in raw.items()
            if key not in _BUCKET_KEYS and isinstance(value, Mapping)
        }
    )


def _buckets(raw: Mapping[str, Any], hydrate: HitHydrator | None) -> BucketAggregate:
    items = raw.get("buckets") or []
    if isinstance(items, Mapping):  # keyed buckets
        items = [{"key": key, **value} for key, value in items.items()]
    buckets = [
        Bucket(
            key=item.get("key"),
            key_as_string=item.get("key_as_string"),
            total=int(item.get("doc_count") or 0),
            aggregations=_sub(item, hydrate),
        )
        for item in items
    ]
    return BucketAggregate(
        buckets, raw.get("sum_other_doc_count"), raw.get("doc_count_error_upper_bound")
    )


def _top_hits(raw: Mapping[str, Any], hydrate: HitHydrator | None) -> TopHitsAggregate:
    container = raw.get("hits") or {}
    hits = list(container.get("hits") or [])
    total = container.get("total")
    if isinstance(total, Mapping):
        total = total.get("value")
    documents = [hydrate(hit) if hydrate else hit.get("_source") for hit in hits]
    return TopHitsAggregate(hits, documents, None if total is None else int(total))
