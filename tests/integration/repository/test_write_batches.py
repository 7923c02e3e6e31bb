"""Writes decided per batch (per model and kind): what a batch mixing models and kinds
must still guarantee document by document."""

from __future__ import annotations

from typing import Any

import pytest

import esmapper as em
from esmapper import signals
from tests.integration.conftest import MakeMapper

from .models import Employee, Message


class Checked(em.Document, em.HasDates):
    """A model that overrides ``validate``."""

    class Index:
        name = "checked"
        kind = "plain"

    name: str = ""

    def validate(self) -> None:
        if self.name == "bad":
            raise em.DocumentValidationError(f"Checked {self.id!r}: name is bad", field="name")


def stored(mapper: em.Mapper, model: type) -> int:
    """How many documents of ``model`` are stored (after a refresh)."""
    mapper.client.indices.refresh(index=mapper.spec(model).alias)
    return mapper.repository(model).count()


@pytest.fixture
def mixed(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(Employee, Message, Checked, configure=True)


def test_a_veto_in_a_mixed_flush_restores_every_documents_id_and_dates(
    mixed: em.Mapper,
) -> None:
    loaded = mixed.repository(Employee).add(Employee(id="kept", name="Kept"))
    stored_updated = loaded.updated_utc
    new_a, new_b = Employee(name="A"), Employee(name="B")
    message = Message(tenant="t", message_id="m1", handler_type="h")

    def veto(sender: Any, **kwargs: Any) -> None:
        raise em.DocumentValidationError("no messages today")

    with mixed.session() as session:
        fresh = session.get(Employee, "kept")
        assert fresh is not None
        fresh.name = "Changed"
        for doc in (new_a, new_b, message):
            session.add(doc)
        signals.documents_changing.connect(veto, sender=Message)
        try:
            with pytest.raises(em.DocumentValidationError, match="no messages today"):
                session.flush()
        finally:
            signals.documents_changing.disconnect(veto, sender=Message)
        # nothing was sent: every id and date the pipeline set is back, in every group
        assert new_a.id is None and new_b.id is None and message.id is None
        assert new_a.created_utc is None and new_a.updated_utc is None
        assert fresh.updated_utc == stored_updated
        assert stored(mixed, Employee) == 1
        assert stored(mixed, Message) == 0
        session.flush()  # the same unit of work goes through once the veto is gone
    assert mixed.repository(Employee).get("kept").name == "Changed"  # type: ignore[union-attr]
    assert stored(mixed, Employee) == 3
    assert mixed.repository(Message).get(message.id) is not None  # type: ignore[arg-type]


def test_an_overridden_validate_runs_for_every_document_and_stops_the_batch(
    mixed: em.Mapper,
) -> None:
    repo = mixed.repository(Checked)
    good, bad = Checked(name="good"), Checked(name="bad")
    with pytest.raises(em.DocumentValidationError, match="name is bad"):
        repo.add([good, bad])
    assert good.id is None and bad.id is None and good.created_utc is None
    assert stored(mixed, Checked) == 0
    repo.add([good, bad], validate=False)  # the option still switches it off
    assert stored(mixed, Checked) == 2
    # a model without its own validate in the same unit of work is written alongside
    session = mixed.session()
    session.add(Checked(name="bad"))
    session.add(Employee(name="E"))
    with pytest.raises(em.DocumentValidationError, match="name is bad"):
        session.flush()
    session.close()
    assert stored(mixed, Employee) == 0


def test_a_mixed_batch_settles_each_model_and_kind(mixed: em.Mapper) -> None:
    employees = mixed.repository(Employee)
    gone = employees.add(Employee(id="gone", name="Gone"))
    seen: list[tuple[str, str, list[str | None]]] = []

    def recorder(name: str) -> Any:
        def receive(sender: Any, documents: Any, **kwargs: Any) -> None:
            seen.append((name, sender.__name__, [d.value.id for d in documents]))

        return receive

    receivers = [
        (signals.documents_added, recorder("added")),
        (signals.documents_removed, recorder("removed")),
    ]
    for signal, receiver in receivers:
        signal.connect(receiver)
    try:
        with mixed.session() as session:
            session.remove(session.get(Employee, "gone"))
            added = Employee(id="new", name="New")
            session.add(added)
            message = Message(tenant="t", message_id="m2", handler_type="h")
            session.add(message)
            session.flush()
            assert added.version is not None  # versions written back per document
            assert session.get(Employee, "new") is added  # the session adopted it
            assert session.get(Employee, "gone") is None
    finally:
        for signal, receiver in receivers:
            signal.disconnect(receiver)
    assert sorted(seen) == [
        ("added", "Employee", ["new"]),
        ("added", "Message", [message.id]),
        ("removed", "Employee", ["gone"]),
    ]
    assert gone.id == "gone" and employees.get("gone") is None
