"""Typed aggregation results: what :func:`parse_aggregations` produces.

The result type of each aggregation is chosen from its name prefix, as
:func:`~esmapper.query.aggregations.compile_aggregations` names them:

- ``terms_``, ``date_``, ``histogram_``: :class:`BucketAggregate`
- ``missing_``, ``nested_``, ``filter_``, ``reverse_nested_``: :class:`SingleBucketAggregate`
- ``min_``, ``max_``, ``avg_``, ``sum_``, ``cardinality_``, ``value_count_``:
  :class:`ValueAggregate`
- ``stats_``: :class:`StatsAggregate`
- ``percentiles_``: :class:`PercentilesAggregate`
- ``tophits``: :class:`TopHitsAggregate`

Other names are classified by the shape of the response. When the request's ``aggs`` bodies
are given (``request=``), the aggregation type each one asked for decides instead of the
name, so user-named aggregations (``{"by_n": A("terms", field="n")}``) get the same typed
accessors. ``nested_{path}`` wrappers are kept (their inner aggregations are reachable
through ``.aggregations``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import attrs

from esmapper._text import article
from esmapper.results import Shards

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
    """One bucket: ``key`` (epoch ms for dates), ``key_as_string``, ``total`` (doc count;
    also readable as ``doc_count``, elasticsearch.dsl's name) and the bucket's
    sub-``aggregations``."""

    key: Any
    key_as_string: str | None
    total: int
    aggregations: Aggregations

    @property
    def doc_count(self) -> int:
        """``total``, under the name Elasticsearch and elasticsearch.dsl give it."""
        return self.total


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
    """A single-bucket aggregation (``nested_{path}``, ``missing_{field}``): its doc count
    (``total``, also readable as ``doc_count``) and inner ``aggregations``."""

    total: int
    aggregations: Aggregations

    @property
    def doc_count(self) -> int:
        """``total``, under the name Elasticsearch and elasticsearch.dsl give it."""
        return self.total


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
    it holds another kind of aggregate. ``shards`` (the top level of ``aggregate()``'s
    answer) says how many shards answered the search; ``partial`` is true when some did
    not (only with ``partial_results=True``: the aggregations then cover the documents of
    the shards that answered).
    """

    _items: Mapping[str, Aggregate] = attrs.field(factory=dict)
    shards: Shards | None = attrs.field(default=None, eq=False, repr=False, kw_only=True)

    @property
    def partial(self) -> bool:
        """Whether some shards did not answer the search (see the class doc)."""
        return self.shards is not None and not self.shards.complete

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
            raise TypeError(
                f"aggregation {name!r} is {article(type(item).__name__)}, not {cls.__name__}"
            )
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
    raw: Mapping[str, Any] | None,
    *,
    hydrate_hit: HitHydrator | None = None,
    request: Mapping[str, Any] | None = None,
) -> Aggregations:
    """The typed :class:`Aggregations` for a response's ``aggregations`` object.

    ``None`` gives an empty mapping. ``hydrate_hit`` builds ``TopHitsAggregate.documents``
    from raw hits (e.g. ``Model.from_hit``). ``request`` is the ``aggs`` part of the search
    body: each result is then typed by the aggregation it asked for, whatever its name.
    """
    if not raw:
        return Aggregations()
    return _level(raw, hydrate_hit, request, skip=frozenset())


_REQUEST_KINDS: dict[str, str] = {
    **dict.fromkeys(
        ("terms", "multi_terms", "rare_terms", "significant_terms", "significant_text",
         "date_histogram", "auto_date_histogram", "histogram", "variable_width_histogram",
         "range", "date_range", "ip_range", "geohash_grid", "geotile_grid", "filters",
         "composite", "adjacency_matrix"),
        "buckets",
    ),
    **dict.fromkeys(
        ("filter", "nested", "reverse_nested", "missing", "global", "sampler",
         "diversified_sampler", "children", "parent"),
        "single",
    ),
    **dict.fromkeys(
        ("avg", "min", "max", "sum", "cardinality", "value_count", "weighted_avg",
         "median_absolute_deviation"),
        "value",
    ),
    **dict.fromkeys(("stats", "extended_stats"), "stats"),
    **dict.fromkeys(("percentiles", "percentile_ranks"), "percentiles"),
    "top_hits": "tophits",
}  # fmt: skip


def _level(
    raw: Mapping[str, Any],
    hydrate: HitHydrator | None,
    request: Mapping[str, Any] | None,
    *,
    skip: frozenset[str],
) -> Aggregations:
    """The aggregations of one level of a response (``skip``: keys that are not
    aggregations), typed by ``request`` (the same level's ``aggs`` bodies) when known."""
    items: dict[str, Aggregate] = {}
    for name, body in raw.items():
        if name in skip or not isinstance(body, Mapping):
            continue
        asked = request.get(name) if request is not None else None
        items[name] = _parse(name, body, hydrate, asked if isinstance(asked, Mapping) else None)
    return Aggregations(items)


_PREFIXES: dict[str, str] = {
    **dict.fromkeys(("terms", "date", "histogram"), "buckets"),
    **dict.fromkeys(("missing", "nested", "filter", "reverse"), "single"),
    **dict.fromkeys(("min", "max", "avg", "sum", "cardinality", "value"), "value"),
    "stats": "stats",
    "percentiles": "percentiles",
    "tophits": "tophits",
}
_BUCKET_KEYS = frozenset(
    {"key", "key_as_string", "doc_count", "from", "to", "from_as_string", "to_as_string",
     "doc_count_error_upper_bound", "meta"}
)  # fmt: skip
_REQUEST_META = frozenset({"aggs", "aggregations", "meta"})


def _classify(name: str, raw: Mapping[str, Any], request: Mapping[str, Any] | None) -> str:
    """``buckets``, ``single``, ``value``, ``stats``, ``percentiles`` or ``tophits``: by the
    type the request asked for, else by the name prefix, else by the response's shape."""
    if request is not None:
        kind = next((str(k) for k in request if k not in _REQUEST_META), "")
        known = _REQUEST_KINDS.get(kind)
    else:
        known = _PREFIXES.get(name.split("_", 1)[0])
    if known is not None:
        return known
    if "buckets" in raw:
        return "buckets"
    if "hits" in raw:
        return "tophits"
    if isinstance(raw.get("values"), Mapping):
        return "percentiles"
    if "count" in raw and "avg" in raw:
        return "stats"
    return "single" if "doc_count" in raw else "value"


def _parse(
    name: str,
    raw: Mapping[str, Any],
    hydrate: HitHydrator | None,
    request: Mapping[str, Any] | None = None,
) -> Aggregate:
    kind = _classify(name, raw, request)
    subs = None
    if request is not None:
        inner = request.get("aggs", request.get("aggregations"))
        subs = inner if isinstance(inner, Mapping) else {}
    if kind == "buckets":
        return _buckets(raw, hydrate, subs)
    if kind == "tophits":
        return _top_hits(raw, hydrate)
    if kind == "percentiles":
        values = raw.get("values") or {}
        return PercentilesAggregate({str(k): v for k, v in values.items()})
    if kind == "stats":
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
    if kind == "single":
        return SingleBucketAggregate(
            int(raw.get("doc_count") or 0), _level(raw, hydrate, subs, skip=_BUCKET_KEYS)
        )
    return ValueAggregate(raw.get("value"), raw.get("value_as_string"))


def _buckets(
    raw: Mapping[str, Any], hydrate: HitHydrator | None, subs: Mapping[str, Any] | None
) -> BucketAggregate:
    items = raw.get("buckets") or []
    if isinstance(items, Mapping):  # keyed buckets
        items = [{"key": key, **value} for key, value in items.items()]
    buckets = [
        Bucket(
            key=item.get("key"),
            key_as_string=item.get("key_as_string"),
            total=int(item.get("doc_count") or 0),
            aggregations=_level(item, hydrate, subs, skip=_BUCKET_KEYS),
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
