"""What users expect of a flush and of session paging (issue 25, item 10)."""

from __future__ import annotations

from typing import Any

import esmapper as em
from esmapper import signals

from ..repository.models import Employee


def test_documents_added_in_a_before_flush_receiver_are_flushed_in_that_flush(
    mapper: em.Mapper,
) -> None:
    # SQLAlchemy's rule: the pending set is computed after before_flush
    def audit(session: em.Session, **_: Any) -> None:
        if not any(d.id == "audit" for d in session.new):
            session.add(Employee(id="audit", name="audit"))

    with mapper.session() as session:
        session.add(Employee(id="a", name="a"))
        with signals.before_flush.connected_to(audit):
            session.flush()
        assert session.new == []  # before: the audit document stayed pending
    repo = mapper.repository(Employee)
    assert sorted(d.id for d in repo.get_many(["a", "audit"])) == ["a", "audit"]


def test_a_change_made_in_before_flush_to_a_loaded_document_is_flushed(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    def bump(session: em.Session, **_: Any) -> None:
        held = session.get(Employee, "e1")
        assert held is not None
        held.age = 99

    with mapper.session() as session, signals.before_flush.connected_to(bump):
        session.flush()
        assert session.dirty == []
    got = mapper.repository(Employee).get("e1")
    assert got is not None and got.age == 99


def test_session_search_after_paging_ends_with_has_more_false(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    with mapper.session() as session:
        results = session.find(Employee, sort="age", limit=5, search_after=True)
        assert len(results) == 5 and results.has_more is False
        assert not results.next_page()
