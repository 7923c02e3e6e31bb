"""``em.field(em.Nested(Review))`` / ``em.field(em.Object(Address))`` against the server:
the mapping it creates, round trips, and nested queries holding on one review."""

from __future__ import annotations

from elasticsearch import Elasticsearch

import esmapper as em

from .books import Address, Book, Review


def test_the_server_maps_the_declared_classes_as_nested_and_object(
    books: em.Repository[Book], es_client: Elasticsearch
) -> None:
    mapping = es_client.indices.get_mapping(index=books.spec.alias).body
    properties = next(iter(mapping.values()))["mappings"]["properties"]
    assert properties["reviews"]["type"] == "nested"
    assert properties["reviews"]["properties"]["author"] == {"type": "keyword"}
    assert properties["best"]["type"] == "nested"
    assert properties["address"]["properties"]["city"] == {"type": "keyword"}
    assert properties["address"].get("type", "object") == "object"


def test_lists_and_single_objects_round_trip(books: em.Repository[Book]) -> None:
    book = Book(
        id="b1",
        title="Dune",
        reviews=[Review(author="a", rating=4), {"author": "b", "rating": 5}],  # type: ignore[list-item]
        best=Review(author="b", rating=5),
        address=Address(city="Oslo", country="NO"),
    )
    books.add(book, consistency="wait")
    stored = books.get("b1")
    assert stored is not None
    assert stored.reviews == [Review(author="a", rating=4), Review(author="b", rating=5)]
    assert stored.best == Review(author="b", rating=5)
    assert stored.address == Address(city="Oslo", country="NO")
    found = books.find("reviews.author:b").documents
    assert [b.reviews for b in found] == [stored.reviews]
    stored.reviews.append(Review(author="c", rating=1))
    books.save(stored, consistency="wait")
    reloaded = books.get("b1")
    assert reloaded is not None
    assert [r.author for r in reloaded.reviews] == ["a", "b", "c"]


def test_and_on_one_nested_path_must_hold_on_one_review(books: em.Repository[Book]) -> None:
    books.add(
        [
            # rating 5 and author a, but on two different reviews
            Book(id="split", reviews=[Review(author="a", rating=1), Review(author="b", rating=5)]),
            Book(id="same", reviews=[Review(author="a", rating=5)]),
        ],
        consistency="wait",
    )
    assert [b.id for b in books.find("reviews.rating:5 AND reviews.author:a")] == ["same"]
    both = books.find("reviews.rating:5 OR reviews.author:a", sort="id")
    assert [b.id for b in both] == ["same", "split"]
    # NOT excludes documents with any review by b: "split" has one
    assert [b.id for b in books.find("reviews.rating:5 AND NOT reviews.author:b")] == ["same"]
    assert books.count("best.rating:5") == 0
