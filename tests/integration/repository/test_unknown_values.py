"""A stored value the model does not know (here: an enum value of a newer deploy, written
with the raw client) never breaks a read, is reported once, and survives saves."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.model.lenient import reset_reported

from .books import Book, Genre, Review


@pytest.fixture(autouse=True)
def fresh_reports() -> Iterator[None]:
    reset_reported()
    yield
    reset_reported()


@pytest.fixture
def newer(books: em.Repository[Book], es_client: Elasticsearch) -> list[str]:
    """Three documents written by a newer deploy: genre "poetry", a review genre "drama"."""
    ids = [f"n{i}" for i in range(3)]
    for i, id in enumerate(ids):
        es_client.index(
            index=books.spec.alias,
            id=id,
            document={
                "id": id,
                "title": f"Newer {i}",
                "genre": "poetry",
                "pages": 100 + i,
                "is_deleted": False,
                "reviews": [{"author": "a", "rating": 5, "genre": "drama"}],
                "shelf": "added by the newer deploy",
            },
        )
    es_client.indices.refresh(index=books.spec.alias)
    return ids


def model_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "esmapper.model" and r.levelno >= logging.WARNING
    ]


def test_get_find_and_batch_process_load_the_value_as_stored(
    books: em.Repository[Book], newer: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    book = books.get("n0")
    assert book is not None
    assert (book.title, book.genre, book.pages) == ("Newer 0", "poetry", 100)  # type: ignore[comparison-overlap]
    assert book.reviews[0].genre == "drama"  # type: ignore[comparison-overlap]
    assert [b.genre for b in books.get_many(newer)] == ["poetry"] * 3
    assert [b.id for b in books.find("pages:>=100", sort="pages")] == newer
    seen: list[Any] = []
    assert books.batch_process("*", seen.extend, batch_size=2) == 3
    assert sorted(b.id for b in seen) == newer
    warned = model_warnings(caplog)
    assert warned == [
        "Book 'n0': the stored value 'poetry' of field genre is not one the model knows "
        "(ValueError: 'poetry' is not a valid Genre); loaded as stored, and a save writes it "
        "back unchanged (further reads of this value log at DEBUG)",
        "Book 'n0': the stored value 'drama' of field reviews[0].genre is not one the model "
        "knows (ValueError: 'drama' is not a valid Genre); loaded as stored, and a save "
        "writes it back unchanged (further reads of this value log at DEBUG)",
    ]


def test_a_save_writes_the_value_back_unchanged(
    books: em.Repository[Book], newer: list[str], es_client: Elasticsearch
) -> None:
    book = books.get("n1")
    assert book is not None
    book.pages += 10
    book.reviews.append(Review(author="b", rating=3, genre=Genre.FABLE))
    books.save(book, consistency="wait")
    stored = es_client.get(index=books.spec.alias, id="n1")["_source"]
    assert (stored["genre"], stored["pages"], stored["shelf"]) == (
        "poetry",
        111,
        "added by the newer deploy",
    )
    assert [r["genre"] for r in stored["reviews"]] == ["drama", "fable"]


def test_a_session_flush_keeps_it_too(
    book_mapper: em.Mapper, books: em.Repository[Book], newer: list[str], es_client: Elasticsearch
) -> None:
    with book_mapper.session(consistency="wait") as session:
        found = session.find(Book, "pages:>=101")
        assert [b.genre for b in found] == ["poetry", "poetry"]  # type: ignore[comparison-overlap]
        found.documents[0].title = "Renamed"
    stored = es_client.get(index=books.spec.alias, id="n1")["_source"]
    assert (stored["title"], stored["genre"]) == ("Renamed", "poetry")
    assert stored["reviews"][0]["genre"] == "drama"
    untouched = es_client.get(index=books.spec.alias, id="n2")
    assert untouched["_version"] == 1  # an unchanged document is not rewritten


def test_the_known_values_of_other_documents_are_unaffected(
    books: em.Repository[Book], newer: list[str]
) -> None:
    books.add(Book(id="old", genre=Genre.FABLE, pages=5), consistency="wait")
    book = books.get("old")
    assert book is not None and book.genre is Genre.FABLE
    assert books.count("genre:poetry") == 3


def test_a_partially_loaded_save_keeps_unknown_values_inside_a_list_loaded_whole(
    books: em.Repository[Book], newer: list[str], es_client: Elasticsearch
) -> None:
    book = books.find_one("title:Newer AND pages:100", includes=["title", "reviews"])
    assert book is not None and book.id == "n0"
    book.reviews[0].rating = 1
    books.save(book)
    stored = es_client.get(index=books.spec.alias, id="n0")["_source"]
    assert stored["reviews"] == [{"author": "a", "rating": 1, "genre": "drama"}]
    assert stored["genre"] == "poetry" and stored["shelf"] == "added by the newer deploy"


def test_a_list_appended_to_keeps_the_unknown_values_of_its_other_items(
    books: em.Repository[Book], newer: list[str], es_client: Elasticsearch
) -> None:
    book = books.get("n0")
    assert book is not None
    book.reviews.append(Review(author="c", rating=3, genre=Genre.TECH))
    book.title = "changed"
    books.save(book)
    stored = es_client.get(index=books.spec.alias, id="n0")["_source"]
    assert stored["genre"] == "poetry"
    assert stored["reviews"][0] == {"author": "a", "rating": 5, "genre": "drama"}
    assert stored["reviews"][1] == {"author": "c", "rating": 3, "genre": "tech"}


@attrs.define
class Card:
    title: str = ""
    genre: Genre = Genre.TECH


def test_find_as_a_projection_holding_an_unknown_value_does_not_break_the_read(
    books: em.Repository[Book], newer: list[str]
) -> None:
    cards = books.find_as(Card, sort="pages").documents
    assert [c.title for c in cards] == ["Newer 0", "Newer 1", "Newer 2"]
