"""What users expect of a flush and of session paging (issue 25, item 10)."""

from __future__ import annotations

from typing import Any

import esmapper as em
from esmapper import _json, signals
from esmapper.model._wire_encode import source_encoder
from esmapper.model.state import DocState, state_of

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


def _loaded_as_bytes(session: em.Session) -> tuple[Employee, DocState]:
    """A document of the session whose original is held as the bytes of its source, as
    it was written (what a read that keeps the hit's bytes leaves)."""
    held = session.get(Employee, "e1")
    assert held is not None
    state = state_of(held)
    encode = source_encoder(Employee.__esmapper__)
    assert state is not None and encode is not None
    state.original = encode(held)
    return held, state


def test_an_unchanged_loaded_document_is_compared_as_bytes_and_nothing_is_decoded(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    with mapper.session() as session:
        held, state = _loaded_as_bytes(session)
        held.age = held.age  # an assignment: diffed at the next flush
        assert session.dirty == []
        assert type(state.original_or_bytes) is bytes  # equal bytes: not decoded
        held.age = (held.age or 0) + 1
        assert session.dirty == [held]


def test_other_bytes_of_the_same_source_are_compared_as_dicts(
    mapper: em.Mapper, seeded: list[Employee]
) -> None:
    with mapper.session() as session:
        held, state = _loaded_as_bytes(session)
        source = _json.loads(state.original_or_bytes)  # type: ignore[arg-type]
        state.original = _json.dumps(dict(reversed(list(source.items()))))  # other key order
        assert state.original_or_bytes != _json.dumps(Employee.__esmapper__.to_source(held))
        held.age = held.age
        assert session.dirty == []  # equal as dicts: unchanged
        held.age = (held.age or 0) + 1
        assert session.dirty == [held]
