"""NaN and infinities in float fields are refused before anything is sent: on add, save,
a session flush and in PartialPatch values (they used to be stored as null)."""

from __future__ import annotations

import math

import pytest
from elasticsearch import Elasticsearch

import esmapper as em

from .books import Book


def stored(es_client: Elasticsearch, books: em.Repository[Book], id: str) -> dict[str, object]:
    source: dict[str, object] = es_client.get(index=books.spec.alias, id=id)["_source"]
    return source


def test_add_refuses_them_and_sends_nothing(
    books: em.Repository[Book], es_client: Elasticsearch
) -> None:
    with pytest.raises(em.DocumentValidationError, match=r"Book\.score: expected a finite"):
        Book(id="b1", score=math.nan)
    book = Book(id="b1", scores=[1.5])
    book.scores.append(math.inf)
    with pytest.raises(em.DocumentValidationError) as raised:
        books.add(book, consistency="wait")
    assert raised.value.field == "scores[1]"
    assert not es_client.exists(index=books.spec.alias, id="b1")


def test_save_refuses_them_and_leaves_the_stored_document(
    books: em.Repository[Book], es_client: Elasticsearch
) -> None:
    book = books.add(Book(id="b1", score=2.5, scores=[1.0]), consistency="wait")
    with pytest.raises(em.DocumentValidationError, match=r"Book\.score"):
        book.score = -math.inf
    book.scores[0] = math.nan
    with pytest.raises(em.DocumentValidationError) as raised:
        books.save(book)
    assert raised.value.field == "scores[0]"
    assert stored(es_client, books, "b1")["scores"] == [1.0]


def test_a_session_flush_refuses_them(
    book_mapper: em.Mapper, books: em.Repository[Book], es_client: Elasticsearch
) -> None:
    books.add(Book(id="old", scores=[1.0]), consistency="wait")
    with pytest.raises(em.DocumentValidationError), book_mapper.session() as session:
        session.add(Book(id="new"))
        loaded = session.get(Book, "old")
        assert loaded is not None
        loaded.scores.append(math.inf)
    assert not es_client.exists(index=books.spec.alias, id="new")
    assert stored(es_client, books, "old")["scores"] == [1.0]


@pytest.mark.parametrize("doc", [{"score": math.nan}, {"scores": [1.0, -math.inf]}])
def test_partial_patch_values_are_refused(
    books: em.Repository[Book], es_client: Elasticsearch, doc: dict[str, object]
) -> None:
    books.add(Book(id="b1", score=1.0), consistency="wait")
    with pytest.raises(em.DocumentValidationError, match="expected a finite number"):
        books.patch("b1", em.PartialPatch(doc))
    with pytest.raises(em.DocumentValidationError, match="expected a finite number"):
        books.patch_all("*", em.PartialPatch(doc))
    with pytest.raises(em.DocumentValidationError, match="cannot be stored"):
        books.patch("b1", em.PartialPatch(doc), validate=False)
    assert es_client.get(index=books.spec.alias, id="b1")["_version"] == 1
