"""Compiled copies of hydrated documents and the copies a document cache keeps of its hits:
a copy equals a fresh hydration and shares nothing mutable with any other document."""

from __future__ import annotations

import copy
import datetime as dt
import enum
import itertools
import logging
import threading
from typing import Any

import pytest

import esmapper as em
from esmapper.cache import DocumentCache, InMemoryCache
from esmapper.model._copying import HydratedCopies, plan_of
from esmapper.model._raw import raw_class
from esmapper.model.lenient import reset_reported
from esmapper.model.state import DocState, state_of, version_of

from .models import Address, Color, Everything, Priority, Review

UTC = dt.timezone.utc


def _everything() -> Everything:
    return Everything(
        id="e1",
        name="Ada",
        email="ada@example.com",
        age=36,
        rating=4.5,
        active=True,
        born=dt.datetime(1815, 12, 10, tzinfo=UTC),
        birthday=dt.date(1815, 12, 10),
        tags=["math", "engines"],
        scores=[1, 2, 3],
        address=Address(street="St James's Square", city="London", zip_code=1),
        addresses=[Address(city="Paris"), Address(city="Turin")],
        reviews=[Review(author="Babbage", rating=5, posted=dt.datetime(1843, 1, 1, tzinfo=UTC))],
        meta={"notes": [{"n": 1}], "deep": {"x": [1, 2]}},
        color=Color.GREEN,
        priority=Priority.HIGH,
        custom_fields={"shoe": 42, "colors": ["red"]},
        created_utc=dt.datetime(2026, 1, 1, tzinfo=UTC),
        updated_utc=dt.datetime(2026, 1, 2, tzinfo=UTC),
    )


def _hit(source: dict[str, Any], id: str = "e1") -> dict[str, Any]:
    return {
        "_id": id,
        "_index": "everything-v1",
        "_source": source,
        "_seq_no": 7,
        "_primary_term": 2,
    }


def _hydrate(hit: dict[str, Any], model: type = Everything) -> Any:
    """What a repository does with a GET answer (``Repository._hydrate``)."""
    version, condition = version_of(hit.get("_seq_no"), hit.get("_primary_term"))
    source = hit.get("_source") or {}
    doc = model.__esmapper__.from_source(source, hit["_id"], version)  # type: ignore[attr-defined]
    state = DocState(source, hit.get("_index"), None, False, version, condition)
    object.__setattr__(doc, "_esm_state", state)
    return doc


class Counting:
    """A hydrate function that counts its calls."""

    def __init__(self, model: type = Everything) -> None:
        self.calls = 0
        self.model = model

    def __call__(self, hit: dict[str, Any]) -> Any:
        self.calls += 1
        return _hydrate(hit, self.model)


def test_a_copy_equals_a_hydration_and_shares_nothing_mutable() -> None:
    hit = _hit(_everything().to_source())
    doc = _hydrate(hit)
    plan = plan_of(Everything.__esmapper__)
    assert plan is not None and plan.clean(doc) and plan.complete(hit["_source"])
    copied = plan.copy_document(doc)
    # the state: the same original, index and version (conditional writes), its own object
    mine, theirs = state_of(copied), state_of(doc)
    assert mine is not theirs and mine.original is hit["_source"]
    assert (mine.index, mine.version, mine.condition) == (theirs.index, "2:7", theirs.condition)
    assert mine.session is None and not mine.watched and not mine.partial
    assert copied == doc and copied is not doc and type(copied) is Everything
    assert copied.to_source() == doc.to_source() == hit["_source"]
    for name in ("tags", "scores", "address", "addresses", "reviews", "meta", "custom_fields"):
        assert getattr(copied, name) is not getattr(doc, name), name
    assert copied.addresses[0] is not doc.addresses[0]
    assert copied.reviews[0] is not doc.reviews[0]
    assert copied.meta["notes"][0] is not doc.meta["notes"][0]
    assert copied.meta["deep"]["x"] is not doc.meta["deep"]["x"]


def test_copying_neither_watches_nor_marks_the_copied_document() -> None:
    doc = _hydrate(_hit(_everything().to_source()))
    plan = plan_of(Everything.__esmapper__)
    assert plan is not None
    plan.copy_document(doc)
    assert not state_of(doc).watched


def test_the_kept_document_is_never_handed_out_and_a_mutation_stays_local() -> None:
    copies = HydratedCopies()
    hit = _hit(_everything().to_source())
    hydrate = Counting()
    docs = [copies.document(Everything.__esmapper__, hit, hydrate) for _ in range(4)]
    assert hydrate.calls == 1 and len(copies) == 1
    assert len({id(d) for d in docs}) == 4
    docs[0].tags.append("changed")
    docs[0].address.city = "Elsewhere"
    docs[0].reviews[0].rating = 1
    docs[0].meta["deep"]["x"].append(3)
    docs[0].custom_fields["colors"].append("blue")
    docs[1].name = "renamed"
    again = copies.document(Everything.__esmapper__, hit, hydrate)
    assert again.to_source() == hit["_source"] == _everything().to_source()
    assert hydrate.calls == 1


def test_a_new_hit_object_is_hydrated_even_with_equal_content() -> None:
    copies = HydratedCopies()
    hydrate = Counting()
    source = _everything().to_source()
    first = copies.document(Everything.__esmapper__, _hit(source), hydrate)
    second = copies.document(Everything.__esmapper__, _hit(dict(source, name="New")), hydrate)
    assert hydrate.calls == 2 and (first.name, second.name) == ("Ada", "New")


def test_a_hit_missing_a_field_with_a_factory_default_is_always_hydrated() -> None:
    serial = itertools.count()

    class Ticket(em.Document):
        class Index:
            name = "tickets"

        title: str = ""
        code: str = em.field(em.Keyword(), factory=lambda: f"code-{next(serial)}")

    copies = HydratedCopies()
    hydrate = Counting(Ticket)
    hit = _hit({"title": "old, written before code existed"}, id="t1")
    codes = {copies.document(Ticket.__esmapper__, hit, hydrate).code for _ in range(3)}
    assert hydrate.calls == 3 and len(copies) == 0
    assert len(codes) == 3  # each hydration made its own, as without a cache
    full = _hit({"title": "t", "code": "stored"}, id="t2")
    assert {copies.document(Ticket.__esmapper__, full, hydrate).code for _ in range(3)} == {
        "stored"
    }
    assert hydrate.calls == 4 and len(copies) == 1


def test_a_missing_embedded_key_with_a_factory_default_is_always_hydrated() -> None:
    copies = HydratedCopies()
    hydrate = Counting()
    source = _everything().to_source()
    del source["addresses"][0]["street"]  # a plain default: copying is the same
    hit = _hit(source)
    for _ in range(2):
        copies.document(Everything.__esmapper__, hit, hydrate)
    assert hydrate.calls == 1
    del source["tags"]  # factory=list: each hydration has a list of its own
    hit = _hit(source)
    docs = [copies.document(Everything.__esmapper__, hit, hydrate) for _ in range(2)]
    assert hydrate.calls == 3 and docs[0].tags == [] and docs[0].tags is not docs[1].tags


def test_values_kept_as_stored_are_hydrated_and_reported_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reset_reported()
    copies = HydratedCopies()
    hydrate = Counting()
    source = _everything().to_source()
    source["reviews"][0]["posted"] = "last tuesday"  # kept as stored, in an embedded object
    hit = _hit(source)
    with caplog.at_level(logging.DEBUG, logger="esmapper.model"):
        docs = [copies.document(Everything.__esmapper__, hit, hydrate) for _ in range(3)]
    assert hydrate.calls == 3 and len(copies) == 0
    assert all(d.reviews[0].posted == "last tuesday" for d in docs)
    assert all(d.to_source() == source for d in docs)  # written back unchanged
    assert len([r for r in caplog.records if "reviews[0].posted" in r.getMessage()]) == 3


def test_copies_are_bounded() -> None:
    copies = HydratedCopies(maxsize=2)
    hydrate = Counting()
    hits = [_hit(_everything().to_source()) for _ in range(5)]
    for hit in hits:
        copies.document(Everything.__esmapper__, hit, hydrate)
    assert len(copies) == 2 and hydrate.calls == 5
    copies.document(Everything.__esmapper__, hits[-1], hydrate)  # still kept
    copies.document(Everything.__esmapper__, hits[0], hydrate)  # pushed out: hydrated
    assert hydrate.calls == 6
    copies.clear()
    assert len(copies) == 0


def test_concurrent_reads_of_one_hit_get_their_own_documents() -> None:
    copies = HydratedCopies()
    hit = _hit(_everything().to_source())
    hydrate = Counting()
    got: list[Any] = []
    barrier = threading.Barrier(8)

    def read() -> None:
        barrier.wait()
        for _ in range(200):
            doc = copies.document(Everything.__esmapper__, hit, hydrate)
            doc.tags.append("mine")  # a reader mutating its own document
            got.append(doc)

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(d) for d in got}) == len(got) == 1600
    assert all(d.tags == ["math", "engines", "mine"] for d in got)
    assert copies.document(Everything.__esmapper__, hit, hydrate).tags == ["math", "engines"]


class Kind(enum.Enum):
    A = "a"


def test_copying_adds_no_subclass_and_every_model_gets_a_plan() -> None:
    class Plain(em.Document):
        class Index:
            name = "plain_copy"

        kind: Kind = Kind.A
        kinds: list[Kind] = em.field(factory=list)
        when: list[dt.datetime] = em.field(factory=list)

    plan = plan_of(Plain.__esmapper__)
    assert plan is not None and plan_of(Plain.__esmapper__) is plan
    source = {"kind": "a", "kinds": ["a"], "when": ["2026-01-01T00:00:00Z"]}
    doc = _hydrate(_hit(source, id="x"), Plain)
    copied = plan.copy_document(doc)
    assert copied == doc and copied.kinds is not doc.kinds and copied.when is not doc.when
    # the only subclass a copy may add is the raw one it fills (no model of its own)
    for model in (Plain, Everything):
        for sub in model.__subclasses__():
            assert sub is raw_class(model) and sub.__esmapper__ is None  # type: ignore[attr-defined]
    assert type(copied) is Plain


class Decoding:
    """A cache client that decodes every hit anew (as a RedisCache does)."""

    def __init__(self) -> None:
        self.stored: dict[str, Any] = {}

    def get(self, key: str) -> Any:
        value = self.stored.get(key)
        return None if value is None else copy.deepcopy(value)

    def compare_and_set(self, key: str, expected: Any, value: Any, ttl: Any = None) -> bool:
        if self.stored.get(key) != expected:
            return False
        self.stored[key] = value
        return True


def test_only_a_client_that_hands_out_its_objects_gets_copies() -> None:
    assert DocumentCache(InMemoryCache()).copies is not None
    decoding = DocumentCache(Decoding())  # type: ignore[arg-type]
    assert decoding.copies is None
    _, token = decoding.lookup("everything", "e1")
    assert decoding.fill("everything", "e1", _hit(_everything().to_source()), token, 60)
    first, _ = decoding.lookup("everything", "e1")
    second, _ = decoding.lookup("everything", "e1")
    assert first == second and first is not second  # nothing a copy could be kept for


def test_an_array_of_arrays_in_a_list_field_is_never_shared_with_the_hit_or_a_copy() -> None:
    # Elasticsearch stores ``[["math"], "x"]`` in a keyword field as it does ``["math", "x"]``:
    # another writer may leave such a value, and hydration hands its inner lists out
    source = _everything().to_source()
    source["tags"] = [["math", "logic"], "engines"]
    hit = _hit(source)
    copies = HydratedCopies()
    hydrate = Counting()
    first = copies.document(Everything.__esmapper__, hit, hydrate)
    second = copies.document(Everything.__esmapper__, hit, hydrate)
    assert hydrate.calls == 1 and first.tags == second.tags == [["math", "logic"], "engines"]
    assert first.tags[0] is not source["tags"][0] and second.tags[0] is not first.tags[0]
    first.tags[0].append("changed by one caller")
    second.tags[0].append("changed by another")
    third = copies.document(Everything.__esmapper__, hit, hydrate)
    assert hit["_source"]["tags"] == third.tags == [["math", "logic"], "engines"]
    assert state_of(third).original["tags"] == [["math", "logic"], "engines"]
    # a save's body becomes the original: it shares no inner array with the document
    assert third.to_source()["tags"][0] is not third.tags[0]


def test_a_snapshot_is_taken_once_and_every_document_made_of_it_is_independent() -> None:
    hit = _hit(_everything().to_source())
    doc = _hydrate(hit)
    plan = plan_of(Everything.__esmapper__)
    assert plan is not None
    snapshot = plan.freeze(doc)
    doc.tags.append("changed after the snapshot")  # the hydrated document goes its way
    doc.address.city = "Elsewhere"
    first, second = plan.thaw(snapshot), plan.thaw(snapshot)
    assert first == second and first.tags == ["math", "engines"]
    assert first.address.city == "London" and first.addresses[1].city == "Turin"
    for name in ("tags", "scores", "address", "addresses", "reviews", "meta", "custom_fields"):
        assert getattr(first, name) is not getattr(second, name), name
    first.addresses[0].city = "Lyon"
    first.reviews[0].rating = 1
    first.meta["notes"][0]["n"] = 99
    first.scores.append(4)
    third = plan.thaw(snapshot)
    assert third.to_source() == second.to_source() == hit["_source"]
    # every copy starts clean (nothing handed out yet), its own state; embedded: none
    fresh, other = plan.thaw(snapshot), plan.thaw(snapshot)
    for made in (fresh, other):
        state = state_of(made)
        assert state is not None and state is not state_of(doc) and state.session is None
        assert not state.watched and state.assigned is None and state.original is hit["_source"]
    assert fresh.address._esm_state is None
    assert state_of(fresh).watched and not state_of(other).watched  # reading it watched it


def test_an_embedded_object_of_another_class_is_copied_deep_every_time() -> None:
    class Office(Address):
        pass

    doc = _hydrate(_hit(_everything().to_source()))
    object.__setattr__(doc, "address", Office(city="Bath"))  # not what hydration makes
    plan = plan_of(Everything.__esmapper__)
    assert plan is not None
    snapshot = plan.freeze(doc)
    first, second = plan.thaw(snapshot), plan.thaw(snapshot)
    assert type(first.address) is Office and first.address.city == "Bath"
    assert first.address is not second.address is not doc.address
    first.address.city = "Wells"
    assert plan.thaw(snapshot).address.city == "Bath"


def test_an_array_stored_in_a_field_of_one_scalar_is_never_shared_by_copies() -> None:
    # Elasticsearch stores ``["Ada", "Lovelace"]`` in a keyword field declared as one str
    # (and an object in an integer field is kept as it is): a copy would share it, so such
    # a document is hydrated on every hit instead
    source = _everything().to_source()
    source["name"] = ["Ada", "Lovelace"]
    hit = _hit(source)
    plan = plan_of(Everything.__esmapper__)
    assert plan is not None and not plan.clean(_hydrate(hit))
    copies = HydratedCopies()
    hydrate = Counting()
    first = copies.document(Everything.__esmapper__, hit, hydrate)
    second = copies.document(Everything.__esmapper__, hit, hydrate)
    assert hydrate.calls == 2 and len(copies) == 0
    assert first.name == second.name == ["Ada", "Lovelace"]
    address = dict(source["address"], zip_code={"code": 1})  # in an embedded object too
    assert not plan.clean(_hydrate(_hit(dict(_everything().to_source(), address=address))))
    assert plan.clean(_hydrate(_hit(_everything().to_source())))


def test_a_model_with_an_attribute_no_field_describes_gets_no_plan() -> None:
    import attrs

    from esmapper.model._copying import _compile

    info = Everything.__esmapper__
    assert _compile(info) is not None
    assert _compile(attrs.evolve(info, fields=info.fields[1:])) is None
