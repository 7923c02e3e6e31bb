"""compile_aggregations with elasticsearch.dsl aggregation objects and raw dicts."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch.dsl import A

from esmapper.errors import QueryValidationError
from esmapper.query import BucketAggregate, ValueAggregate, compile_aggregations, parse_aggregations

from .mapping import CATALOG


def test_an_unnamed_aggregation_is_named_like_the_expression_syntax() -> None:
    assert compile_aggregations(A("terms", field="company_id"), CATALOG) == compile_aggregations(
        "terms:company_id", CATALOG
    )
    assert list(compile_aggregations(A("avg", field="age"), CATALOG)) == ["avg_age"]
    dated = A("date_histogram", field="created_utc", calendar_interval="1M")
    assert list(compile_aggregations(dated, CATALOG)) == ["date_created_utc"]


def test_a_list_of_aggregations_keeps_each_one() -> None:
    compiled = compile_aggregations([A("terms", field="email"), A("max", field="age")], CATALOG)
    assert compiled == {
        "terms_email": {"terms": {"field": "email"}},
        "max_age": {"max": {"field": "age"}},
    }


def test_a_dict_names_its_aggregations_objects_or_raw_bodies() -> None:
    compiled = compile_aggregations(
        {
            "by_company": A("terms", field="company_id").metric("oldest", "max", field="age"),
            "ages": {"histogram": {"field": "age", "interval": 10}},
            "raw": {
                "terms": {"field": "email"},
                "aggregations": {"n": {"sum": {"field": "visits"}}},
            },
        },
        CATALOG,
    )
    assert compiled == {
        "by_company": {
            "terms": {"field": "company_id"},
            "aggs": {"oldest": {"max": {"field": "age"}}},
        },
        "ages": {"histogram": {"field": "age", "interval": 10}},
        "raw": {"terms": {"field": "email"}, "aggs": {"n": {"sum": {"field": "visits"}}}},
    }


def test_a_text_field_is_aggregated_on_its_keyword_subfield() -> None:
    assert compile_aggregations({"names": A("terms", field="name")}, CATALOG) == {
        "names": {"terms": {"field": "name.keyword"}}
    }


def test_nested_fields_inside_their_nested_aggregation() -> None:
    spec = A("nested", path="reviews")
    spec.bucket("by_author", "terms", field="reviews.author").bucket(
        "back", "reverse_nested"
    ).metric("ages", "avg", field="age")
    compiled = compile_aggregations({"reviews": spec}, CATALOG)
    assert compiled["reviews"]["nested"] == {"path": "reviews"}
    by_author = compiled["reviews"]["aggs"]["by_author"]
    assert by_author["terms"] == {"field": "reviews.author"}
    assert by_author["aggs"]["back"]["aggs"]["ages"] == {"avg": {"field": "age"}}


def test_fields_inside_parameters_are_checked() -> None:
    composite = {"composite": {"sources": [{"who": {"terms": {"field": "emial"}}}]}}
    with pytest.raises(QueryValidationError) as info:
        compile_aggregations({"pages": composite}, CATALOG)
    assert info.value.field == "emial"


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (A("terms", field="compnay_id"), "compnay_id", "did you mean 'company_id'"),
        ({"x": A("avg", field="nope")}, "nope", "Unknown field 'nope'"),
        ({"x": {"terms": {"field": "address"}}}, "address", "it is an object"),
        ({"x": {"terms": {"field": "bio"}}}, "bio", "no keyword subfield"),
        (
            {"x": A("terms", field="reviews.author")},
            "reviews.author",
            "A('nested', path='reviews')",
        ),
        (
            {"x": A("nested", path="reviews").metric("a", "avg", field="age")},
            "age",
            "A('reverse_nested')",
        ),
        ({"x": A("nested", path="address")}, "address", "not a nested field"),
        ({"x": A("nested", path="reviews.replies")}, "reviews.replies", "under the nested path"),
        ({"x": {"reverse_nested": {"path": "reviews"}}}, "reviews", "not one of the enclosing"),
        ({"x": {"terms": {"field": "age"}, "avg": {"field": "age"}}}, "x", "not an aggregation"),
        ({"x": {"nosuch": {"field": "age"}}}, "x", "nosuch"),
        ({"x": {"field": "age"}}, "x", "not an aggregation body"),
        ({"x": "terms:age"}, "x", "expected an aggregation object or a dict"),
    ],
)
def test_errors_name_the_field_or_the_aggregation(spec: Any, field: str, words: str) -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_aggregations(spec, CATALOG)
    assert info.value.field == field
    assert words in str(info.value)


@pytest.mark.parametrize(
    "spec",
    [5, [A("avg", field="age"), "terms:age"], {"": A("avg", field="age")}],  # type: ignore[list-item]
)
def test_other_values_are_refused_naming_aggregations(spec: Any) -> None:
    with pytest.raises(QueryValidationError, match="aggregations takes") as info:
        compile_aggregations(spec, CATALOG)
    assert info.value.field == "aggregations"


def test_two_aggregations_with_one_name_are_refused() -> None:
    with pytest.raises(QueryValidationError, match="Duplicate aggregation name 'avg_age'"):
        compile_aggregations([A("avg", field="age"), A("avg", field="age")], CATALOG)


def test_empty_collections_ask_for_nothing() -> None:
    assert compile_aggregations({}, CATALOG) == {}
    assert compile_aggregations([], CATALOG) == {}


def test_results_are_typed_by_the_aggregation_asked_for_not_by_the_name() -> None:
    request = compile_aggregations(
        {
            "avg_things": A("terms", field="company_id").metric("terms_x", "max", field="age"),
            "terms_oldest": A("max", field="age"),
        },
        CATALOG,
    )
    raw: dict[str, Any] = {
        "avg_things": {"buckets": [{"key": "acme", "doc_count": 2, "terms_x": {"value": 40}}]},
        "terms_oldest": {"value": 41},
    }
    aggs = parse_aggregations(raw, request=request)
    things = aggs.terms("avg_things")
    assert isinstance(things, BucketAggregate) and things.keys() == ["acme"]
    assert things.buckets[0].aggregations.value("terms_x") == 40
    assert isinstance(aggs["terms_oldest"], ValueAggregate) and aggs.value("terms_oldest") == 41
