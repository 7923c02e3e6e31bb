"""Sessions: identity map, change tracking, one bulk request per flush, failures, rollback."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.session import SessionClosedError

from ..repository.models import Address, Employee, Message


def test_request_flow_writes_one_bulk_request(mapper: em.Mapper, seeded: list[Employee]) -> None:
    with mapper.session(consistency="wait") as s:
        e0 = s.get(Employee, "e0")
        e0.age += 10
        s.add(Employee(id="new", name="New"))
        s.add(Message(tenant="acme", message_id="1", handler_type="H"))
        s.remove(s.get(Employee, "e1"))
        assert s.get(Employee, "e0") is e0  # identity map
        assert [d.id for d in s.dirty] == ["e0"]
        assert len(s.new) == 2 and len(s.deleted) == 1
    stats = mapper.writer.last_stats
    assert stats is not None and stats.requests == 1
    repo = mapper.repository(Employee)
    assert repo.get("e0").age == 30
    assert repo.get("new").name == "New"
    assert repo.get("e1") is None
    assert mapper.repository(Message).get("acme:1:H") is not None


def test_unchanged_documents_send_nothing(mapper: em.Mapper, seeded: list[Employee]) -> None:
    with mapper.session() as s:
        docs = s.find(Employee, limit=5).documents
        assert all(d.tags == ["t"] for d in docs)  # reading mutable fields: still clean
        mapper.writer.last_stats = None
        s.flush()
        assert s.dirty == []
    assert mapper.writer.last_stats is None


def test_nested_mutations_are_detected(mapper: em.Mapper, seeded: list[Employee]) -> None:
    with mapper.session(consistency="wait") as s:
        e2 = s.get(Employee, "e2")
        e2.tags.append("u")
        e3 = s.get(Employee, "e3")
        e3.address = Address(city="Oslo")
    with mapper.session() as s:
        e3 = s.get(Employee, "e3")
        e3.address.city = "Bergen"
    repo = mapper.repository(Employee)
    assert repo.get("e2").tags == ["t", "u"]
    assert repo.get("e3").address.city == "Bergen"


def test_find_results_join_the_identity_map(mapper: em.Mapper, seeded: list[Employee]) -> None:
    with mapper.session() as s:
        e0 = s.get(Employee, "e0")
        e0.name = "Local change"
        found = {d.id: d for d in s.find(Employee, limit=10)}
        assert found["e0"] is e0 and found["e0"].name == "Local change"
        assert s.get_many(Employee, ["e4", "e0"])[1] is e0
        s.rollback()
        assert e0.name == "Person 0"  # rollback restores the last confirmed values


def test_a_page_joins_the_identity_map_before_its_hits_are_read(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    with mapper.session() as s:
        e0 = s.get(Employee, "e0")
        results = s.find(Employee, sort="age", limit=3, search_after=True)
        documents = results.documents
        assert [d.id for d in documents] == ["e0", "e1", "e2"] and documents[0] is e0
        assert s.get(Employee, "e1") is documents[1]
        hits = results.hits  # built now, from the raw hits, around the adopted documents
        assert [h.document for h in hits] == documents and hits[0].document is e0
        assert hits[1].version == documents[1].version is not None
        assert hits[1].sort == [21, "e1"] and hits[1].index is not None
        assert results.next_page()
        following = results.documents
        assert [d.id for d in following] == ["e3", "e4"]
        assert s.get(Employee, "e3") is following[0]  # a later page joins it too


def test_versions_are_checked_and_written_back(mapper: em.Mapper, seeded: list[Employee]) -> None:
    other = mapper.repository(Employee).get("e0")
    s = mapper.session()
    mine = s.get(Employee, "e0")
    other.age = 1
    mapper.repository(Employee).save(other)
    mine.age = 2
    with pytest.raises(em.VersionConflictError):
        s.flush()
    assert mine in s.dirty  # failed documents stay pending
    fresh = s.get(Employee, "e4")
    fresh.age = 99
    before = fresh.version
    s.expunge(mine)
    s.flush()
    assert fresh.version != before
    s.close()


def test_partial_failure_keeps_the_failures_pending(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    s = mapper.session()
    ok, dup = Employee(id="fresh"), Employee(id="e0")
    s.add(ok)
    s.add(dup)
    with pytest.raises(em.DuplicateDocumentError) as raised:
        s.flush()
    assert [f.id for f in raised.value.failures] == ["e0"]
    assert raised.value.succeeded == [ok]
    assert s.new == [dup]
    assert s.get(Employee, "fresh") is ok
    s.close()


def test_exception_inside_with_rolls_back_and_writes_nothing(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    with pytest.raises(RuntimeError), mapper.session() as s:
        s.get(Employee, "e0").age = 77
        s.add(Employee(id="never"))
        raise RuntimeError("boom")
    repo = mapper.repository(Employee)
    assert repo.get("e0").age == 20
    assert repo.get("never") is None
    with pytest.raises(SessionClosedError):
        s.get(Employee, "e0")


def test_sessionmaker_gives_independent_sessions(mapper: em.Mapper, seeded: list[Employee]) -> None:
    factory = mapper.sessionmaker(consistency="wait")
    with factory() as a, factory() as b:
        assert a.get(Employee, "e0") is not b.get(Employee, "e0")
        assert a.options.consistency == "wait"


def test_later_pages_join_the_identity_map(mapper: em.Mapper, seeded: list[Employee]) -> None:
    with mapper.session() as s:
        e4 = s.get(Employee, "e4")
        results = s.find(Employee, sort="age", limit=2)
        seen = list(results.documents)
        while results.next_page():
            seen.extend(results.documents)
        assert [d.id for d in seen] == ["e0", "e1", "e2", "e3", "e4"]
        assert seen[-1] is e4
        assert s.get(Employee, "e2") is seen[2]
