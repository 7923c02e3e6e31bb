"""``em.field(em.Nested(Review))`` / ``em.field(em.Object(Address))``: the elasticsearch.dsl
way of declaring embedded documents, with an ``em.InnerDoc`` class."""

from __future__ import annotations

import json
from typing import Any

import pytest

import esmapper as em
from esmapper.query import compile_filter

from .models import Address, Review

REVIEW_PROPERTIES = {
    "author": {"type": "keyword"},
    "rating": {"type": "long"},
    "comment": {"type": "text"},
    "posted": {"type": "date"},
}


class Shelf(em.Document):
    class Index:
        name = "shelves"

    reviews: list[Review] = em.field(em.Nested(Review), factory=list)
    best: Review | None = em.field(em.Nested(Review, include_in_parent=True), default=None)
    address: Address | None = em.field(em.Object(Address), default=None)
    places: list[Address] = em.field(em.Object(Address), factory=list)
    loose: list = em.field(em.Nested(Review), factory=list)  # type: ignore[type-arg]


PROPERTIES = Shelf.__esmapper__.mapping["properties"]


def test_nested_with_an_inner_doc_maps_its_properties_as_nested() -> None:
    assert PROPERTIES["reviews"] == {"type": "nested", "properties": REVIEW_PROPERTIES}


def test_the_mapping_options_given_with_the_class_are_kept() -> None:
    assert PROPERTIES["best"] == {
        "type": "nested",
        "include_in_parent": True,
        "properties": REVIEW_PROPERTIES,
    }


def test_object_with_an_inner_doc_maps_like_the_inferred_object() -> None:
    class Inferred(em.Document):
        address: Address | None = None

    assert PROPERTIES["address"] == Inferred.__esmapper__.mapping["properties"]["address"]
    assert PROPERTIES["places"]["type"] == "object"
    assert set(PROPERTIES["places"]["properties"]) == {"street", "city", "zip_code"}


def test_a_bare_list_annotation_takes_the_class_from_the_mapping() -> None:
    assert PROPERTIES["loose"] == PROPERTIES["reviews"]
    assert Shelf(loose=[{"rating": 2}]).loose == [Review(rating=2)]


def test_the_mapping_is_json() -> None:
    assert json.loads(json.dumps(Shelf.__esmapper__.mapping))["properties"] == PROPERTIES


def test_values_are_checked_and_converted_like_inferred_embedded_fields() -> None:
    shelf = Shelf(reviews=[Review(rating=5), {"author": "a", "rating": 3}], best={"rating": 1})  # type: ignore[arg-type, list-item]
    assert shelf.reviews == [Review(rating=5), Review(author="a", rating=3)]
    assert shelf.best == Review(rating=1)
    with pytest.raises(em.DocumentValidationError, match=r"Shelf\.reviews") as raised:
        Shelf(reviews=["not a review"])  # type: ignore[list-item]
    assert raised.value.field == "reviews"


@pytest.mark.parametrize(
    "values",
    [
        {"reviews": [{"author": "a", "rating": 5}, {"author": "b", "rating": 1}]},
        {"best": {"author": "c", "rating": 4}},
        {"address": {"city": "Oslo"}, "places": [{"city": "Lyon"}, {"street": "x"}]},
    ],
)
def test_single_objects_and_lists_round_trip(values: dict[str, Any]) -> None:
    shelf = Shelf(id="s1", **values)
    source = shelf.to_source()
    back = Shelf.from_hit({"_id": "s1", "_source": json.loads(json.dumps(source))})
    assert back == shelf
    assert back.to_source() == source


def test_a_nested_path_makes_conditions_hold_on_one_nested_object() -> None:
    catalog = Shelf.__esmapper__.catalog
    assert catalog.resolve("reviews.rating").nested_path == "reviews"
    assert catalog.resolve("address.city").nested_path is None
    query = compile_filter("reviews.rating:5 AND reviews.author:a", catalog).query
    assert query is not None
    assert query.to_dict() == {
        "nested": {
            "path": "reviews",
            "query": {
                "bool": {
                    "must": [
                        {"term": {"reviews.rating": 5}},
                        {"term": {"reviews.author": "a"}},
                    ]
                }
            },
        }
    }


def test_an_annotation_naming_another_class_is_refused() -> None:
    with pytest.raises(TypeError, match=r"'reviews'.*embeds Review.*annotate it"):

        class Wrong(em.Document):
            reviews: list[Address] = em.field(em.Nested(Review), factory=list)


def test_an_annotation_of_another_type_is_refused() -> None:
    with pytest.raises(TypeError, match=r"'notes'.*embeds Review"):

        class Wrong(em.Document):
            notes: list[str] = em.field(em.Nested(Review), factory=list)


def test_a_document_class_is_not_an_embedded_object() -> None:
    class Other(em.Document):
        name: str = ""

    with pytest.raises(TypeError, match=r"Nested\(Other\).*own index.*InnerDoc"):
        em.Nested(Other)
    with pytest.raises(TypeError, match=r"subclass of em\.InnerDoc"):
        em.Object(em.InnerDoc)


def test_properties_and_a_class_together_are_refused() -> None:
    with pytest.raises(TypeError, match=r"properties come from Review"):
        em.Nested(Review, properties={"rating": em.Integer()})


def test_the_dsl_forms_without_a_class_still_work() -> None:
    assert em.Nested().to_dict() == {"type": "nested"}
    assert em.Object(enabled=False).to_dict() == {"type": "object", "enabled": False}
    mapping = em.Nested(properties={"rating": em.Integer()}).to_dict()
    assert mapping == {"type": "nested", "properties": {"rating": {"type": "integer"}}}
