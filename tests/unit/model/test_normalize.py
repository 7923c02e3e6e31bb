"""``ModelInfo.normalize``: in-place mutations of lists are converted and checked like
assignments; and which reads make a document *watched* by a session."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import esmapper as em
from esmapper.model.state import state_of

from .models import Address, Color, Everything, Review


class Spot(em.InnerDoc):
    name: str = ""
    tags: list[str] = em.field(factory=list)
    reviews: list[Review] = em.field(factory=list)


class Trip(em.Document):
    class Index:
        name = "trips"

    title: str = ""
    stops: list[Spot] = em.field(factory=list)
    home: Spot | None = None
    meta: dict[str, Any] = em.field(factory=dict)
    anything: list[Any] = em.field(factory=list)


class Flat(em.Document):
    class Index:
        name = "flats"

    name: str = ""
    age: int = 0
    meta: dict[str, Any] = em.field(factory=dict)


def test_models_without_lists_or_inner_docs_have_no_normalizer() -> None:
    assert Flat.__esmapper__.normalizer is None
    assert Address.__esmapper__.normalizer is None
    Flat.__esmapper__.normalize(Flat(name="x"))  # a no-op
    assert Spot.__esmapper__.normalizer is not None
    assert Trip.__esmapper__.normalizer is not None


def test_dict_items_become_inner_docs_in_the_same_list() -> None:
    doc = Everything(addresses=[Address(city="a")])
    addresses = doc.addresses
    addresses.append({"city": "b", "zip_code": 5})  # type: ignore[arg-type]
    Everything.__esmapper__.normalize(doc)
    assert doc.addresses is addresses
    assert addresses == [Address(city="a"), Address(city="b", zip_code=5)]
    assert doc.to_source()["addresses"][1] == {"street": "", "city": "b", "zip_code": 5}


def test_items_are_converted_like_assignments() -> None:
    doc = Everything()
    doc.scores.append(3.0)  # type: ignore[arg-type]  # an integral float is an int
    doc.tags.append("ok")
    info = Everything.__esmapper__
    info.normalize(doc)
    assert doc.scores == [3] and type(doc.scores[0]) is int
    trip = Trip()
    trip.stops.append(
        {"name": "x", "reviews": [{"author": "me", "posted": "2026-01-02T03:04:05Z"}]}  # type: ignore[arg-type]
    )
    Trip.__esmapper__.normalize(trip)
    review = trip.stops[0].reviews[0]
    assert review.posted == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def test_unchanged_lists_are_left_alone() -> None:
    doc = Everything(tags=["a", "b"], scores=[1, 2], addresses=[Address()])
    tags, first = doc.tags, doc.addresses[0]
    Everything.__esmapper__.normalize(doc)
    assert doc.tags is tags and doc.addresses[0] is first


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d.tags.append(5), "tags[0]"),
        (lambda d: d.scores.extend([1, True]), "scores[1]"),
        (lambda d: d.addresses.append("Oslo"), "addresses[0]"),
        (lambda d: d.addresses.append({"zip_code": "x"}), "addresses[0].zip_code"),
        (lambda d: d.reviews.append({"rating": 1, "unknown": 2}), "reviews[0]"),
    ],
)
def test_wrong_items_raise_naming_the_field(mutate: Any, path: str) -> None:
    doc = Everything(id="d1")
    mutate(doc)
    with pytest.raises(em.DocumentValidationError) as raised:
        Everything.__esmapper__.normalize(doc)
    assert raised.value.field == path
    assert str(raised.value).startswith(f"Everything.{path}: ")
    assert raised.value.ids == ("d1",)


def test_lists_inside_inner_docs_are_checked_with_their_path() -> None:
    trip = Trip(home=Spot(), stops=[Spot(), Spot()])
    assert trip.home is not None
    trip.home.tags.append(1)  # type: ignore[arg-type]
    with pytest.raises(em.DocumentValidationError) as raised:
        Trip.__esmapper__.normalize(trip)
    assert raised.value.field == "home.tags[0]"
    trip.home.tags[0] = "one"
    trip.stops[1].reviews.append({"rating": "bad"})  # type: ignore[arg-type]
    with pytest.raises(
        em.DocumentValidationError, match=r"^Trip\.stops\[1\]\.reviews\[0\]\.rating"
    ):
        Trip.__esmapper__.normalize(trip)
    trip.stops[1].reviews[0] = {"rating": 4}  # type: ignore[call-overload]
    Trip.__esmapper__.normalize(trip)
    assert trip.stops[1].reviews == [Review(rating=4)]


def test_any_fields_are_not_checked() -> None:
    trip = Trip()
    trip.anything.append(object())
    trip.meta["x"] = {1, 2}
    Trip.__esmapper__.normalize(trip)


def test_enum_items() -> None:
    class Palette(em.Document):
        class Index:
            name = "palettes"

        colors: list[Color] = em.field(factory=list)

    doc = Palette()
    doc.colors.extend([Color.RED, "green"])  # type: ignore[list-item]
    Palette.__esmapper__.normalize(doc)
    assert doc.colors == [Color.RED, Color.GREEN]
    doc.colors.append("blue")  # type: ignore[arg-type]
    with pytest.raises(em.DocumentValidationError, match=r"Palette\.colors\[2\]"):
        Palette.__esmapper__.normalize(doc)


# -- watching --------------------------------------------------------------------------------


def test_hydration_and_scalar_reads_do_not_watch() -> None:
    doc = Everything.from_hit({"_id": "1", "_source": {"tags": ["a"]}})
    state = state_of(doc)
    assert state is not None and not state.watched
    assert doc.name == "" and doc.age == 0
    assert not state.watched
    assert doc.to_source()["tags"] == ["a"]  # serializing reads the raw slots
    assert not state.watched
    assert state_of(Everything.from_source({"tags": ["a"]})) is None


@pytest.mark.parametrize("name", ["tags", "address", "addresses", "meta"])
def test_reading_a_mutable_value_watches_the_document(name: str) -> None:
    doc = Everything.from_hit(
        {"_id": "1", "_source": {"tags": ["a"], "address": {"city": "x"}, "meta": {}}}
    )
    getattr(doc, name)
    state = state_of(doc)
    assert state is not None and state.watched


def test_new_document_read_before_any_session_is_marked() -> None:
    doc = Everything(tags=["a"])
    assert state_of(doc) is None
    doc.tags.append("b")
    state = state_of(doc)
    assert state is not None and state.watched and state.original is None


def test_assigning_an_inner_doc_watches_but_assigning_a_scalar_does_not() -> None:
    doc = Everything.from_hit({"_id": "1", "_source": {}})
    state = state_of(doc)
    assert state is not None
    doc.name = "x"
    doc.tags = ["copied"]  # the converter copies the list: nothing handed out
    assert not state.watched
    doc.address = Address(city="kept")
    assert state.watched


def test_inner_docs_get_no_state() -> None:
    address = Address(city="x")
    spot = Spot(tags=["a"])
    spot.tags.append("b")
    address.city = "y"
    assert state_of(spot) is None and state_of(address) is None
