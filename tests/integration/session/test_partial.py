"""Documents a session holds in part (a ``find`` with ``includes``/``excludes``).

Reading such a document whole (``get``, ``get_many``, a ``find`` without a source filter)
completes the same object, like SQLAlchemy loads deferred attributes: unloaded fields take
the stored values, local changes stay, and the version moves on only when there were none.
Assignments are what a partial save writes, so a flush writes them even when they equal the
default that stands in for an unloaded field, and a rollback forgets them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em

from ..repository.models import Address, Employee


@pytest.fixture
def raw(es_url: str) -> Iterator[Elasticsearch]:
    with Elasticsearch(es_url) as client:
        yield client


@pytest.fixture
def ann(mapper: em.Mapper) -> Employee:
    return mapper.repository(Employee).add(
        Employee(
            id="ann",
            name="Ann",
            email="ann@x",
            age=40,
            tags=["a"],
            address=Address(city="Rome", country="IT"),
        ),
        consistency="wait",
    )


def stored(raw: Elasticsearch, mapper: em.Mapper, id: str) -> dict[str, Any]:
    return dict(raw.get(index=mapper.spec(Employee).alias, id=id)["_source"])


def partial(s: em.Session, id: str = "ann") -> Employee:
    doc = s.find_one(Employee, f"id:{id}", includes=["name"])
    assert doc is not None and doc.email == ""  # not loaded: the default
    return doc


def test_get_completes_a_partially_loaded_document_and_keeps_its_local_changes(
    mapper: em.Mapper, ann: Employee, raw: Elasticsearch
) -> None:
    with mapper.session() as s:
        doc = partial(s)
        doc.name = "Anna"
        whole = s.get(Employee, "ann")
        assert whole is doc  # the same object: identity is kept
        assert (doc.name, doc.email, doc.age, doc.tags) == ("Anna", "ann@x", 40, ["a"])
        assert doc.address == Address(city="Rome", country="IT")
        assert doc.created_utc == ann.created_utc
        assert s.dirty == [doc]
        doc.email = "anna@x"  # a whole document now: saved whole
    source = stored(raw, mapper, "ann")
    assert (source["name"], source["email"], source["age"]) == ("Anna", "anna@x", 40)


def test_completing_a_clean_document_takes_the_stored_version(
    mapper: em.Mapper, ann: Employee
) -> None:
    repo = mapper.repository(Employee)
    with mapper.session() as s:
        doc = partial(s)
        repo.patch("ann", em.PartialPatch({"age": 41}))  # another writer, after the load
        assert s.get(Employee, "ann") is doc
        assert doc.age == 41 and doc.version == repo.get("ann").version  # type: ignore[union-attr]
        doc.age = 42
    assert repo.get("ann").age == 42  # type: ignore[union-attr]


def test_completing_a_changed_document_keeps_its_version_so_the_flush_conflicts(
    mapper: em.Mapper, ann: Employee, raw: Elasticsearch
) -> None:
    repo = mapper.repository(Employee)
    s = mapper.session()
    doc = partial(s)
    doc.name = "mine"
    repo.patch("ann", em.PartialPatch({"name": "theirs", "age": 41}))
    assert s.get(Employee, "ann") is doc
    assert (doc.name, doc.age) == ("mine", 41)  # the local change over the stored values
    with pytest.raises(em.VersionConflictError):  # made at the old version: not written
        s.flush()
    assert stored(raw, mapper, "ann")["name"] == "theirs"
    s.close()


def test_get_many_and_a_whole_find_complete_documents_held_in_part(
    mapper: em.Mapper, ann: Employee
) -> None:
    mapper.repository(Employee).add(Employee(id="bo", name="Bo", age=30), consistency="wait")
    with mapper.session() as s:
        first, second = partial(s, "ann"), partial(s, "bo")
        assert s.get_many(Employee, ["bo", "ann"]) == [second, first]
        assert (first.age, second.age) == (40, 30)
        third = s.find_one(Employee, "id:ann", includes=["name"])
        assert third is first  # a partial find returns the whole object held
    with mapper.session() as s:
        doc = partial(s)
        assert s.find(Employee, "id:ann").documents == [doc]
        assert doc.email == "ann@x" and s.dirty == []


def test_a_partially_loaded_document_no_longer_stored_is_not_served(
    mapper: em.Mapper, ann: Employee
) -> None:
    with mapper.session() as s:
        doc = partial(s)
        mapper.repository(Employee).remove("ann")
        assert s.get(Employee, "ann") is None
        assert doc not in s  # nothing pending for it: it left the session


def test_a_session_writes_an_assigned_default_of_an_unloaded_field(
    mapper: em.Mapper, ann: Employee, raw: Elasticsearch
) -> None:
    """``age = 0`` on a document loaded without ``age``: the caller means 0, as in
    ``repo.save`` (it was not written: the session compared with the default)."""
    with mapper.session() as s:
        doc = partial(s)
        doc.age = 0
        assert s.dirty == [doc]
    assert stored(raw, mapper, "ann")["age"] == 0


def test_rollback_forgets_the_assignments_of_a_partially_loaded_document(
    mapper: em.Mapper, ann: Employee, raw: Elasticsearch
) -> None:
    """The rolled-back assignment of an unloaded field was written at the next flush, as
    the default the rollback put back: the stored age became 0."""
    with mapper.session() as s:
        doc = partial(s)
        doc.age = 7
        s.rollback()
        assert s.dirty == []
        doc.name = "Anna"
    source = stored(raw, mapper, "ann")
    assert (source["name"], source["age"]) == ("Anna", 40)
