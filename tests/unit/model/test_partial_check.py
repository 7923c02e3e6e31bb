"""``PartialPatch`` documents checked against the model (esmapper.model.partial): what is
refused, naming the field, and what the accepted values become."""

from __future__ import annotations

import datetime as dt
import enum
import math
from typing import Any

import pytest

import esmapper as em
from esmapper.model.partial import check_finite, check_partial

UTC = dt.timezone.utc


class Genre(enum.Enum):
    TECH = "tech"
    FABLE = "fable"


class Review(em.InnerDoc):
    author: str = ""
    rating: int = 0


class Address(em.InnerDoc):
    city: str = ""
    tags: list[str] = em.field(factory=list)


class Book(em.Document, em.HasDates, em.SoftDeletes, em.Versioned, em.HasCustomFields):
    class Index:
        name = "books"

    title: str = ""
    pages: int = 0
    price: float | None = None
    genre: Genre = Genre.TECH
    reviews: list[Review] = em.field(em.Nested(Review), factory=list)
    address: Address | None = None
    loose: Address | None = em.field(em.Object(Address, dynamic=True), default=None)
    meta: dict[str, Any] = em.field(factory=dict)


class Open(em.Document):
    class Index:
        name = "open"
        dynamic = True

    name: str = ""


def checked(doc: dict[str, Any], model: type = Book) -> dict[str, Any]:
    return check_partial(model.__esmapper__, doc)  # type: ignore[attr-defined]


def refused(doc: dict[str, Any], model: type = Book) -> em.DocumentValidationError:
    with pytest.raises(em.DocumentValidationError) as raised:
        checked(doc, model)
    return raised.value


def test_values_become_what_the_model_stores() -> None:
    at = dt.datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    assert checked(
        {
            "title": "t",
            "pages": 3.0,
            "price": 2,
            "genre": Genre.FABLE,
            "updated_utc": at,
            "is_deleted": True,
            "reviews": [Review(author="a", rating=5), {"rating": 1}],
            "address": Address(city="Oslo"),
            "meta": {"anything": [1, {"goes": None}]},
            "custom_fields": {"Level": 5},
        }
    ) == {
        "title": "t",
        "pages": 3,
        "price": 2.0,
        "genre": "fable",
        "updated_utc": "2026-05-01T12:00:00Z",
        "is_deleted": True,
        "reviews": [{"author": "a", "rating": 5}, {"author": "", "rating": 1}],  # whole items
        "address": {"city": "Oslo", "tags": []},
        "meta": {"anything": [1, {"goes": None}]},
        "custom_fields": {"Level": 5},
    }


def test_a_dict_for_an_embedded_object_stays_partial() -> None:
    assert checked({"address": {"city": "Lyon"}}) == {"address": {"city": "Lyon"}}


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        ({"titel": "x"}, "titel", "Book has no field 'titel'; did you mean 'title'?"),
        ({"zzz": 1}, "zzz", "Book has no field 'zzz' (fields: id, created_utc,"),
        ({"address": {"town": "x"}}, "address.town", "Address has no field 'town'"),
        ({"reviews": [{"stars": 5}]}, "reviews[0].stars", "Review has no field 'stars'"),
        ({"address.city": "x"}, "address.city", "write {'address': {'city': ...}}"),
        ({"id": "other"}, "id", "cannot be patched"),
        ({"version": "1:2"}, "version", "not stored in _source"),
    ],
)
def test_unknown_fields_are_refused_naming_the_path(
    doc: dict[str, Any], field: str, message: str
) -> None:
    error = refused(doc)
    assert error.field == field
    assert f"Book.{field}: " in str(error)
    assert message in str(error)


@pytest.mark.parametrize(
    ("doc", "field", "message"),
    [
        ({"pages": "many"}, "pages", "expected an integer, got 'many' (str)"),
        ({"pages": None}, "pages", "None is not allowed"),
        ({"genre": "poetry"}, "genre", "expected a Genre"),
        ({"updated_utc": "soon"}, "updated_utc", "expected a datetime"),
        ({"reviews": {"rating": 1}}, "reviews", "expected a list"),
        ({"reviews": [{"rating": "x"}]}, "reviews[0].rating", "expected an integer"),
        ({"address": "Oslo"}, "address", "expected Address or an object, got 'Oslo' (str)"),
        ({"address": {"tags": [1]}}, "address.tags[0]", "expected a string"),
        ({"price": math.nan}, "price", "expected a finite number, got nan"),
        ({"meta": {"x": [math.inf]}}, "meta.x[0]", "inf cannot be stored"),
    ],
)
def test_wrong_values_are_refused_naming_the_path(
    doc: dict[str, Any], field: str, message: str
) -> None:
    error = refused(doc)
    assert error.field == field
    assert message in str(error)


def test_an_inner_doc_mutated_in_place_is_normalized_first() -> None:
    address = Address(city="x")
    address.tags.append(5)  # type: ignore[arg-type]
    assert refused({"address": address}).field == "address.tags[0]"


def test_undeclared_fields_pass_where_the_mapping_is_dynamic() -> None:
    assert checked({"name": "n", "extra": {"a": 1}}, Open) == {"name": "n", "extra": {"a": 1}}
    assert checked({"loose": {"city": "x", "floor": 3}}) == {"loose": {"city": "x", "floor": 3}}
    assert refused({"extra": math.nan}, Open).field == "extra"
    assert refused({"name": 5}, Open).field == "name"  # declared fields are still checked


def test_check_finite_only_refuses_nan_and_infinities() -> None:
    info = Book.__esmapper__
    check_finite(info, {"whatever": "goes", "pages": "many"})
    with pytest.raises(em.DocumentValidationError) as raised:
        check_finite(info, {"nested": {"deep": [1.0, -math.inf]}})
    assert raised.value.field == "nested.deep[1]"


class Part(em.InnerDoc):
    sku: str  # required: no default
    qty: int = 0
    genre: Genre = Genre.TECH
    where: Address | None = None
    tags: list[str] = em.field(factory=list)


class Order(em.Document):
    class Index:
        name = "orders"

    parts: list[Part] = em.field(em.Nested(Part), factory=list)
    open_parts: list[Part] = em.field(em.Nested(Part, dynamic=True), factory=list)
    main: Part | None = None


def test_a_list_item_is_a_complete_object_with_the_models_defaults() -> None:
    """The update replaces a list whole: each dict item is stored as the whole item, so it
    gets what the model would store for a new one (defaults in stored form), objects inside
    it too; an ``InnerDoc`` item is written as it is."""
    assert checked(
        {
            "parts": [
                {"sku": "a"},
                {"sku": "b", "qty": 2, "genre": Genre.FABLE, "where": {"city": "Oslo"}},
                Part(sku="c"),
            ],
            "open_parts": [{"sku": "d", "extra": 1}],  # undeclared keys where dynamic
        },
        Order,
    ) == {
        "parts": [
            {"sku": "a", "qty": 0, "genre": "tech", "where": None, "tags": []},
            {
                "sku": "b",
                "qty": 2,
                "genre": "fable",
                "where": {"city": "Oslo", "tags": []},
                "tags": [],
            },
            {"sku": "c", "qty": 0, "genre": "tech", "where": None, "tags": []},
        ],
        "open_parts": [
            {"sku": "d", "qty": 0, "genre": "tech", "where": None, "tags": [], "extra": 1}
        ],
    }


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"parts": [{"qty": 2}]}, "parts[0].sku"),
        ({"parts": [{"sku": "a"}, {"qty": 1}]}, "parts[1].sku"),
        ({"parts": [{"sku": "a", "where": {"city": "x", "zip": 1}}]}, "parts[0].where.zip"),
    ],
)
def test_a_list_item_missing_a_field_without_default_is_refused(
    doc: dict[str, Any], field: str
) -> None:
    error = refused(doc, Order)
    assert error.field == field
    if field.endswith("sku"):
        assert "a list is stored whole" in str(error)


def test_a_single_embedded_object_stays_a_merge_even_with_required_fields() -> None:
    """Decision: a dict for one embedded object is merged into the stored one (patching
    ``main.qty`` must not reset ``main.sku``); an instance is written whole."""
    assert checked({"main": {"qty": 3}}, Order) == {"main": {"qty": 3}}
    assert checked({"main": Part(sku="x")}, Order)["main"]["sku"] == "x"
