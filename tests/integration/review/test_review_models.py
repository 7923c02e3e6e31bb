"""Review: lenient hydration, partial loads, find_as paging, PartialPatch checks."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from tests.integration.repository.books import Book, Genre, Review
from tests.integration.repository.conftest import book_mapper, books  # noqa: F401


@pytest.fixture
def newer(books: em.Repository[Book], es_client: Elasticsearch) -> Iterator[str]:  # noqa: F811
    es_client.index(
        index=books.spec.alias,
        id="n0",
        document={
            "id": "n0",
            "title": "Newer",
            "genre": "poetry",
            "pages": 100,
            "is_deleted": False,
            "reviews": [{"author": "a", "rating": 5, "genre": "drama"}],
            "best": {"author": "b", "rating": 4, "genre": "drama"},
            "shelf": "added by the newer deploy",
        },
        refresh=True,
    )
    yield "n0"


def test_partial_load_then_save_keeps_unknown_nested_values(
    books: em.Repository[Book], newer: str, es_client: Elasticsearch  # noqa: F811
) -> None:
    book = books.find_one(includes=["title", "reviews"])
    assert book is not None
    book.reviews[0].rating = 1
    books.save(book)
    stored = es_client.get(index=books.spec.alias, id=newer)["_source"]
    assert stored["reviews"] == [{"author": "a", "rating": 1, "genre": "drama"}]
    assert stored["genre"] == "poetry" and stored["shelf"] == "added by the newer deploy"


def test_full_load_append_then_save_keeps_unknown_values(
    books: em.Repository[Book], newer: str, es_client: Elasticsearch  # noqa: F811
) -> None:
    book = books.get(newer)
    assert book is not None
    book.reviews.append(Review(author="c", rating=3, genre=Genre.TECH))
    book.title = "changed"
    books.save(book)
    stored = es_client.get(index=books.spec.alias, id=newer)["_source"]
    assert stored["genre"] == "poetry"
    assert stored["reviews"][0] == {"author": "a", "rating": 5, "genre": "drama"}
    assert stored["best"]["genre"] == "drama"


@attrs.define
class Card:
    title: str = ""
    genre: Genre = Genre.TECH


def test_find_as_attrs_projection_of_an_unknown_value_does_not_break_the_read(
    books: em.Repository[Book], newer: str  # noqa: F811
) -> None:
    cards = books.find_as(Card).documents
    assert [c.title for c in cards] == ["Newer"]


def test_find_as_pages_with_a_snapshot(books: em.Repository[Book]) -> None:  # noqa: F811
    books.add([Book(title=f"t{i}", pages=i) for i in range(7)], consistency="immediate")
    results = books.find_as(dict, limit=3, snapshot=True, sort="pages")
    seen = [d["title"] for d in results.documents]
    while results.next_page():
        seen += [d["title"] for d in results.documents]
    assert seen == [f"t{i}" for i in range(7)]
    assert all(isinstance(d, dict) for d in results.documents)


def test_find_as_session_and_projection_with_snapshot_and_search_after(
    books: em.Repository[Book],  # noqa: F811
) -> None:
    books.add([Book(title=f"s{i}", pages=i) for i in range(5)], consistency="immediate")
    results = books.find_as(Card, limit=2, snapshot=True, sort="-pages")
    seen = [c.title for c in results.documents]
    while results.next_page():
        seen += [c.title for c in results.documents]
    assert seen == [f"s{i}" for i in reversed(range(5))]


class Part(em.InnerDoc):
    sku: str  # required: no default
    qty: int = 0


class Order(em.Document):
    class Index:
        name = "orders"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    parts: list[Part] = em.field(em.Nested(Part), factory=list)


def test_partial_patch_list_items_are_whole_objects_not_partial_ones(
    es_url: str, index_prefix: str, es_client: Elasticsearch
) -> None:
    """The Update API replaces a list; it never merges list items. A dict item checked as
    a *partial* object (only some fields) is stored as the whole item, missing its
    required ``sku``."""
    with em.Mapper(es_url, models=[Order], index_prefix=index_prefix) as mapper:
        orders = mapper.repository(Order)
        orders.add(Order(id="o1", parts=[Part(sku="A", qty=1)]), consistency="wait")
        with pytest.raises(em.DocumentValidationError):
            orders.patch("o1", em.PartialPatch({"parts": [{"qty": 2}]}))
        stored = es_client.get(index=orders.spec.alias, id="o1")["_source"]
        assert stored["parts"] == [{"sku": "A", "qty": 1}]


def test_exists_filter_and_find_as_hide_a_soft_delete_not_yet_refreshed(
    books: em.Repository[Book],  # noqa: F811
) -> None:
    book = books.add(Book(id="sd1", title="Dune"), consistency="wait")
    assert books.exists(filter="title:Dune")
    book.is_deleted = True
    books.save(book)  # soft delete, eventual: not refreshed yet
    assert books.find(filter="title:Dune").documents == []
    assert not books.exists(filter="title:Dune")
    assert books.find_as(dict, filter="title:Dune").documents == []
    assert books.count("title:Dune") == 0
