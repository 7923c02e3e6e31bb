"""compile_sort: golden table and errors."""

from __future__ import annotations

from typing import Any

import pytest

from esmapper.errors import QueryValidationError
from esmapper.model.catalog import FieldCatalog
from esmapper.query import compile_sort

from .mapping import CATALOG, CATALOG_WITH_ID, MAPPING

GOLDEN: list[tuple[str | list[str] | None, list[dict[str, Any]]]] = [
    (None, []),
    ("", []),
    ("   ", []),
    ("age", [{"age": {"order": "asc"}}]),
    ("+age", [{"age": {"order": "asc"}}]),
    ("-age", [{"age": {"order": "desc"}}]),
    ("-age name", [{"age": {"order": "desc"}}, {"name.keyword": {"order": "asc"}}]),
    ("-age,name", [{"age": {"order": "desc"}}, {"name.keyword": {"order": "asc"}}]),
    (["-created_utc", "email"], [{"created_utc": {"order": "desc"}}, {"email": {"order": "asc"}}]),
    (["-score visits"], [{"score": {"order": "desc"}}, {"visits": {"order": "asc"}}]),
    ("name.keyword", [{"name.keyword": {"order": "asc"}}]),
    ("is_active", [{"is_active": {"order": "asc"}}]),
    ("address.city", [{"address.city": {"order": "asc"}}]),
    (
        "-reviews.rating",
        [{"reviews.rating": {"order": "desc", "nested": {"path": "reviews"}}}],
    ),
    (
        "reviews.replies.by",
        [
            {
                "reviews.replies.by": {
                    "order": "asc",
                    "nested": {"path": "reviews", "nested": {"path": "reviews.replies"}},
                }
            }
        ],
    ),
    ("_score", [{"_score": {"order": "desc"}}]),
    ("-_score", [{"_score": {"order": "desc"}}]),
    ("+_score", [{"_score": {"order": "asc"}}]),
    ("_doc", [{"_doc": {"order": "asc"}}]),
    ("-_doc", [{"_doc": {"order": "desc"}}]),
]


@pytest.mark.parametrize(("expr", "expected"), GOLDEN, ids=[repr(g[0]) for g in GOLDEN])
def test_golden(expr: str | list[str] | None, expected: list[dict[str, Any]]) -> None:
    assert compile_sort(expr, CATALOG) == expected


def test_text_fields_prefer_the_sort_subfield() -> None:
    mapping = {
        "properties": {
            "title": {
                "type": "text",
                "fields": {
                    "keyword": {"type": "keyword"},
                    "sort": {"type": "keyword", "normalizer": "sort"},
                },
            }
        }
    }
    assert compile_sort("-title", FieldCatalog(mapping)) == [{"title.sort": {"order": "desc"}}]


@pytest.mark.parametrize("name", ["id", "_id", "-id"])
def test_id_sorts_on_the_mapped_id_field(name: str) -> None:
    order = "desc" if name.startswith("-") else "asc"
    assert compile_sort(name, CATALOG_WITH_ID) == [{"id": {"order": order}}]


@pytest.mark.parametrize("name", ["id", "_id"])
def test_id_without_a_mapped_id_field_is_refused(name: str) -> None:
    with pytest.raises(QueryValidationError, match="_id metadata field") as info:
        compile_sort(name, CATALOG)
    assert info.value.field == name


@pytest.mark.parametrize(
    ("expr", "field", "position", "words"),
    [
        ("nmae", "nmae", 0, "did you mean 'name'"),
        ("-age nope", "nope", 5, "Unknown field 'nope'"),
        ("bio", "bio", 0, "without a sortable"),
        ("address", "address", 0, "is an object"),
        ("reviews", "reviews", 0, "is an object"),
        ("--age", None, 0, "Invalid sort term"),
        ("age -", None, 4, "Invalid sort term"),
        ("age +-x", None, 4, "Invalid sort term"),
    ],
)
def test_errors(expr: str, field: str | None, position: int, words: str) -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_sort(expr, CATALOG)
    assert words in str(info.value)
    assert info.value.field == field
    assert info.value.position == position
    assert info.value.expression == expr


def test_aliases_are_followed() -> None:
    catalog = FieldCatalog(MAPPING, aliases={"years": "age"})
    assert compile_sort("-years", catalog) == [{"age": {"order": "desc"}}]


# -- dsl-style sort dicts ----------------------------------------------------------------------

DSL_GOLDEN: list[tuple[Any, list[dict[str, Any]]]] = [
    ({"age": "desc"}, [{"age": {"order": "desc"}}]),
    ({"age": "ASC"}, [{"age": {"order": "asc"}}]),
    ([{"age": "desc"}], [{"age": {"order": "desc"}}]),
    ({"name": "asc"}, [{"name.keyword": {"order": "asc"}}]),
    ({"age": "desc", "email": "asc"}, [{"age": {"order": "desc"}}, {"email": {"order": "asc"}}]),
    (
        ["company_id", {"age": "desc"}, "-email"],
        [
            {"company_id": {"order": "asc"}},
            {"age": {"order": "desc"}},
            {"email": {"order": "desc"}},
        ],
    ),
    (
        {"age": {"order": "desc", "missing": "_last"}},
        [{"age": {"order": "desc", "missing": "_last"}}],
    ),
    ({"age": {"missing": 0}}, [{"age": {"order": "asc", "missing": 0}}]),
    (
        {"visits": {"order": "desc", "mode": "max", "numeric_type": "long"}},
        [{"visits": {"order": "desc", "mode": "max", "numeric_type": "long"}}],
    ),
    (
        {"created_utc": {"format": "strict_date_optional_time"}},
        [{"created_utc": {"order": "asc", "format": "strict_date_optional_time"}}],
    ),
    (
        {"reviews.rating": "desc"},
        [{"reviews.rating": {"order": "desc", "nested": {"path": "reviews"}}}],
    ),
    (
        {
            "reviews.rating": {
                "nested": {"path": "reviews", "filter": {"term": {"reviews.author": "a"}}}
            }
        },
        [
            {
                "reviews.rating": {
                    "order": "asc",
                    "nested": {"path": "reviews", "filter": {"term": {"reviews.author": "a"}}},
                }
            }
        ],
    ),
    ({"_score": {}}, [{"_score": {"order": "desc"}}]),
    ({"_score": "asc"}, [{"_score": {"order": "asc"}}]),
    ({"_doc": "asc"}, [{"_doc": {"order": "asc"}}]),
    ({}, []),
]


@pytest.mark.parametrize(("spec", "expected"), DSL_GOLDEN, ids=[repr(g[0]) for g in DSL_GOLDEN])
def test_dsl_sort_dicts(spec: Any, expected: list[dict[str, Any]]) -> None:
    assert compile_sort(spec, CATALOG) == expected


def test_a_dsl_dict_sorts_by_id_on_the_mapped_field() -> None:
    assert compile_sort({"_id": "desc"}, CATALOG_WITH_ID) == [{"id": {"order": "desc"}}]


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({"agee": "desc"}, "agee", "did you mean 'age'"),
        ({"bio": "asc"}, "bio", "without a sortable"),
        ({"address": "asc"}, "address", "is an object"),
        ({"age": "down"}, "age", "order='down' is not 'asc' or 'desc'"),
        ({"age": {"order": 1}}, "age", "order=1"),
        ({"age": 3}, "age", "'asc', 'desc' or a dict of sort options"),
        ({"age": {"ordre": "asc"}}, "age", "unknown option 'ordre'"),
        ({"age": {"mode": "first"}}, "age", "mode='first'"),
        ({"age": {"numeric_type": "int"}}, "age", "numeric_type='int'"),
        ({"age": {"missing": None}}, "age", "missing=None"),
        ({"age": {"missing": ["a"]}}, "age", "missing=['a']"),
        ({"age": {"format": 3}}, "age", "format=3 is not a string"),
        ({"age": {"nested": {"path": "reviews"}}}, "age", "not under a nested path"),
        ({"reviews.rating": {"nested": {"path": "address"}}}, "reviews.rating", "'reviews'"),
        ({"_score": {"missing": "_last"}}, "_score", "takes only an order"),
    ],
)
def test_dsl_sort_dict_errors_name_the_field(spec: Any, field: str, words: str) -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_sort(spec, CATALOG)
    assert info.value.field == field
    assert words in str(info.value)


@pytest.mark.parametrize(
    "spec", [5, 2.5, b"age", True, [5], ["age", 3], [("age", "desc")], {1: "asc"}, {"": "asc"}]
)
def test_anything_else_is_refused_naming_sort(spec: Any) -> None:
    with pytest.raises(QueryValidationError, match="sort takes") as info:
        compile_sort(spec, CATALOG)
    assert info.value.field == "sort"


def test_a_list_of_expressions_reports_positions_in_its_own_item() -> None:
    with pytest.raises(QueryValidationError) as info:
        compile_sort(["age", "-nope"], CATALOG)
    assert (info.value.field, info.value.position, info.value.expression) == ("nope", 0, "-nope")
