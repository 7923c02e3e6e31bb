"""FieldCatalog: how dotted field names resolve against a model's mapping."""

from __future__ import annotations

import pytest

from esmapper.model import FieldCatalog, FieldInfo

from .models import Everything

CATALOG = Everything.__esmapper__.catalog

RAW = FieldCatalog(
    {
        "properties": {
            "title": {
                "type": "text",
                "fields": {
                    "raw": {"type": "keyword"},
                    "sort": {"type": "keyword", "normalizer": "lowercase"},
                },
            },
            "bio": {"type": "text"},
            "summary": {"type": "match_only_text", "fields": {"exact": {"type": "wildcard"}}},
            "geo": {"properties": {"point": {"properties": {"lat": {"type": "double"}}}}},
            "threads": {
                "type": "nested",
                "properties": {
                    "topic": {"type": "keyword"},
                    "posts": {
                        "type": "nested",
                        "properties": {"by": {"type": "keyword"}, "at": {"type": "date"}},
                    },
                },
            },
        }
    },
    aliases={"heading": "title", "poster": "threads.posts.by", "dangling": "nowhere"},
)


def test_a_plain_field_resolves_to_its_type() -> None:
    age = CATALOG.resolve("age")
    assert age == FieldInfo(path="age", type="long", sort="age")
    assert (age.is_numeric, age.is_exact, age.is_text, age.is_date) == (True, True, False, False)
    assert age.nested_path is None
    assert age.exact_path == "age"
    assert CATALOG.resolve("born").is_date
    assert CATALOG.resolve("active").type == "boolean"
    assert CATALOG.resolve("id").type == "keyword"


def test_a_text_field_knows_its_keyword_subfield() -> None:
    name = CATALOG.resolve("name")
    assert name.type == "text"
    assert name.is_text and not name.is_exact
    assert name.keyword == "name.keyword"
    assert name.exact_path == "name.keyword"
    assert name.sort == "name.keyword"


def test_a_subfield_resolves_by_its_dotted_name() -> None:
    keyword = CATALOG.resolve("name.keyword")
    assert keyword.path == "name.keyword"
    assert keyword.type == "keyword"
    assert keyword.sort == "name.keyword"


def test_a_sort_subfield_is_preferred_for_sorting() -> None:
    title = RAW.resolve("title")
    assert title.keyword == "title.raw"
    assert title.sort == "title.sort"


def test_a_text_field_without_exact_subfield_is_neither_exact_nor_sortable() -> None:
    bio = RAW.resolve("bio")
    assert bio.keyword is None
    assert bio.sort is None
    assert bio.exact_path is None


def test_any_exact_subfield_type_serves_as_the_keyword() -> None:
    summary = RAW.resolve("summary")
    assert summary.is_text
    assert summary.keyword == "summary.exact"
    assert RAW.resolve("summary.exact").type == "wildcard"


def test_an_object_path_resolves_without_nested_paths() -> None:
    city = CATALOG.resolve("address.city")
    assert (city.path, city.type, city.nested_paths) == ("address.city", "keyword", ())
    address = CATALOG.resolve("address")
    assert address.is_container
    assert set(address.properties) == {"street", "city", "zip_code"}
    assert RAW.resolve("geo.point.lat").type == "double"
    assert RAW.resolve("geo").type == "object"  # no explicit type


def test_a_field_inside_nested_objects_lists_the_enclosing_nested_paths() -> None:
    rating = CATALOG.resolve("reviews.rating")
    assert rating.nested_paths == ("reviews",)
    assert rating.nested_path == "reviews"
    assert CATALOG.resolve("reviews").nested_paths == ()
    assert CATALOG.resolve("reviews").type == "nested"
    assert CATALOG.resolve("reviews.comment").is_text

    by = RAW.resolve("threads.posts.by")
    assert by.nested_paths == ("threads", "threads.posts")
    assert by.nested_path == "threads.posts"
    assert RAW.resolve("threads.posts").nested_paths == ("threads",)


def test_fields_of_inner_docs_in_a_plain_list_are_object_paths() -> None:
    assert CATALOG.resolve("addresses.city").nested_paths == ()


def test_aliases_resolve_to_the_real_field() -> None:
    assert RAW.resolve("heading") == RAW.resolve("title")
    assert RAW.resolve("poster").path == "threads.posts.by"
    assert RAW.resolve("poster").nested_paths == ("threads", "threads.posts")


@pytest.mark.parametrize(
    "name", ["nope", "Name", "name.raw", "address.town", "reviews.rating.x", "", "dangling"]
)
def test_an_unknown_name_is_a_key_error(name: str) -> None:
    catalog = RAW if name == "dangling" else CATALOG
    with pytest.raises(KeyError):
        catalog.resolve(name)
    assert catalog.get(name) is None
    assert name not in catalog


def test_membership_and_listing() -> None:
    assert "name.keyword" in CATALOG
    assert 42 not in CATALOG
    assert "version" not in CATALOG  # metadata, not a mapped field
    names = CATALOG.names()
    assert names == sorted(names)
    assert {"address.zip_code", "reviews.posted", "custom_fields", "meta"} <= set(names)
    assert {info.path for info in CATALOG} == set(names)


def test_the_catalog_is_built_once_per_model() -> None:
    assert Everything.__esmapper__.catalog is CATALOG
