"""The compiled ``_source`` encoder (``esmapper.model._wire_encode``): its bytes are exactly
``_json.dumps(to_source(doc))``'s, values msgspec would write otherwise go through orjson,
and a document it cannot express is left to the dict path (``None``)."""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import pytest

import esmapper as em
from esmapper import _json
from esmapper.model._wire_encode import encode_many, source_encoder, undeclared_keys
from esmapper.model.dates import UTC
from esmapper.model.state import DocState, state_of
from tests.unit.model.models import Address, Color, Employee, Everything, Note, Priority, Review

NAIVE = dt.datetime(2026, 5, 6, 7, 8, 9, 123456)
OFFSET = dt.datetime(2026, 5, 6, 9, 8, 9, tzinfo=dt.timezone(dt.timedelta(hours=2)))


class Part(em.InnerDoc):
    label: str = ""


class BigPart(Part):
    size: int = 0


class Crate(em.Document, em.HasDates):
    class Index:
        name = "wire_crates"

    name: str = em.field(em.Keyword(), default="")
    tags: list[str] = em.field(factory=list)
    part: Part | None = None
    parts: list[Part] = em.field(factory=list)
    seen: dt.datetime | None = None
    seens: list[dt.datetime] = em.field(factory=list)


def slow(doc: Any) -> bytes:
    return _json.dumps(type(doc).__esmapper__.to_source(doc))


def fast(doc: Any) -> bytes | None:
    encode = source_encoder(type(doc).__esmapper__)
    assert encode is not None
    return encode(doc)


FLOATS = [1e300, -1.5e16, 0.0, -0.0, 1.5, 1e16, 1e-7, 123456789.125, 5e-324]
FLOATS += [1.7976931348623157e308, 0.1, 1 / 3, 2.0**53, 1e22, 1e21, 123e-20, -9.999e15]


def everything(i: int, rating: float) -> Everything:
    return Everything(
        id=f"e{i}",
        name='Zoë ✓ "q" \\ \u2028 \x00\x1f\x7f',
        age=-(2**63) if i % 2 else 2**64 - 1,
        rating=rating,
        active=bool(i % 2),
        born=dt.datetime(2026, 3, 4, 12, 0, 0, i * 7919, tzinfo=UTC),
        birthday=dt.date(2000, 1, 2),
        tags=["a", "ü", "\ud7ff"],
        scores=[1, -(2**63), 2**64 - 1],
        address=Address(street="s", city="c", zip_code=150),
        addresses=[Address(city="a"), Address(city="b", zip_code=None)],
        reviews=[Review(author="r", rating=5, posted=NAIVE), Review(posted=OFFSET)],
        meta={"k": [1, {"x": None}], "when": dt.datetime(2026, 1, 2, tzinfo=UTC), "t": (1, 2e20)},
        color=Color.GREEN if i % 2 else Color.RED,
        priority=Priority.HIGH,
        nickname=None if i % 3 else "nick",
    )


@pytest.mark.parametrize(("i", "rating"), list(enumerate(FLOATS)))
def test_every_kind_and_edge_value_encodes_to_the_dict_paths_bytes(i: int, rating: float) -> None:
    doc = everything(i, rating)
    got = fast(doc)
    assert got is not None and got == slow(doc)


def test_dates_of_every_form_and_embedded_subclasses_encode_as_the_dict_path_does() -> None:
    crates = [
        Crate(name="a", part=BigPart(label="big", size=3), parts=[Part(), BigPart(size=4)]),
        Crate(name="b", seen=NAIVE, seens=[NAIVE, OFFSET]),
        Crate(name="c", seen=OFFSET, created_utc=dt.datetime(1, 1, 1, tzinfo=UTC)),
        Crate(name="d", seen=dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        Crate(name="e", seen=dt.datetime(2026, 1, 1, 0, 0, 0, 120000, tzinfo=UTC)),
        Crate(name="f", part=None, tags=[]),
        Crate(),
    ]
    object.__setattr__(crates[2], "seen", OFFSET)  # set around the converter: not UTC
    for crate in crates:
        got = fast(crate)
        assert got is not None and got == slow(crate)


def test_models_of_the_byte_for_byte_tests_encode_identically() -> None:
    for doc in (Employee(id="e", name="n", email="x@y", age=3, company_id="c"), Note(title="t")):
        assert fast(doc) == slow(doc)


def test_values_kept_as_stored_in_another_type_are_written_as_orjson_writes_them() -> None:
    # a stored value the lenient hydration kept where another kind was declared
    source = {"name": 1e20, "email": 2**70 // 2**10, "age": "x", "rating": 12, "active": 3.5}
    doc = Everything.__esmapper__.from_source(source, "s1", None)
    got = fast(doc)
    assert got is not None and got == slow(doc)
    assert b'"name":1e+20' in got


def test_an_int_beyond_64_bits_is_left_to_the_dict_path_which_refuses_it() -> None:
    doc = Everything(id="big", age=2**70)
    assert fast(doc) is None
    with pytest.raises(TypeError):
        slow(doc)


def test_an_unknown_stored_enum_value_is_left_to_the_lenient_dict_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        doc = Everything.__esmapper__.from_source({"color": "purple"}, "p1", None)
    assert doc.color == "purple"
    assert fast(doc) is None
    assert Everything.__esmapper__.to_source(doc)["color"] == "purple"


def test_an_embedded_object_that_is_not_a_model_is_left_to_the_dict_path() -> None:
    crate = Crate(name="x")
    object.__setattr__(crate, "part", {"label": "a dict, set around the converter"})
    assert fast(crate) is None


def test_encoding_reads_raw_slots_and_marks_nothing_as_handed_out() -> None:
    state = DocState({"tags": ["a"]})
    doc = Everything.__esmapper__.from_source({"tags": ["a"]}, "t1", None, state)
    fast(doc)
    assert state_of(doc) is state and state.watched is False


def test_a_clean_source_has_no_undeclared_keys_as_dict_or_bytes() -> None:
    info = Everything.__esmapper__
    doc = everything(0, 1.5)
    assert not undeclared_keys(info, info.to_source(doc))
    assert not undeclared_keys(info, slow(doc))
    assert not undeclared_keys(info, None)
    assert not undeclared_keys(info, b'{"name":"only some keys","address":null}')


@pytest.mark.parametrize(
    "source",
    [
        {"name": "x", "added_later": 1},
        {"address": {"city": "c", "floor": 3}},
        {"address": "not an object"},
    ],
)
def test_undeclared_keys_are_found_at_the_top_and_in_embedded_objects(
    source: dict[str, Any],
) -> None:
    info = Everything.__esmapper__
    assert undeclared_keys(info, source)
    assert undeclared_keys(info, _json.dumps(source))


def test_an_unreadable_source_counts_as_holding_undeclared_keys() -> None:
    assert undeclared_keys(Everything.__esmapper__, b"{not json")


def test_a_batch_encodes_as_each_document_alone_also_with_one_left_to_the_dict_path() -> None:
    encode = source_encoder(Crate.__esmapper__)
    assert encode is not None
    crates = [Crate(name=f"c{i}", tags=["a", "b\nc"], part=Part(label="x")) for i in range(3)]
    assert encode_many(encode, crates) == [slow(c) for c in crates]
    odd = Crate(name="odd")
    object.__setattr__(odd, "part", {"label": "not a model"})
    assert encode_many(encode, [*crates, odd]) == [*(slow(c) for c in crates), None]


class Label(str):
    """A str subclass: msgspec refuses it, orjson writes it as a str."""


def test_a_list_of_plain_strings_goes_as_it_is_and_a_str_subclass_to_the_dict_path() -> None:
    crate = Crate(name="s", tags=["a", "b"])
    assert fast(crate) == slow(crate)
    object.__setattr__(crate, "tags", ["a", Label("b")])
    assert fast(crate) is None
    assert slow(crate) == fast(Crate(name="s", tags=["a", "b"]))
    object.__setattr__(crate, "tags", ("a", 3))  # not a list: item by item, as the dict path
    assert fast(crate) == slow(crate)
