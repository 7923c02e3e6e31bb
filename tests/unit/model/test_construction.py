"""Constructing models: keyword-only, defaults, and every value checked and normalized."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import esmapper as em

from .models import Address, Color, Everything, Note, Priority, Review

UTC = dt.timezone.utc


# -- the constructor --------------------------------------------------------------------------


def test_the_constructor_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        Everything("a name")  # type: ignore[arg-type, call-arg]


def test_an_unknown_keyword_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'nmae'"):
        Everything(nmae="typo")  # type: ignore[call-arg]


def test_a_field_without_default_is_required() -> None:
    with pytest.raises(TypeError, match="title"):
        Note()  # type: ignore[call-arg]
    assert Note(title="t").title == "t"


def test_defaults_apply_to_every_field_not_given() -> None:
    doc = Everything()
    assert doc.id is None
    assert doc.created_utc is None
    assert doc.updated_utc is None
    assert doc.is_deleted is False
    assert doc.version is None
    assert doc.custom_fields is None
    assert (doc.name, doc.email, doc.age, doc.rating, doc.active) == ("", "", 0, 0.0, False)
    assert (doc.tags, doc.addresses, doc.reviews, doc.meta) == ([], [], [], {})
    assert doc.color is Color.RED
    assert doc.priority is Priority.LOW
    assert doc.address is None
    assert doc.nickname is None


def test_factories_give_each_instance_its_own_value() -> None:
    first, second = Everything(), Everything()
    first.tags.append("x")
    first.meta["k"] = 1
    assert second.tags == []
    assert second.meta == {}


def test_defaults_are_converted_like_given_values() -> None:
    note = Note(title="t")
    assert note.price == 0.0
    assert type(note.price) is float
    assert note.due == dt.datetime(2030, 1, 1, tzinfo=UTC)


# -- em.field() ---------------------------------------------------------------------------------


@pytest.mark.parametrize("default", [[], {}, set(), ["x"], Address()])
def test_a_mutable_default_passed_to_field_is_refused(default: Any) -> None:
    with pytest.raises(TypeError, match="factory"):
        em.field(default=default)


@pytest.mark.parametrize("default", [[], {}, Address()])
def test_a_mutable_bare_default_is_refused_too(default: Any) -> None:
    with pytest.raises(TypeError, match=r"Shared\.value.*factory"):
        type("Shared", (em.Document,), {"__annotations__": {"value": Any}, "value": default})


def test_field_takes_a_default_or_a_factory_not_both() -> None:
    with pytest.raises(TypeError, match="not both"):
        em.field(default=0, factory=int)


def test_field_takes_an_elasticsearch_dsl_field_as_mapping() -> None:
    with pytest.raises(TypeError, match=r"elasticsearch\.dsl field"):
        em.field({"type": "keyword"})  # type: ignore[arg-type]


# -- values are checked on construction and on assignment -------------------------------------

INVALID = [
    ("age", "abc"),
    ("age", True),  # a bool is not an integer here
    ("age", 1.5),
    ("age", None),  # not Optional
    ("name", 42),
    ("name", None),
    ("rating", "1.5"),
    ("rating", False),
    ("active", 1),
    ("active", "true"),
    ("born", "not a date"),
    ("born", True),
    ("born", 10**20),  # out of range epoch milliseconds
    ("tags", "one"),  # a list is expected
    ("tags", [1]),
    ("tags", None),
    ("scores", ["1"]),
    ("address", Review()),  # the wrong InnerDoc
    ("address", "Main Street"),
    ("address", {"town": "Oslo"}),  # not an Address field
    ("addresses", Address()),  # a list is expected
    ("addresses", [Review()]),
    ("reviews", [{"rating": "five"}]),
    ("color", "blue"),
    ("color", None),
    ("priority", 3),
    ("priority", True),
    ("is_deleted", None),
    ("created_utc", "yesterday"),
    ("id", 42),
]


@pytest.mark.parametrize(("attribute", "value"), INVALID)
def test_an_unmappable_value_is_refused_on_construction(attribute: str, value: Any) -> None:
    with pytest.raises(em.DocumentValidationError) as caught:
        Everything(**{attribute: value})
    error = caught.value
    if attribute == "reviews":  # the nested object names its own field
        assert str(error).startswith("Review.rating:")
    else:
        assert str(error).startswith(f"Everything.{attribute}:")
        assert error.field == attribute
    assert isinstance(error, em.DocumentError)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(("attribute", "value"), INVALID)
def test_an_unmappable_value_is_refused_on_assignment(attribute: str, value: Any) -> None:
    doc = Everything()
    before = getattr(doc, attribute)
    with pytest.raises(em.DocumentValidationError, match=r"^(Everything|Review)\."):
        setattr(doc, attribute, value)
    assert getattr(doc, attribute) == before


def test_the_message_says_what_was_expected_and_what_was_given() -> None:
    with pytest.raises(em.DocumentValidationError) as caught:
        Everything(age="abc")  # type: ignore[arg-type]
    assert str(caught.value) == "Everything.age: expected an integer, got 'abc' (str)"


def test_inner_doc_fields_are_checked_on_assignment() -> None:
    address = Address()
    with pytest.raises(em.DocumentValidationError, match=r"^Address\.zip_code:"):
        address.zip_code = "0150"  # type: ignore[assignment]


def test_optional_fields_accept_none() -> None:
    doc = Everything(born=None, address=None, nickname=None, custom_fields=None)
    assert doc.born is doc.address is doc.nickname is doc.custom_fields is None  # type: ignore[comparison-overlap]
    doc.nickname = "nick"
    doc.nickname = None
    assert doc.nickname is None


# -- coercions ----------------------------------------------------------------------------------


def test_an_int_is_accepted_for_a_float_field_as_a_float() -> None:
    doc = Everything(rating=4)
    assert doc.rating == 4.0
    assert type(doc.rating) is float
    doc.rating = 3
    assert type(doc.rating) is float


def test_an_integral_float_is_accepted_for_an_int_field_as_an_int() -> None:
    doc = Everything(age=30.0)  # type: ignore[arg-type]  # JSON numbers may come back as 30.0
    assert doc.age == 30
    assert type(doc.age) is int


def test_a_str_subclass_is_stored_as_a_plain_str() -> None:
    class Name(str):
        pass

    doc = Everything(email=Name("a@b.c"))
    assert type(doc.email) is str


AWARE_NOON = dt.datetime(2026, 3, 4, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2026, 3, 4, 12, 0),  # naive: taken as UTC
        AWARE_NOON,
        dt.datetime(2026, 3, 4, 14, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "2026-03-04T12:00:00Z",
        "2026-03-04T12:00:00z",
        "2026-03-04T12:00:00.000Z",
        "2026-03-04T12:00:00+00:00",
        "2026-03-04T07:00:00-05:00",
        "2026-03-04T12:00:00",  # naive ISO: UTC
        1772625600000,  # epoch milliseconds
    ],
)
def test_datetimes_become_aware_utc(value: Any) -> None:
    doc = Everything(born=value)
    assert doc.born == AWARE_NOON
    assert doc.born is not None
    assert doc.born.tzinfo is UTC


def test_a_date_becomes_midnight_utc() -> None:
    doc = Everything(born=dt.date(2026, 3, 4), birthday=dt.date(1990, 5, 17))  # type: ignore[arg-type]
    assert doc.born == dt.datetime(2026, 3, 4, tzinfo=UTC)
    assert doc.birthday == dt.datetime(1990, 5, 17, tzinfo=UTC)


def test_datetimes_are_normalized_on_assignment_too() -> None:
    doc = Everything()
    doc.born = "2026-03-04T12:00:00Z"  # type: ignore[assignment]
    assert doc.born == AWARE_NOON
    doc.created_utc = dt.datetime(2026, 3, 4, 12, 0)
    assert doc.created_utc.tzinfo is UTC


def test_a_dict_becomes_the_inner_doc() -> None:
    doc = Everything(address={"city": "Oslo", "zip_code": 150})  # type: ignore[arg-type]
    assert doc.address == Address(city="Oslo", zip_code=150)
    assert isinstance(doc.address, Address)


def test_a_list_of_dicts_becomes_a_list_of_inner_docs() -> None:
    doc = Everything(
        addresses=[{"city": "Oslo"}, Address(city="Bergen")],  # type: ignore[list-item]
        reviews=[{"rating": 5, "posted": "2026-03-04T12:00:00Z"}],  # type: ignore[list-item]
    )
    assert doc.addresses == [Address(city="Oslo"), Address(city="Bergen")]
    assert doc.reviews == [Review(rating=5, posted=AWARE_NOON)]


def test_any_sequence_becomes_a_new_list() -> None:
    given = ["a", "b"]
    doc = Everything(tags=given, scores=(1, 2))  # type: ignore[arg-type]
    assert doc.tags == ["a", "b"]
    assert doc.tags is not given
    assert doc.scores == [1, 2]
    assert Everything(tags={"only"}).tags == ["only"]  # type: ignore[arg-type]


def test_enums_are_accepted_by_value() -> None:
    doc = Everything(color="green", priority=2)  # type: ignore[arg-type]
    assert doc.color is Color.GREEN
    assert doc.priority is Priority.HIGH


def test_a_dict_field_keeps_any_json_value() -> None:
    meta = {"nested": {"list": [1, "two", None]}, "flag": True}
    assert Everything(meta=meta).meta == meta


def test_equal_values_make_equal_documents() -> None:
    assert Everything(age=3, tags=["x"]) == Everything(age=3.0, tags=("x",))  # type: ignore[arg-type]
    assert Everything(age=3) != Everything(age=4)
