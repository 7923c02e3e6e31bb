"""compile_sort: golden table and errors (QY-15)."""

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
