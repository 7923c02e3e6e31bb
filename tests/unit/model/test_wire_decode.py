"""Documents hydrated from a hit's ``_source`` bytes (``esmapper.model._wire_decode``) are
the documents the current path builds from the parsed ``_source``: the same values and
types, the same ``DocState``; the mirror is taken where it reads a source exactly, the
current path for the hits it cannot."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec
import orjson
import pytest

import esmapper as em
from esmapper._raw_answers import Hit, decode_docs, decode_search
from esmapper.model import _wire_decode
from esmapper.model._wire_encode import undeclared_keys
from esmapper.model.state import DocState, declared_only, state_of, version_of
from tests.unit.model.models import Address, Color, Employee, Everything, Note, Priority, Review


class Profile(em.Document, em.HasDates, em.Versioned):
    """Every kind the mirror types: scalars, dates, enums, lists, embedded objects."""

    name: str = ""
    age: int = 0
    rating: float = 0.0
    active: bool = False
    born: dt.datetime | None = None
    tags: list[str] = em.field(factory=list)
    scores: list[int] = em.field(factory=list)
    address: Address | None = None
    reviews: list[Review] = em.field(em.Nested(), factory=list)
    color: Color = Color.RED
    priority: Priority = Priority.LOW
    nickname: str | None = None


def _profile(i: int) -> dict[str, Any]:
    return Profile(
        id=f"p{i}",
        name=f"Profile {i}",
        age=30 + i,
        rating=1.5 * i,
        active=bool(i % 2),
        born=dt.datetime(1990, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone.utc),
        tags=["a", f"t{i}"],
        scores=[1, i],
        address=Address(street="Main", city="Town", zip_code=1000 + i),
        reviews=[
            Review(
                author="ann",
                rating=4,
                comment="ok",
                posted=dt.datetime(2020, 5, 6, tzinfo=dt.timezone.utc),
            )
        ],
        color=Color.GREEN,
        priority=Priority.HIGH,
    ).to_source()


def _answer(sources: list[dict[str, Any] | None], *, raw: bytes | None = None) -> bytes:
    hits = []
    for i, source in enumerate(sources):
        hit: dict[str, Any] = {
            "_index": "idx-v1",
            "_id": f"p{i}",
            "_seq_no": 7 + i,
            "_primary_term": 2,
        }
        if source is not None:
            hit["_source"] = source
        hits.append(hit)
    body = msgspec.json.encode(
        {"took": 1, "hits": {"total": {"value": len(hits), "relation": "eq"}, "hits": hits}}
    )
    return body if raw is None else body.replace(b'"__RAW__"', raw)


def _current(info: Any, body: bytes, partial: bool = False) -> list[Any]:
    """What ``_search_answers.results`` builds from the parsed answer (the current path)."""
    documents = []
    for raw in orjson.loads(body)["hits"]["hits"]:
        version, condition = version_of(raw.get("_seq_no"), raw.get("_primary_term"))
        source = raw.get("_source")
        if source is None:
            documents.append(info.from_source({}, raw["_id"], version))
            continue
        state = DocState(source, raw.get("_index"), None, partial, version, condition)
        documents.append(info.from_source(source, raw["_id"], version, state))
    return documents


def _fast(info: Any, body: bytes, partial: bool = False) -> list[Any]:
    response = decode_search(body)
    assert response is not None
    return _wire_decode.hydrate(info, response["hits"]["hits"], partial)


def _norm(value: Any) -> Any:
    if hasattr(value, "__esmapper__"):
        return (type(value).__name__, _fields(value))
    if isinstance(value, list):
        return ("list", [_norm(x) for x in value])
    if isinstance(value, dt.datetime):
        return ("datetime", value.isoformat(), value.tzinfo is dt.timezone.utc)
    return (type(value).__name__, repr(value))


def _fields(doc: Any) -> list[tuple[str, Any]]:
    return [(f.name, _norm(getattr(doc, f.name))) for f in type(doc).__esmapper__.fields]


def _state(doc: Any) -> Any:
    state = state_of(doc)
    if state is None:
        return None
    return (
        state.original,
        state.index,
        state.partial,
        state.version,
        state.condition,
        state.session,
    )


def _took_mirror(doc: Any) -> bool:
    """Whether ``doc`` came through the mirror (its original still the hit's bytes)."""
    state = state_of(doc)
    return state is not None and isinstance(state.original_or_bytes, bytes)


def _same(info: Any, body: bytes, partial: bool = False) -> tuple[list[Any], list[bool]]:
    """The fast path's documents, checked equal to the current path's, and which of them
    came through the mirror."""
    want, got = _current(info, body, partial), _fast(info, body, partial)
    mirrored = [_took_mirror(d) for d in got]
    assert [_fields(d) for d in got] == [_fields(d) for d in want]
    assert [_state(d) for d in got] == [_state(d) for d in want]
    return got, mirrored


def test_every_kind_is_read_through_the_mirror_as_the_current_path_reads_it() -> None:
    info = Profile.__esmapper__
    assert _wire_decode.has_mirror(info)
    docs, mirrored = _same(info, _answer([_profile(i) for i in range(5)]))
    assert all(mirrored)
    assert docs[3].address.zip_code == 1003 and docs[3].reviews[0].posted.year == 2020
    assert state_of(docs[0]).original == _profile(0)  # decoded when first read


def test_the_documents_and_embedded_objects_are_instances_of_the_models_themselves() -> None:
    # filled through a raw subclass, then given the model's class: nothing of it shows
    doc = _fast(Profile.__esmapper__, _answer([_profile(1)]))[0]
    assert type(doc) is Profile and type(doc.address) is Address
    assert type(doc.reviews[0]) is Review
    assert doc == _current(Profile.__esmapper__, _answer([_profile(1)]))[0]
    assert state_of(doc.address) is None  # an embedded object has no DocState
    with pytest.raises(em.DocumentValidationError):  # assignments take the model's rules
        doc.age = "not a number"  # type: ignore[assignment]


def test_a_document_the_mirror_reads_is_a_tracked_document() -> None:
    doc = _fast(Profile.__esmapper__, _answer([_profile(1)]))[0]
    doc.tags.append("new")  # a copy of its own, not the original's
    assert state_of(doc).original["tags"] == ["a", "t1"]
    doc.name = "renamed"
    assert doc.name == "renamed" and doc.version == "2:7"


@pytest.mark.parametrize(
    ("change", "mirror"),
    [
        (lambda s: s.update(undeclared={"kept": [1, 2.5]}), True),  # kept in the original
        (lambda s: s.update(hidden=18446744073709551616), True),  # orjson: a float, both ways
        (lambda s: s.update(born="2026-05-06T09:08:09.5+02:00"), True),
        (lambda s: s.update(born="2026-05-06T07:08:09"), True),
        (lambda s: s.update(born=1767225600123), True),
        (lambda s: s.update(address=None, born=None, nickname=None), True),
        (lambda s: s.update(tags="single", scores=3), True),  # a scalar for a list
        (lambda s: s.update(rating=2), True),  # an integer in a float field stays one
        (lambda s: s.pop("age"), False),  # a key missing
        (lambda s: s["address"].pop("city"), False),  # in an embedded object too
        (lambda s: s.update(age="thirty"), False),  # a lenient value
        (lambda s: s.update(age=2**70), False),  # orjson reads it as a float
        (lambda s: s.update(age=2**63), False),  # 64 bits unsigned: not typed, read as today
        (lambda s: s.update(color="purple"), False),  # an unknown enum value
        (lambda s: s.update(born="not a date"), False),
        (lambda s: s.update(tags=["a", None]), False),
        (lambda s: s["address"].update(zip_code=2**70), False),
    ],
)
def test_a_source_the_mirror_cannot_read_exactly_takes_the_current_path(
    change: Any, mirror: bool
) -> None:
    sources = [_profile(0), _profile(1), _profile(2)]
    change(sources[1])
    _, mirrored = _same(Profile.__esmapper__, _answer(sources))
    assert mirrored == [True, mirror, True]


def test_no_source_or_a_null_one_builds_the_document_as_today() -> None:
    body = _answer([_profile(0), None, {}]).replace(b'"_source":{}', b'"_source":null')
    assert b'"_source":null' in body
    docs, mirrored = _same(Profile.__esmapper__, body)
    assert mirrored == [True, False, False] and docs[1].name == docs[2].name == ""


def test_a_partial_load_is_read_as_today_and_marked_partial() -> None:
    source = {"name": "only the name"}
    docs, mirrored = _same(Profile.__esmapper__, _answer([source]), partial=True)
    assert state_of(docs[0]).partial and mirrored == [False]


def test_a_model_without_a_mirror_reads_every_hit_as_today() -> None:
    info = Everything.__esmapper__
    assert not _wire_decode.has_mirror(info)  # a dict field: no exact type
    source = Everything(id="e1", name="n", meta={"big": 1}).to_source()
    _, mirrored = _same(info, _answer([source, source]))
    assert mirrored == [False, False]


_SUBCLASSES: list[type] = []


class Registered(em.Document):
    """A model whose class hook would see a subclass made of it: no raw class, no mirror."""

    name: str = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _SUBCLASSES.append(cls)


def test_a_model_whose_subclasses_are_seen_reads_every_hit_as_today() -> None:
    info = Registered.__esmapper__
    assert not _wire_decode.has_mirror(info) and _SUBCLASSES == []
    _, mirrored = _same(info, _answer([Registered(id="r", name="n").to_source()]))
    assert mirrored == [False]


@pytest.mark.parametrize("model", [Employee, Note])
def test_the_shared_models_are_read_through_the_mirror(model: Any) -> None:
    doc = model(id="x1", **({"title": "t"} if model is Note else {"name": "n"}))
    _, mirrored = _same(model.__esmapper__, _answer([doc.to_source()]))
    assert mirrored == [True]


def test_the_envelope_refuses_what_orjson_reads_otherwise() -> None:
    hit = b'{"_id":"a","_seq_no":1,"_primary_term":1,"_source":{},"sort":[%s]}'
    body = b'{"hits":{"hits":[' + hit + b"]}}"
    assert decode_search(body % b"18446744073709551616") is None  # orjson: a float
    assert decode_search(body % b'"x", 1.5') is not None
    shards = (
        b'{"_shards":{"total":1,"failed":1,"failures":[{"shard":0,"n":%s}]},"hits":{"hits":[]}}'
    )
    assert decode_search(shards % b"99999999999999999999") is None
    found = decode_search(shards % b"1")
    assert found is not None and found["_shards"]["failures"][0]["n"] == 1


def test_a_hit_reads_as_its_dict_does() -> None:
    docs = decode_docs(
        b'{"docs":[{"_id":"a","found":true,"_index":"i","_source":{}},{"_id":"b","found":false}]}'
    )
    assert docs is not None
    found, missing = docs
    assert isinstance(found, Hit) and found["_id"] == "a" and found.get("found") is True
    assert missing.get("_seq_no") is None and missing.get("sort", []) == []


class WireLeaf(em.InnerDoc):
    label: str | None = None


class WireMid(em.InnerDoc):
    label: WireLeaf | None = None
    leaves: list[WireLeaf] = em.field(factory=list)


class WireTop(em.Document):
    mid: WireMid | None = None


def test_an_object_embedded_two_levels_deep_is_built_as_its_own_model() -> None:
    # each embedded model's generated names are its own: the outer one's never replace
    # those of a model it embeds (which built the outer model in the inner one's place)
    source = WireTop(id="t", mid=WireMid(label=WireLeaf(label=None), leaves=[WireLeaf(label="x")]))
    docs, mirrored = _same(WireTop.__esmapper__, _answer([source.to_source()]))
    assert mirrored == [True]
    assert type(docs[0].mid.label) is WireLeaf and type(docs[0].mid.leaves[0]) is WireLeaf


def test_a_document_read_by_id_without_a_source_is_still_stored() -> None:
    # a mapping with "_source": {"enabled": false}: found, but no _source in the answer
    docs = decode_docs(
        b'{"docs":[{"_id":"a","found":true,"_index":"i","_seq_no":3,"_primary_term":1}]}'
    )
    assert docs is not None
    (by_id,) = _wire_decode.hydrate(Employee.__esmapper__, docs, False, by_id=True)
    state = state_of(by_id)
    assert state is not None  # a save of it is an update of what is stored, not an add
    assert (state.original, state.index, state.version) == ({}, "i", "1:3")
    (searched,) = _wire_decode.hydrate(Employee.__esmapper__, docs, False)
    assert state_of(searched) is None  # a search hit without _source: as the search path


# -- the "declared only" mark: a save of such a document need not look for undeclared keys


def _declared(doc: Any) -> bool:
    state = state_of(doc)
    return declared_only(doc, type(doc), None if state is None else state.original_or_bytes)


@pytest.mark.parametrize(
    ("change", "declared"),
    [
        (lambda s: None, True),
        (lambda s: s.pop("id"), True),  # the id read from the hit: its key may be absent
        (lambda s: s.update(address=None, born=None), True),
        (lambda s: s.update(undeclared=1), False),
        (lambda s: s.update(version="1:1"), False),  # not a stored key of the model
        (lambda s: s["address"].update(zip="00100"), False),  # kept by a save, too
        (lambda s: s["reviews"][0].update(extra=True), False),  # (a save drops that one)
    ],
)
def test_a_source_of_declared_keys_only_is_marked_so_and_no_other(
    change: Any, declared: bool
) -> None:
    info = Profile.__esmapper__
    source = _profile(1)
    change(source)
    _, mirrored = _same(info, _answer([source]))  # (reads the originals: decoded)
    docs = _fast(info, _answer([source]))
    assert mirrored == [True] and _declared(docs[0]) is declared
    held = state_of(docs[0]).original_or_bytes
    assert isinstance(held, bytes)
    if declared:  # what the save's own check would have answered
        assert not undeclared_keys(info, held)


def test_after_a_hit_with_undeclared_keys_the_page_is_read_without_the_check() -> None:
    sources = [_profile(i) for i in range(4)]
    sources[1]["undeclared"] = {"kept": True}
    _, mirrored = _same(Profile.__esmapper__, _answer(sources))
    docs = _fast(Profile.__esmapper__, _answer(sources))
    assert all(mirrored)  # every hit through the mirror, the rest of the page unchecked
    assert [_declared(d) for d in docs] == [True, False, False, False]
    assert b'"undeclared":{"kept":true}' in state_of(docs[1]).original_or_bytes


def test_a_hit_the_mirror_cannot_read_leaves_the_check_on_for_the_page() -> None:
    sources = [_profile(i) for i in range(3)]
    sources[0]["age"] = "thirty"  # the current path's (lenient) value
    _, mirrored = _same(Profile.__esmapper__, _answer(sources))
    docs = _fast(Profile.__esmapper__, _answer(sources))
    assert mirrored == [False, True, True]
    assert [_declared(d) for d in docs] == [False, True, True]


def test_the_mark_vouches_only_for_the_original_it_was_made_for() -> None:
    doc = _fast(Profile.__esmapper__, _answer([_profile(1)]))[0]
    state = state_of(doc)
    held = state.original_or_bytes
    assert isinstance(held, bytes) and declared_only(doc, Profile, held)
    assert not declared_only(doc, Profile, bytes(bytearray(held)))  # equal, another object
    assert not declared_only(doc, em.Document, held)  # saved as a base class of its own
    assert state.original["name"] == "Profile 1"  # decoded: the dict is held now
    assert not declared_only(doc, Profile, state.original_or_bytes)
    assert not declared_only(Profile(), Profile, held) and not declared_only(doc, Profile, None)
    assert DocState({"name": "x"}).declared_only is None  # made elsewhere: no mark
