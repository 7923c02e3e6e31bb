"""``PartialPatch`` contents are checked against the model before anything is sent (an
unknown field used to be stored silently, a wrong type came back as a 400)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em

from .books import Address, Book, Genre, Review

UTC = dt.timezone.utc


@pytest.fixture
def book(books: em.Repository[Book]) -> Book:
    return books.add(
        Book(id="b1", title="Dune", address=Address(city="Oslo", country="NO")),
        consistency="wait",
    )


def stored(es_client: Elasticsearch, books: em.Repository[Book]) -> dict[str, Any]:
    response = es_client.get(index=books.spec.alias, id="b1")
    return {"_version": response["_version"], **response["_source"]}


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"titel": "typo"}, "titel"),
        ({"address": {"town": "Bergen"}}, "address.town"),
        ({"address.city": "Bergen"}, "address.city"),
        ({"pages": "many"}, "pages"),
        ({"genre": "poetry"}, "genre"),
        ({"reviews": [{"author": "a", "rating": "five"}]}, "reviews[0].rating"),
    ],
)
def test_patch_and_patch_all_refuse_before_sending(
    books: em.Repository[Book],
    book: Book,
    es_client: Elasticsearch,
    doc: dict[str, Any],
    field: str,
) -> None:
    before = stored(es_client, books)
    with pytest.raises(em.DocumentValidationError) as raised:
        books.patch("b1", em.PartialPatch(doc))
    assert raised.value.field == field
    assert f"Book.{field}" in str(raised.value)
    with pytest.raises(em.DocumentValidationError):
        books.patch_all("*", em.PartialPatch(doc), consistency="wait")
    assert stored(es_client, books) == before


def test_accepted_values_are_stored_as_the_model_stores_them(
    books: em.Repository[Book], book: Book, es_client: Elasticsearch
) -> None:
    books.patch(
        "b1",
        em.PartialPatch(
            {
                "genre": Genre.FABLE,
                "pages": 12.0,
                "best": Review(author="z", rating=2),
                "address": {"city": "Bergen"},  # merged: country is kept
                "updated_utc": dt.datetime(2030, 1, 2, tzinfo=UTC),
            }
        ),
        consistency="wait",
    )
    source = stored(es_client, books)
    assert source["genre"] == "fable"
    assert source["pages"] == 12
    assert source["best"] == {"author": "z", "rating": 2, "genre": None}
    assert source["address"] == {"city": "Bergen", "country": "NO"}
    assert source["updated_utc"] == "2030-01-02T00:00:00Z"
    reloaded = books.get("b1")
    assert reloaded is not None
    assert (reloaded.genre, reloaded.best) == (Genre.FABLE, Review(author="z", rating=2))


def test_validate_false_sends_what_the_model_does_not_declare(
    books: em.Repository[Book], book: Book, es_client: Elasticsearch
) -> None:
    # e.g. a migration clearing a field the model no longer declares
    books.patch("b1", em.PartialPatch({"legacy_flag": None}), validate=False, consistency="wait")
    assert "legacy_flag" in stored(es_client, books)


class Loose(em.Document):
    class Index:
        name = "loose"
        dynamic = True

    name: str = ""


@pytest.fixture
def loose(es_url: str, index_prefix: str) -> Iterator[em.Repository[Loose]]:
    with em.Mapper(es_url, models=[Loose], index_prefix=index_prefix) as mapper:
        mapper.configure_indexes()
        yield mapper.repository(Loose)


def test_a_dynamic_model_takes_undeclared_fields(
    loose: em.Repository[Loose], es_client: Elasticsearch
) -> None:
    loose.add(Loose(id="l1", name="n"), consistency="wait")
    loose.patch("l1", em.PartialPatch({"color": "red"}), consistency="wait")
    assert es_client.get(index=loose.spec.alias, id="l1")["_source"]["color"] == "red"
    with pytest.raises(em.DocumentValidationError) as raised:
        loose.patch("l1", em.PartialPatch({"name": 5}))
    assert raised.value.field == "name"


class Part(em.InnerDoc):
    sku: str  # required: no default
    qty: int = 0


class Order(em.Document):
    class Index:
        name = "orders"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    parts: list[Part] = em.field(em.Nested(Part), factory=list)


@pytest.fixture
def orders(es_url: str, index_prefix: str) -> Iterator[em.Repository[Order]]:
    with em.Mapper(es_url, models=[Order], index_prefix=index_prefix) as mapper:
        yield mapper.repository(Order)


def test_list_items_are_complete_objects_since_the_update_replaces_the_list(
    orders: em.Repository[Order], es_client: Elasticsearch
) -> None:
    """The Update API replaces a list, it never merges list items: a dict item naming
    only some fields would be stored as the whole item, missing its required ``sku``.
    It is refused; a complete one gets the model's defaults."""
    orders.add(Order(id="o1", parts=[Part(sku="A", qty=1)]), consistency="wait")
    with pytest.raises(em.DocumentValidationError) as caught:
        orders.patch("o1", em.PartialPatch({"parts": [{"qty": 2}]}))
    assert caught.value.field == "parts[0].sku"
    with pytest.raises(em.DocumentValidationError):
        orders.patch_all("*", em.PartialPatch({"parts": [{"qty": 2}]}))
    assert es_client.get(index=orders.spec.alias, id="o1")["_source"]["parts"] == [
        {"sku": "A", "qty": 1}
    ]

    orders.patch("o1", em.PartialPatch({"parts": [{"sku": "B"}]}), consistency="wait")
    assert es_client.get(index=orders.spec.alias, id="o1")["_source"]["parts"] == [
        {"sku": "B", "qty": 0}
    ]
