"""Compiled filters, sorts and aggregations return the expected documents from a server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

from esmapper.query import (
    compile_aggregations,
    compile_filter,
    compile_sort,
    escape_query_value,
    parse_aggregations,
)

from ...unit.query.mapping import CATALOG, MAPPING

DOCS: dict[str, dict[str, Any]] = {
    "1": {
        "name": "John Smith", "bio": "likes hiking", "email": "john@acme.io",
        "company_id": "acme", "age": 25, "visits": 10, "score": 1.5, "is_active": True,
        "is_deleted": False, "created_utc": "2026-01-05T10:00:00Z",
        "address": {"street": "1 Main Street", "city": "Paris"},
        "reviews": [
            {"rating": 5, "author": "bob", "comment": "very good", "replies": [{"by": "x"}]},
            {"rating": 2, "author": "eve", "comment": "bad"},
        ],
    },
    "2": {
        "name": "Jane Smith", "bio": "likes chess", "email": "jane@acme.io",
        "company_id": "acme", "age": 35, "visits": 3, "score": 4.0, "is_active": False,
        "is_deleted": False, "created_utc": "2026-02-10T08:00:00Z",
        "address": {"street": "2 High Street", "city": "Lyon"},
        "reviews": [{"rating": 5, "author": "eve", "comment": "great"}],
    },
    "3": {
        "name": "Bob Jones", "bio": "likes hiking and chess", "email": "bob+1@globex.io",
        "company_id": "globex", "age": 45, "visits": -2, "score": 2.5, "is_active": True,
        "is_deleted": True, "created_utc": "2025-12-31T23:00:00Z",
        "reviews": [{"rating": 2, "author": "bob", "comment": "meh", "replies": [{"by": "y"}]}],
    },
    "4": {
        "name": "Alice (Jr.) Brown", "email": "alice@initech.io", "company_id": "initech",
        "age": 30, "is_active": True, "is_deleted": False, "created_utc": "2026-01-20T12:00:00Z",
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def index(es_client: Elasticsearch) -> Iterator[str]:
    """One index with DOCS for the whole module (read-only tests; ``t-`` names like
    ``index_prefix`` so leftovers are recognisable)."""
    name = f"t-{uuid.uuid4().hex[:8]}-query-filters"
    es_client.indices.create(
        index=name, mappings=MAPPING, settings={"number_of_shards": 1, "number_of_replicas": 0}
    )
    for id_, doc in DOCS.items():
        es_client.index(index=name, id=id_, document=doc)
    es_client.indices.refresh(index=name)
    yield name
    es_client.options(ignore_status=404).indices.delete(index=name)


def _ids(es: Elasticsearch, index: str, expr: str) -> set[str]:
    query = compile_filter(expr, CATALOG).query
    body = {"match_all": {}} if query is None else query.to_dict()
    hits = es.search(index=index, query=body, size=100)["hits"]["hits"]
    return {hit["_id"] for hit in hits}


CASES: list[tuple[str, set[str]]] = [
    ("", {"1", "2", "3", "4"}),
    ("company_id:acme", {"1", "2"}),
    ("age:>=30", {"2", "3", "4"}),
    ("age:[25 TO 35}", {"1", "4"}),
    ("visits:<0", {"3"}),
    ("visits:-2", {"3"}),
    ("score:>2", {"2", "3"}),
    ("is_active:true AND NOT is_deleted:true", {"1", "4"}),
    ("is_active:false OR company_id:initech", {"2", "4"}),
    ("name:smith", {"1", "2"}),
    ('name:"john smith"', {"1"}),
    ("name:jo*", {"1", "3"}),
    ("name.keyword:Jane*", {"2"}),
    ("email:*@acme.io", {"1", "2"}),
    ("name:[A TO C]", {"3", "4"}),
    ("created_utc:[2026-01-01 TO 2026-01-31]", {"1", "4"}),
    ("created_utc:2026-01-05", {"1"}),
    ("created_utc:<2026-01-01", {"3"}),
    ("address.city:Paris", {"1"}),
    ("_exists_:address", {"1", "2"}),
    ("_missing_:bio", {"4"}),
    ("id:2", {"2"}),
    ("id:(1 OR 4)", {"1", "4"}),
    ("hiking chess", {"3"}),
    ("hiking", {"1", "3"}),
    ("company_id:acme -age:25", {"2"}),
    ("company_id:(acme OR globex) age:<40", {"1", "2"}),
    # nested: AND holds on one review, OR on any review
    ("reviews.rating:5", {"1", "2"}),
    ("reviews.rating:5 AND reviews.author:bob", {"1"}),
    ("reviews.rating:2 AND reviews.author:eve", {"1"}),
    ("reviews.rating:5 AND reviews.author:eve", {"2"}),
    ("reviews.rating:2 OR reviews.author:eve", {"1", "2", "3"}),
    ("NOT reviews.author:bob", {"2", "4"}),
    ("_exists_:reviews.replies", {"1", "3"}),
    ("reviews.replies.by:x AND reviews.author:bob", {"1"}),
    ("reviews.replies.by:y AND reviews.rating:5", set()),
    ('reviews.comment:"very good"', {"1"}),
    ("_missing_:reviews.rating", {"4"}),
    (f"email:{escape_query_value('bob+1@globex.io')}", {"3"}),
    (f"name:{escape_query_value('Alice (Jr.)')}", {"4"}),
]


@pytest.mark.parametrize(("expr", "expected"), CASES, ids=[c[0] or "<empty>" for c in CASES])
def test_filters_match_the_expected_documents(
    es_client: Elasticsearch, index: str, expr: str, expected: set[str]
) -> None:
    assert _ids(es_client, index, expr) == expected


def test_sorts(es_client: Elasticsearch, index: str) -> None:
    def order(expr: str) -> list[str]:
        hits = es_client.search(index=index, sort=compile_sort(expr, CATALOG), size=10)
        return [hit["_id"] for hit in hits["hits"]["hits"]]

    assert order("-age") == ["3", "2", "4", "1"]
    assert order("name") == ["4", "3", "2", "1"]
    assert order("company_id -age") == ["2", "1", "3", "4"]


def test_aggregations(es_client: Elasticsearch, index: str) -> None:
    aggs_body = compile_aggregations(
        "terms:(company_id avg:age tophits:_~1) cardinality:email terms:reviews.rating",
        CATALOG,
    )
    response = es_client.search(index=index, aggs=aggs_body, size=0)
    aggs = parse_aggregations(response["aggregations"], hydrate_hit=lambda hit: hit["_id"])
    companies = aggs.terms("terms_company_id")
    assert companies is not None
    assert [(b.key, b.total) for b in companies.buckets] == [
        ("acme", 2),
        ("globex", 1),
        ("initech", 1),
    ]
    assert companies.buckets[0].aggregations.value("avg_age") == 30.0
    top = companies.buckets[0].aggregations.top_hits()
    assert top is not None
    assert len(top.documents) == 1
    assert aggs.value("cardinality_email") == 4
    nested = aggs.nested("nested_reviews")
    assert nested is not None
    assert nested.total == 4
    ratings = nested.aggregations.terms("terms_reviews.rating")
    assert ratings is not None
    assert sorted((b.key, b.total) for b in ratings.buckets) == [(2, 2), (5, 2)]
