"""parse_aggregations: typed results from raw aggregation responses."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from esmapper.query import (
    Aggregations,
    BucketAggregate,
    PercentilesAggregate,
    SingleBucketAggregate,
    StatsAggregate,
    TopHitsAggregate,
    ValueAggregate,
    parse_aggregations,
)

RESPONSE: dict[str, Any] = {
    "terms_company_id": {
        "doc_count_error_upper_bound": 0,
        "sum_other_doc_count": 3,
        "buckets": [
            {
                "key": "acme",
                "doc_count": 2,
                "avg_age": {"value": 31.5},
                "tophits": {
                    "hits": {
                        "total": {"value": 2, "relation": "eq"},
                        "max_score": 1.0,
                        "hits": [
                            {"_id": "1", "_source": {"name": "a", "age": 30}},
                            {"_id": "2", "_source": {"name": "b", "age": 33}},
                        ],
                    }
                },
            },
            {
                "key": "globex",
                "doc_count": 1,
                "avg_age": {"value": None},
                "tophits": {"hits": {"total": 1, "hits": []}},
            },
        ],
    },
    "avg_age": {"value": 31.0},
    "max_created_utc": {"value": 1767225600000.0, "value_as_string": "2026-01-01T00:00:00.000Z"},
    "min_created_utc": {"value": None},
    "cardinality_email": {"value": 3},
    "stats_age": {"count": 3, "min": 30.0, "max": 33.0, "avg": 31.0, "sum": 93.0},
    "stats_created_utc": {
        "count": 1, "min": 1.0, "max": 1.0, "avg": 1.0, "sum": 1.0,
        "min_as_string": "1970-01-01T00:00:00.001Z", "max_as_string": "1970-01-01T00:00:00.001Z",
    },
    "percentiles_age": {"values": {"50.0": 31.0, "99.0": None}},
    "date_created_utc": {
        "buckets": [
            {"key_as_string": "2026-01-01T00:00:00.000Z", "key": 1767225600000, "doc_count": 4}
        ]
    },
    "missing_email": {"doc_count": 1, "avg_age": {"value": 40.0}},
    "nested_reviews": {
        "doc_count": 5,
        "terms_reviews.rating": {
            "buckets": [{"key": 5, "doc_count": 3}, {"key": 4, "doc_count": 2}]
        },
        "min_reviews.rating": {"value": 4.0},
    },
    "reverse_nested": {"doc_count": 2, "cardinality_company_id": {"value": 2}},
}  # fmt: skip


@pytest.fixture
def aggs() -> Aggregations:
    return parse_aggregations(RESPONSE, hydrate_hit=lambda hit: ("doc", hit["_id"]))


def test_types_follow_the_name_prefix(aggs: Aggregations) -> None:
    kinds = {name: type(agg) for name, agg in aggs.items()}
    assert kinds == {
        "terms_company_id": BucketAggregate,
        "avg_age": ValueAggregate,
        "max_created_utc": ValueAggregate,
        "min_created_utc": ValueAggregate,
        "cardinality_email": ValueAggregate,
        "stats_age": StatsAggregate,
        "stats_created_utc": StatsAggregate,
        "percentiles_age": PercentilesAggregate,
        "date_created_utc": BucketAggregate,
        "missing_email": SingleBucketAggregate,
        "nested_reviews": SingleBucketAggregate,
        "reverse_nested": SingleBucketAggregate,
    }


def test_terms_buckets_with_sub_aggregations_and_top_hits(aggs: Aggregations) -> None:
    terms = aggs.terms("terms_company_id")
    assert terms is not None
    assert terms.keys() == ["acme", "globex"]
    assert terms.other_count == 3
    assert terms.error_upper_bound == 0
    acme = terms.buckets[0]
    assert (acme.key, acme.key_as_string, acme.total) == ("acme", None, 2)
    assert acme.aggregations.value("avg_age") == 31.5
    top = acme.aggregations.top_hits()
    assert top is not None
    assert top.total == 2
    assert [h["_id"] for h in top.hits] == ["1", "2"]
    assert top.documents == [("doc", "1"), ("doc", "2")]
    globex = terms.buckets[1]
    assert globex.aggregations.value("avg_age") is None
    empty = globex.aggregations.top_hits()
    assert empty is not None
    assert (empty.total, empty.documents) == (1, [])


def test_metrics(aggs: Aggregations) -> None:
    assert aggs.value("avg_age") == 31.0
    assert aggs.avg("avg_age") == ValueAggregate(31.0)
    assert aggs.value("cardinality_email") == 3
    maximum = aggs.max("max_created_utc")
    assert maximum is not None
    assert maximum.value_as_string == "2026-01-01T00:00:00.000Z"
    assert maximum.as_datetime() == dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    minimum = aggs.min("min_created_utc")
    assert minimum is not None
    assert minimum.as_datetime() is None
    assert aggs.value("absent") is None


def test_stats_and_percentiles(aggs: Aggregations) -> None:
    assert aggs.stats("stats_age") == StatsAggregate(3, 30.0, 33.0, 31.0, 93.0, {})
    dates = aggs.stats("stats_created_utc")
    assert dates is not None
    assert dates.strings == {"min": "1970-01-01T00:00:00.001Z", "max": "1970-01-01T00:00:00.001Z"}
    percentiles = aggs.percentiles("percentiles_age")
    assert percentiles is not None
    assert percentiles.percentile(50) == 31.0
    assert percentiles.percentile(99) is None
    assert percentiles.percentile(75) is None


def test_date_histogram(aggs: Aggregations) -> None:
    histogram = aggs.date_histogram("date_created_utc")
    assert histogram is not None
    (bucket,) = histogram.buckets
    assert (bucket.key, bucket.key_as_string, bucket.total) == (
        1767225600000,
        "2026-01-01T00:00:00.000Z",
        4,
    )
    assert len(bucket.aggregations) == 0


def test_single_bucket_wrappers_keep_inner_aggregations(aggs: Aggregations) -> None:
    nested = aggs.nested("nested_reviews")
    assert nested is not None
    assert nested.total == 5
    ratings = nested.aggregations.terms("terms_reviews.rating")
    assert ratings is not None
    assert [(b.key, b.total) for b in ratings.buckets] == [(5, 3), (4, 2)]
    assert nested.aggregations.value("min_reviews.rating") == 4.0
    missing = aggs.missing("missing_email")
    assert missing is not None
    assert (missing.total, missing.aggregations.value("avg_age")) == (1, 40.0)
    reverse = aggs.single_bucket("reverse_nested")
    assert reverse is not None
    assert reverse.aggregations.value("cardinality_company_id") == 2


def test_mapping_behaviour(aggs: Aggregations) -> None:
    assert "avg_age" in aggs
    assert len(aggs) == len(RESPONSE)
    assert list(aggs) == list(RESPONSE)
    with pytest.raises(KeyError):
        aggs["nope"]
    assert aggs.terms("nope") is None


def test_typed_accessors_refuse_the_wrong_kind(aggs: Aggregations) -> None:
    with pytest.raises(TypeError, match="ValueAggregate, not BucketAggregate"):
        aggs.terms("avg_age")
    with pytest.raises(TypeError):
        aggs.value("terms_company_id")


def test_results_are_immutable(aggs: Aggregations) -> None:
    import attrs

    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        aggs.avg_age = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        aggs["x"] = ValueAggregate(1)  # type: ignore[index]


def test_without_hydrator_documents_are_sources() -> None:
    aggs = parse_aggregations(RESPONSE)
    terms = aggs.terms("terms_company_id")
    assert terms is not None
    top = terms.buckets[0].aggregations.top_hits()
    assert top is not None
    assert top.documents == [{"name": "a", "age": 30}, {"name": "b", "age": 33}]


@pytest.mark.parametrize("raw", [None, {}])
def test_empty(raw: dict[str, Any] | None) -> None:
    assert len(parse_aggregations(raw)) == 0


def test_unknown_names_are_classified_by_shape() -> None:
    aggs = parse_aggregations(
        {
            "by_company": {"buckets": [{"key": "a", "doc_count": 1}]},
            "keyed": {"buckets": {"x": {"doc_count": 2}}},
            "latest": {"hits": {"total": {"value": 0}, "hits": []}},
            "p": {"values": {"50.0": 1.0}},
            "s": {"count": 1, "min": 1, "max": 1, "avg": 1, "sum": 1},
            "only_active": {"doc_count": 4},
            "anything": {"value": 7},
        }
    )
    assert isinstance(aggs["by_company"], BucketAggregate)
    keyed = aggs.terms("keyed")
    assert keyed is not None
    assert [(b.key, b.total) for b in keyed.buckets] == [("x", 2)]
    assert isinstance(aggs["latest"], TopHitsAggregate)
    assert isinstance(aggs["p"], PercentilesAggregate)
    assert isinstance(aggs["s"], StatsAggregate)
    assert isinstance(aggs["only_active"], SingleBucketAggregate)
    assert aggs.value("anything") == 7
