"""Session tracking follows the caller's references, and flushes normalize list items.

A list or embedded object obtained from a document stays the document's value after a
flush: mutating it later must be written by the next flush. Items put into a list by
mutation (``append``) are converted and checked like an assignment, before anything is sent.
"""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper import _changes
from tests.integration.conftest import MakeMapper


class Place(em.InnerDoc):
    city: str = ""
    tags: list[str] = em.field(factory=list)


class Skill(em.InnerDoc):
    name: str = ""
    level: int = 0


class Worker(em.Document, em.Versioned):
    class Index:
        name = "tracked_workers"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = ""
    age: int = 0
    tags: list[str] = em.field(factory=list)
    place: Place | None = None
    skills: list[Skill] = em.field(factory=list)


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Worker, configure=True)


@pytest.fixture
def seeded(mapper: em.Mapper) -> list[Worker]:
    return mapper.repository(Worker).add(
        [
            Worker(id=f"w{i}", name=f"W{i}", tags=["t"], place=Place(city="Oslo", tags=["p"]))
            for i in range(5)
        ],
        consistency="wait",
    )


def stored(mapper: em.Mapper, doc_id: str) -> Worker:
    doc = mapper.repository(Worker).get(doc_id)
    assert doc is not None
    return doc


# -- references held across a flush ----------------------------------------------------------


def test_list_held_across_a_flush_is_written(mapper: em.Mapper, seeded: list[Worker]) -> None:
    with mapper.session(consistency="wait") as s:
        w = s.get(Worker, "w0")
        assert w is not None
        tags = w.tags
        s.flush()
        tags.append("x")
        s.flush()
        assert stored(mapper, "w0").tags == ["t", "x"]
        tags.append("y")  # and again: the document stays watched
    assert stored(mapper, "w0").tags == ["t", "x", "y"]


def test_changed_list_held_across_its_save_is_written(
    mapper: em.Mapper, seeded: list[Worker]
) -> None:
    with mapper.session(consistency="wait") as s:
        w = s.get(Worker, "w0")
        assert w is not None
        tags = w.tags
        tags.append("x")
        s.flush()  # a confirmed save used to drop the document from the maybe-dirty set
        tags.append("y")
    assert stored(mapper, "w0").tags == ["t", "x", "y"]


def test_inner_doc_held_across_a_flush_is_written(mapper: em.Mapper, seeded: list[Worker]) -> None:
    with mapper.session(consistency="wait") as s:
        w = s.get(Worker, "w1")
        assert w is not None
        place = w.place
        assert place is not None
        s.flush()
        place.city = "Bergen"
    assert stored(mapper, "w1").place == Place(city="Bergen", tags=["p"])


def test_nested_list_in_inner_doc_held_across_a_flush_is_written(
    mapper: em.Mapper, seeded: list[Worker]
) -> None:
    with mapper.session(consistency="wait") as s:
        w = s.get(Worker, "w2")
        assert w is not None and w.place is not None
        place_tags = w.place.tags
        s.flush()
        place_tags.append("q")
    assert stored(mapper, "w2").place == Place(city="Oslo", tags=["p", "q"])


def test_assigned_inner_doc_mutated_after_the_flush_is_written(
    mapper: em.Mapper, seeded: list[Worker]
) -> None:
    place = Place(city="Trondheim")
    with mapper.session(consistency="wait") as s:
        w = s.get(Worker, "w3")
        assert w is not None
        w.place = place  # the caller keeps the object it assigned
        s.flush()
        place.city = "Tromsø"
    assert stored(mapper, "w3").place == Place(city="Tromsø")


def test_added_document_list_held_across_the_flush_is_written(mapper: em.Mapper) -> None:
    early = Worker(id="early", tags=["a"])
    early_tags = early.tags  # read before the session saw the document
    with mapper.session(consistency="wait") as s:
        s.add(early)
        pending = s.add(Worker(id="pending", tags=["a"]))
        pending_tags = pending.tags  # read while the create is pending
        s.flush()
        early_tags.append("b")
        pending_tags.append("b")
    assert stored(mapper, "early").tags == ["a", "b"]
    assert stored(mapper, "pending").tags == ["a", "b"]


# -- normalization of list items ---------------------------------------------------------------


def test_dict_appended_to_inner_doc_list_is_converted_and_stored(
    mapper: em.Mapper, seeded: list[Worker]
) -> None:
    with mapper.session(consistency="wait") as s:
        w = s.get(Worker, "w0")
        assert w is not None
        skills = w.skills
        skills.append({"name": "python", "level": 3})  # type: ignore[arg-type]
        s.add(Worker(id="new")).skills.append({"name": "go"})  # type: ignore[arg-type]
        s.flush()
        assert skills[0] == Skill(name="python", level=3)
        assert w.skills is skills  # converted in place: the caller's list stays the value
    assert stored(mapper, "w0").skills == [Skill(name="python", level=3)]
    assert stored(mapper, "new").skills == [Skill(name="go")]


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda w: w.tags.append(5), "tags[1]"),
        (lambda w: w.skills.extend([Skill(), {"level": "high"}]), "skills[1].level"),
        (lambda w: w.skills.append({"nope": 1}), "skills[0]"),
        (lambda w: w.place.tags.append(None), "place.tags[1]"),
    ],
)
def test_wrong_item_raises_naming_the_field_and_sends_nothing(
    mapper: em.Mapper, seeded: list[Worker], mutate: Any, field: str
) -> None:
    s = mapper.session()
    w = s.get(Worker, "w0")
    assert w is not None
    w.age = 99
    other = s.get(Worker, "w1")
    assert other is not None
    other.age = 98
    s.add(Worker(id="new"))
    mutate(w)
    mapper.writer.last_stats = None
    with pytest.raises(em.DocumentValidationError) as raised:
        s.flush()
    assert raised.value.field == field
    assert str(raised.value).startswith(f"Worker.{field}: ")
    assert raised.value.ids == ("w0",)
    assert mapper.writer.last_stats is None  # nothing was sent
    assert id(w) in s._maybe_dirty and s.new != []  # still pending
    s.rollback()
    assert w.age == 0 and w.tags == ["t"] and w.skills == [] and w.place is not None
    assert w.place.tags == ["p"]
    s.flush()
    assert mapper.writer.last_stats is None
    s.close()
    assert stored(mapper, "w0").age == 0
    assert mapper.repository(Worker).get("new") is None


def test_wrong_item_in_a_new_document_stays_pending(mapper: em.Mapper) -> None:
    s = mapper.session(consistency="wait")
    doc = s.add(Worker(id="new"))
    doc.tags.append(1.5)  # type: ignore[arg-type]
    with pytest.raises(em.DocumentValidationError, match=r"Worker\.tags\[0\]"):
        s.flush()
    assert s.new == [doc]
    doc.tags[0] = "fixed"
    s.flush()
    s.close()
    assert stored(mapper, "new").tags == ["fixed"]


# -- rollback, expunge -------------------------------------------------------------------------


def test_rollback_restores_a_mutation_through_a_held_reference(
    mapper: em.Mapper, seeded: list[Worker]
) -> None:
    with mapper.session() as s:
        w = s.get(Worker, "w0")
        assert w is not None
        tags = w.tags
        place = w.place
        assert place is not None
        s.flush()
        tags.append("x")
        place.city = "Bergen"
        s.rollback()
        assert w.tags == ["t"]
        assert w.place == Place(city="Oslo", tags=["p"])
        mapper.writer.last_stats = None
        s.flush()
        assert mapper.writer.last_stats is None
    assert stored(mapper, "w0").tags == ["t"]


def test_expunged_document_is_no_longer_watched(mapper: em.Mapper, seeded: list[Worker]) -> None:
    with mapper.session() as s:
        w = s.get(Worker, "w0")
        assert w is not None
        tags = w.tags
        s.flush()
        s.expunge(w)
        tags.append("x")
        assert s._maybe_dirty == {} and s._watched == {}
    assert stored(mapper, "w0").tags == ["t"]


# -- cost: only documents that may have changed are diffed -------------------------------------


class CountingLooks:
    """Wraps :func:`esmapper._changes._look`, the first look at one document's changes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[str] = []

    def __call__(self, doc: Any) -> Any:
        self.seen.append(doc.id)
        return self.inner(doc)


def test_only_touched_documents_are_diffed(
    mapper: em.Mapper, seeded: list[Worker], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = mapper.session()
    docs = s.find(Worker, sort="name", limit=5).documents
    assert len(docs) == 5
    s.flush()
    assert sum(d.age for d in docs) == 0 and docs[0].name == "W0"  # scalars only
    docs[0].age = 1  # assigned: diffed at the next flush only
    assert docs[1].tags == ["t"]  # a list handed out: watched
    assert docs[2].place is not None  # an embedded object handed out: watched
    counting = CountingLooks(_changes._look)
    monkeypatch.setattr(_changes, "_look", counting)
    s.flush()
    assert set(counting.seen) == {"w0", "w1", "w2"}  # never the untouched w3 and w4
    assert set(s._maybe_dirty) == {id(docs[1]), id(docs[2])}  # w0 was written: pruned
    counting.seen.clear()
    s.flush()
    assert sorted(counting.seen) == ["w1", "w2"]  # only the watched ones, each flush
    s.close()
