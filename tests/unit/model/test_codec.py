"""``Model.from_hit`` / ``doc.to_source()``: the compiled converters and their round trips."""

from __future__ import annotations

import copy
import datetime as dt
import json
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import esmapper as em
from esmapper.model.state import DocState, state_of

from .models import Address, Color, Employee, Everything, Note, Priority, Review

UTC = dt.timezone.utc
NOON = dt.datetime(2026, 3, 4, 12, 0, tzinfo=UTC)

FULL_SOURCE: dict[str, Any] = {
    "id": "doc-1",
    "created_utc": "2026-03-04T12:00:00Z",
    "updated_utc": "2026-03-04T12:00:00.123456Z",
    "is_deleted": True,
    "custom_fields": {"tier": "gold", "limits": [1, 2]},
    "idx": {"tenant": "acme", "keyword-1": "gold"},
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "age": 36,
    "small": 7,
    "rating": 4.5,
    "active": True,
    "born": "1815-12-10T00:00:00Z",
    "birthday": "1815-12-10T00:00:00Z",
    "tags": ["math", "poetry"],
    "scores": [1, 2, 3],
    "address": {"street": "St James's Square", "city": "London", "zip_code": None},
    "addresses": [
        {"street": "a", "city": "London", "zip_code": 1},
        {"street": "b", "city": "Ockham", "zip_code": None},
    ],
    "reviews": [
        {"author": "Babbage", "rating": 5, "comment": "enchantress", "posted": None},
        {"author": "Faraday", "rating": 4, "comment": "", "posted": "2026-03-04T12:00:00Z"},
    ],
    "meta": {"engine": {"analytical": True}},
    "color": "green",
    "priority": 2,
    "nickname": None,
}


def full_hit() -> dict[str, Any]:
    return {
        "_index": "everything-v1",
        "_id": "doc-1",
        "_seq_no": 17,
        "_primary_term": 3,
        "_source": copy.deepcopy(FULL_SOURCE),
    }


# -- from_hit -----------------------------------------------------------------------------------


def test_from_hit_reads_every_field_kind() -> None:
    doc = Everything.from_hit(full_hit())
    assert doc.id == "doc-1"
    assert doc.version == "3:17"
    assert doc.created_utc == NOON
    assert doc.updated_utc == NOON.replace(microsecond=123456)
    assert doc.is_deleted is True
    assert doc.custom_fields == {"tier": "gold", "limits": [1, 2]}
    assert (doc.name, doc.email, doc.age, doc.small) == ("Ada Lovelace", "ada@example.com", 36, 7)
    assert (doc.rating, doc.active) == (4.5, True)
    assert doc.born == dt.datetime(1815, 12, 10, tzinfo=UTC)
    assert doc.born.tzinfo is UTC
    assert doc.tags == ["math", "poetry"]
    assert doc.scores == [1, 2, 3]
    assert doc.address == Address(street="St James's Square", city="London")
    assert doc.addresses == [
        Address(street="a", city="London", zip_code=1),
        Address(street="b", city="Ockham"),
    ]
    assert doc.reviews == [
        Review(author="Babbage", rating=5, comment="enchantress"),
        Review(author="Faraday", rating=4, posted=NOON),
    ]
    assert all(type(r) is Review for r in doc.reviews)
    assert doc.meta == {"engine": {"analytical": True}}
    assert doc.color is Color.GREEN
    assert doc.priority is Priority.HIGH
    assert doc.nickname is None


def test_to_source_writes_what_from_hit_read() -> None:
    assert Everything.from_hit(full_hit()).to_source() == FULL_SOURCE


def test_to_source_writes_json_values() -> None:
    doc = Everything(born=NOON, color=Color.GREEN, priority=Priority.HIGH, address=Address())
    source = doc.to_source()
    assert source["born"] == "2026-03-04T12:00:00Z"
    assert source["created_utc"] is None
    assert source["color"] == "green"
    assert source["priority"] == 2
    assert type(source["priority"]) is int
    assert source["address"] == {"street": "", "city": "", "zip_code": None}
    assert json.loads(json.dumps(source)) == source


class Schedule(em.Document):
    colors: list[Color] = em.field(factory=list)
    levels: list[Priority] = em.field(factory=list)
    slots: list[dt.datetime] = em.field(factory=list)


def test_lists_of_enums_and_dates_round_trip() -> None:
    doc = Schedule(
        colors=["red", Color.GREEN],  # type: ignore[list-item]
        levels=[2],  # type: ignore[list-item]
        slots=["2026-03-04T13:00:00+01:00", dt.date(2026, 3, 5)],  # type: ignore[list-item]
    )
    assert Schedule.__esmapper__.mapping["properties"] == {
        "id": {"type": "keyword"},
        "colors": {"type": "keyword"},
        "levels": {"type": "long"},
        "slots": {"type": "date"},
    }
    source = doc.to_source()
    assert source == {
        "id": None,
        "colors": ["red", "green"],
        "levels": [2],
        "slots": ["2026-03-04T12:00:00Z", "2026-03-05T00:00:00Z"],
    }
    assert Schedule.from_source(source) == doc


def test_documents_pickle_and_copy() -> None:
    doc = Everything.from_hit(full_hit())
    assert pickle.loads(pickle.dumps(doc)) == doc
    duplicate = copy.deepcopy(doc)
    assert duplicate == doc
    duplicate.tags.append("x")
    assert doc.tags == FULL_SOURCE["tags"]


def test_the_id_comes_from_the_hit_not_the_source() -> None:
    hit = full_hit()
    hit["_source"]["id"] = "stale"
    assert Everything.from_hit(hit).id == "doc-1"


def test_without_an_id_in_the_hit_the_source_id_is_used() -> None:
    assert Everything.from_hit({"_source": {"id": "from-source"}}).id == "from-source"
    assert Everything.from_hit({"_source": {}}).id is None


def test_the_version_is_primary_term_colon_seq_no() -> None:
    hit = {"_id": "e1", "_seq_no": 0, "_primary_term": 1, "_source": {}}
    assert Employee.from_hit(hit).version == "1:0"


def test_a_hit_without_seq_no_has_no_version() -> None:
    assert Employee.from_hit({"_id": "e1", "_source": {"name": "x"}}).version is None


def test_a_version_in_the_source_is_ignored() -> None:
    hit = {"_id": "e1", "_seq_no": 4, "_primary_term": 2, "_source": {"version": "9:9"}}
    assert Employee.from_hit(hit).version == "2:4"
    assert Employee.from_source({"version": "9:9"}).version is None


def test_an_unversioned_model_reads_a_versioned_hit() -> None:
    note = Note.from_hit({"_id": "n1", "_seq_no": 4, "_primary_term": 2, "_source": {"title": "t"}})
    assert note == Note(id="n1", title="t")
    assert not hasattr(note, "version")


def test_a_hit_without_source_gives_the_defaults() -> None:
    assert Employee.from_hit({"_id": "e1"}) == Employee(id="e1")


def test_missing_keys_take_the_defaults_and_fresh_factory_values() -> None:
    first = Everything.from_hit({"_id": "a", "_source": {}})
    second = Everything.from_hit({"_id": "b", "_source": {}})
    assert first == Everything(id="a")
    first.tags.append("x")
    first.meta["k"] = 1
    first.reviews.append(Review())
    assert (second.tags, second.meta, second.reviews) == ([], {}, [])
    assert Everything().tags == []


def test_missing_keys_take_the_converted_defaults() -> None:
    note = Note.from_hit({"_id": "n1", "_source": {"title": "t"}})
    assert type(note.price) is float
    assert note.due == dt.datetime(2030, 1, 1, tzinfo=UTC)
    assert note == Note(id="n1", title="t")


def test_a_missing_required_key_reads_as_none() -> None:
    assert Note.from_hit({"_id": "n1", "_source": {}}).title is None


def test_none_values_stay_none() -> None:
    source = {"born": None, "address": None, "nickname": None, "custom_fields": None}
    doc = Everything.from_hit({"_id": "a", "_source": source})
    assert doc.born is doc.address is doc.nickname is doc.custom_fields is None  # type: ignore[comparison-overlap]
    assert {k: doc.to_source()[k] for k in source} == source


def test_a_scalar_where_a_list_is_expected_becomes_a_list() -> None:
    source = {
        "tags": "solo",
        "scores": 3,
        "addresses": {"city": "Oslo"},
        "reviews": {"rating": 5},
    }
    doc = Everything.from_hit({"_id": "a", "_source": source})
    assert doc.tags == ["solo"]
    assert doc.scores == [3]
    assert doc.addresses == [Address(city="Oslo")]
    assert doc.reviews == [Review(rating=5)]


def test_dates_in_the_source_may_be_offsets_or_epoch_milliseconds() -> None:
    source = {"born": "2026-03-04T13:00:00+01:00", "created_utc": 1772625600000}
    doc = Everything.from_hit({"_id": "a", "_source": source})
    assert doc.born == doc.created_utc == NOON
    assert doc.born is not None and doc.born.tzinfo is UTC
    assert doc.to_source()["created_utc"] == "2026-03-04T12:00:00Z"


def test_stored_utc_dates_and_other_forms_read_the_same() -> None:
    # "...Z" takes the one-call path, an offset, a naive text and a "z" the general one
    for text in ("2026-03-04T12:00:00Z", "2026-03-04T13:00:00+01:00", "2026-03-04T12:00:00"):
        doc = Everything.from_hit({"_id": "a", "_source": {"born": text}})
        assert doc.born == NOON and doc.born is not None and doc.born.tzinfo is UTC
    bad = Everything.from_hit({"_id": "a", "_source": {"born": "2026-13-04T12:00:00Z"}})
    assert bad.to_source()["born"] == "2026-13-04T12:00:00Z"  # kept as stored (lenient)


def test_a_date_set_around_the_converter_is_still_written_in_utc() -> None:
    doc = Everything(born=NOON)
    object.__setattr__(doc, "born", NOON.astimezone(dt.timezone(dt.timedelta(hours=2))))
    assert doc.to_source()["born"] == "2026-03-04T12:00:00Z"
    object.__setattr__(doc, "born", NOON.replace(tzinfo=None))  # naive: read as UTC
    assert doc.to_source()["born"] == "2026-03-04T12:00:00Z"


def test_an_embedded_subclass_is_written_with_its_own_fields() -> None:
    class Site(Address):
        floor: int = em.field(em.Integer(), default=0)

    doc = Everything(address=Site(city="Oslo", floor=3))
    assert doc.to_source()["address"] == {
        "street": "",
        "city": "Oslo",
        "zip_code": None,
        "floor": 3,
    }


def test_hydrated_mutable_fields_are_still_watched() -> None:
    doc = Employee.from_hit(
        {"_id": "a", "_source": {"name": "x"}, "_seq_no": 1, "_primary_term": 1}
    )
    state = state_of(doc)
    assert state is not None and not state.watched
    assert doc.name == "x" and not state.watched  # a scalar read hands nothing out
    doc2 = Everything.from_hit({"_id": "b", "_source": {"tags": ["a"]}})
    state2 = state_of(doc2)
    assert state2 is not None and not state2.watched
    doc2.tags.append("b")  # reading the list hands it out
    assert state2.watched


def test_from_source_builds_embedded_objects_too() -> None:
    assert Address.from_source({"city": "Oslo"}) == Address(city="Oslo")
    assert Address(city="Oslo", zip_code=150).to_source() == {
        "street": "",
        "city": "Oslo",
        "zip_code": 150,
    }


def test_a_hit_remembers_what_the_store_returned_and_a_bare_source_does_not() -> None:
    hit = full_hit()
    state = state_of(Everything.from_hit(hit))
    assert state is not None
    assert state.original == FULL_SOURCE
    assert state.index == "everything-v1"
    assert state_of(Everything.from_source(FULL_SOURCE)) is None
    assert state_of(Everything()) is None


# -- mutation isolation ---------------------------------------------------------------------------


def test_mutating_a_hydrated_document_leaves_the_hit_unchanged() -> None:
    hit = full_hit()
    doc = Everything.from_hit(hit)
    doc.tags.append("new")
    doc.scores.clear()
    doc.meta["engine"]["analytical"] = False
    doc.custom_fields["limits"].append(3)  # type: ignore[index]
    doc.addresses[0].city = "Paris"
    doc.addresses.append(Address())
    doc.reviews[0].rating = 1
    assert doc.address is not None
    doc.address.street = "elsewhere"
    assert hit["_source"] == FULL_SOURCE


def test_to_source_shares_no_list_or_dict_with_the_document() -> None:
    doc = Everything.from_hit(full_hit())
    source = doc.to_source()
    source["tags"].append("leak")
    source["scores"].append(99)
    source["meta"]["engine"]["leak"] = True
    source["custom_fields"]["limits"].append(99)
    source["addresses"][0]["city"] = "leak"
    source["addresses"].append({})
    source["reviews"][1]["author"] = "leak"
    source["address"]["city"] = "leak"
    assert doc.to_source() == FULL_SOURCE


def test_two_hydrations_of_one_source_are_independent() -> None:
    source = copy.deepcopy(FULL_SOURCE)
    first, second = Everything.from_source(source), Everything.from_source(source)
    first.tags.append("x")
    first.meta["engine"]["x"] = 1
    assert second.tags == FULL_SOURCE["tags"]
    assert second.meta == FULL_SOURCE["meta"]


# -- the round-trip property ----------------------------------------------------------------------

texts = st.text(max_size=12)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | texts
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
datetimes = st.datetimes(
    min_value=dt.datetime(1900, 1, 1),
    max_value=dt.datetime(2200, 1, 1),
    timezones=st.none()
    | st.just(UTC)
    | st.builds(dt.timezone, st.timedeltas(dt.timedelta(hours=-12), dt.timedelta(hours=14))),
)
floats = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53), 2**53)
longs = st.integers(-(2**63), 2**63 - 1)

addresses = st.builds(Address, street=texts, city=texts, zip_code=st.none() | st.integers(0, 99999))
reviews = st.builds(
    Review, author=texts, rating=st.integers(0, 5), comment=texts, posted=st.none() | datetimes
)
documents = st.builds(
    Everything,
    id=st.none() | texts,
    created_utc=st.none() | datetimes,
    updated_utc=st.none() | datetimes,
    is_deleted=st.booleans(),
    custom_fields=st.none() | st.dictionaries(texts, json_values, max_size=3),
    name=texts,
    email=texts,
    age=longs,
    small=st.integers(-(2**31), 2**31 - 1),
    rating=floats,
    active=st.booleans(),
    born=st.none() | datetimes,
    birthday=st.none() | st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1)),
    tags=st.lists(texts, max_size=3),
    scores=st.lists(longs, max_size=3),
    address=st.none() | addresses,
    addresses=st.lists(addresses, max_size=2),
    reviews=st.lists(reviews, max_size=2),
    meta=st.dictionaries(texts, json_values, max_size=3),
    color=st.sampled_from(Color),
    priority=st.sampled_from(Priority),
    nickname=st.none() | texts,
)


@settings(max_examples=150, deadline=None)
@given(documents)
def test_a_document_survives_the_trip_through_json(doc: Everything) -> None:
    wire = json.dumps(doc.to_source())
    hit = {"_id": doc.id, "_seq_no": 1, "_primary_term": 1, "_source": json.loads(wire)}
    back = Everything.from_hit(hit)
    assert back.version == "1:1"
    back.version = None
    assert back == doc
    assert back.to_source() == doc.to_source()


@settings(max_examples=50, deadline=None)
@given(documents)
def test_hydration_copies_the_source(doc: Everything) -> None:
    source = doc.to_source()
    snapshot = copy.deepcopy(source)
    back = Everything.from_source(source)
    back.tags.append("x")
    back.meta["added"] = 1
    for address in back.addresses:
        address.city = "changed"
    if back.custom_fields is not None:
        back.custom_fields.clear()
    assert source == snapshot


def test_the_batch_dates_reuse_the_text_of_the_same_value_only() -> None:
    # the write pipeline gives every document of a batch one ``now`` object
    paris = dt.timezone(dt.timedelta(hours=1))
    first = Employee(id="a", created_utc=NOON, updated_utc=NOON)
    second = Employee(id="b", created_utc=NOON, updated_utc=NOON)
    assert first.to_source()["updated_utc"] == "2026-03-04T12:00:00Z"
    assert second.to_source()["created_utc"] == "2026-03-04T12:00:00Z"
    later = NOON + dt.timedelta(microseconds=5)
    other = Employee(id="c", created_utc=later, updated_utc=None)
    source = other.to_source()
    assert source["created_utc"] == "2026-03-04T12:00:00.000005Z"
    assert source["updated_utc"] is None
    # an equal value that is another object, in another zone, is formatted on its own
    local = Employee(id="d", created_utc=NOON, updated_utc=NOON)
    object.__setattr__(local, "updated_utc", NOON.astimezone(paris))
    assert local.to_source()["updated_utc"] == "2026-03-04T12:00:00Z"
    assert first.to_source()["updated_utc"] == "2026-03-04T12:00:00Z"
    bare = Employee(id="e").to_source()
    assert bare["created_utc"] is None and bare["updated_utc"] is None


def _load(model: Any, source: Any, id: str | None, version: str | None) -> Any:
    return model.__esmapper__.from_source(source, id, version)


def _every_key(doc: Any) -> dict[str, Any]:
    """``doc``'s source with every stored key (what a write stores)."""
    return doc.to_source()  # type: ignore[no-any-return]


def test_a_source_with_every_key_and_one_missing_a_key_read_the_same() -> None:
    # a source as a write stores it takes subscripts; one as long but missing a declared
    # key (an undeclared key in its place) takes the lookups with defaults
    stored = Employee(id="e1", name="Ann", email="a@x", age=41, company_id="c1")
    full = _every_key(stored)
    assert _load(Employee, full, "e1", None) == stored
    swapped = {k: v for k, v in full.items() if k != "age"} | {"unknown": 1}
    assert len(swapped) == len(full)
    doc = _load(Employee, swapped, "e1", None)
    assert doc.age == 0
    assert (doc.name, doc.email) == ("Ann", "a@x")
    assert _load(Employee, {**full, "extra": [1]}, "e1", None) == stored


def test_a_full_source_without_an_id_argument_takes_the_source_id() -> None:
    full = _every_key(Employee(id="from-source", name="Ann"))
    assert _load(Employee, full, None, None).id == "from-source"
    assert _load(Employee, full, "given", None).id == "given"


def test_a_bad_value_in_a_full_source_takes_the_lenient_path() -> None:
    full = _every_key(Employee(id="e1", name="Ann"))
    full["created_utc"] = "not a date"
    doc = _load(Employee, full, "e1", None)
    assert doc.created_utc == "not a date"  # kept as stored, reported by the lenient path
    assert doc.name == "Ann"
    with pytest.raises(TypeError, match="must be an object"):
        _load(Employee, ["not", "a", "mapping", "at", "all", "x", "y", "z", "w"], "e1", None)


def test_an_embedded_object_missing_a_key_takes_its_default() -> None:
    source = _every_key(Everything(id="a", address=Address(street="Main", city="Oslo")))
    del source["address"]["zip_code"]
    source["address"]["other"] = "kept out"
    doc = _load(Everything, source, "a", None)
    assert doc.address == Address(street="Main", city="Oslo", zip_code=None)


class Geo(em.InnerDoc):
    lat: float = 0.0
    seen: dt.datetime | None = None


class Place(em.InnerDoc):
    name: str = ""
    kind: Color = Color.RED
    labels: list[str] = em.field(factory=list)
    geo: Geo | None = None


class Visit(em.Document):
    class Index:
        name = "codec_visits"

    place: Place | None = None
    places: list[Place] = em.field(factory=list)


def _visit_source() -> dict[str, Any]:
    return {
        "id": "v1",
        "place": {
            "name": "Oslo",
            "kind": "green",
            "labels": ["a"],
            "geo": {"lat": 59.9, "seen": "2026-03-04T12:00:00Z"},
        },
        "places": [{"name": "Bergen", "kind": "red", "labels": [], "geo": None}],
    }


def test_an_embedded_object_in_a_full_source_is_built_whole_with_its_own_kinds() -> None:
    source = _visit_source()
    doc = _load(Visit, source, "v1", None)
    assert doc.place == Place(
        name="Oslo", kind=Color.GREEN, labels=["a"], geo=Geo(lat=59.9, seen=NOON)
    )
    assert doc.places == [Place(name="Bergen")]
    assert doc.place is not None and doc.place.labels is not source["place"]["labels"]
    assert doc.to_source() == source  # round trip, embedded in embedded included


def test_an_embedded_object_short_of_keys_missing_one_or_null_reads_like_alone() -> None:
    source = _visit_source()
    del source["place"]["labels"]  # shorter: the embedded model's own lookups
    assert _load(Visit, source, "v1", None).place.labels == []
    source = _visit_source()
    source["place"] = {"name": "Oslo", "kind": "green", "label": [], "geo": None}  # swapped key
    doc = _load(Visit, source, "v1", None)
    assert doc.place == Place(name="Oslo", kind=Color.GREEN)
    assert doc.places == [Place(name="Bergen")]
    source["place"] = None
    assert _load(Visit, source, "v1", None).place is None


def test_a_value_an_embedded_object_does_not_know_is_kept_and_reported_with_its_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    source = _visit_source()
    source["place"]["kind"] = "purple"  # an enum value of a newer deploy
    doc = _load(Visit, source, "v1", None)
    assert doc.place is not None and doc.place.kind == "purple" and doc.place.name == "Oslo"
    assert any("place.kind" in r.getMessage() and "'v1'" in r.getMessage() for r in caplog.records)
    assert doc.to_source()["place"]["kind"] == "purple"
    source = _visit_source()
    source["place"] = "not an object at all"  # as long as the embedded model's fields
    assert _load(Visit, source, "v1", None).to_source()["place"] == "not an object at all"


def test_hydration_starts_a_document_with_the_state_it_is_given() -> None:
    state = DocState({"name": "x"}, "idx-v1", None, False, "1:2", ("1:2", 2, 1))
    doc = Employee.__esmapper__.from_source(_every_key(Employee(name="x")), "e1", "1:2", state)
    assert state_of(doc) is state and doc.version == "1:2"
    short = Employee.__esmapper__.from_source({"name": "y"}, "e2", None, state)  # lookups
    assert state_of(short) is state and short.name == "y"
    # a source the model cannot read takes the lenient path, which keeps the state too
    bad = {**_every_key(Employee(name="x")), "created_utc": "not a date"}
    assert state_of(Employee.__esmapper__.from_source(bad, "e3", None, state)) is state
    assert state_of(Employee.__esmapper__.from_source({"name": "z"}, None, None)) is None


def test_from_hit_keeps_the_numbers_of_its_version_for_a_conditional_save() -> None:
    doc = Employee.from_hit(
        {"_id": "a", "_source": {"name": "x"}, "_seq_no": 7, "_primary_term": 3}
    )
    state = state_of(doc)
    assert state is not None and doc.version == "3:7"
    assert state.condition == ("3:7", 7, 3) and state.condition[0] is doc.version


class Renamed(em.Document):
    class Index:
        name = "renamed-dates"
        dates = ("created", "modified")

    name: str = ""
    created: dt.datetime | None = None
    modified: dt.datetime | None = None
    #: named like the usual dates but not the dates the writes set: formatted each time
    created_utc: dt.datetime | None = None
    updated_utc: dt.datetime | None = None


class UpdatedOnly(em.Document):
    class Index:
        name = "updated-only"
        dates = (None, "touched")

    touched: dt.datetime | None = None


def test_renamed_dates_reuse_the_batch_text_as_the_usual_names_do() -> None:
    # Index.dates names the dates the write sets to one ``now``: the same rule applies
    first = Renamed(id="a", created=NOON, modified=NOON, created_utc=NOON, updated_utc=NOON)
    second = Renamed(id="b", created=NOON, modified=NOON, created_utc=NOON, updated_utc=NOON)
    a, b = first.to_source(), second.to_source()
    assert a["modified"] == "2026-03-04T12:00:00Z" and a == {**b, "id": "a"}
    assert a["modified"] is b["modified"] and a["created"] is a["modified"]
    assert a["updated_utc"] == a["created_utc"] == "2026-03-04T12:00:00Z"
    assert a["updated_utc"] is not a["modified"]  # not a date the writes set
    one, two = UpdatedOnly(id="a", touched=NOON), UpdatedOnly(id="b", touched=NOON)
    assert one.to_source()["touched"] is two.to_source()["touched"]
    later = NOON + dt.timedelta(microseconds=5)
    assert UpdatedOnly(id="c", touched=later).to_source()["touched"] == (
        "2026-03-04T12:00:00.000005Z"
    )
    assert UpdatedOnly(id="d").to_source()["touched"] is None
