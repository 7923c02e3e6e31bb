"""Signals: order, payloads, vetoes, entity_changed notifications."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

import esmapper as em
from esmapper import signals

from ..repository.models import Employee

DOC_SIGNALS = [
    "documents_adding",
    "documents_added",
    "documents_saving",
    "documents_saved",
    "documents_removing",
    "documents_removed",
    "documents_changing",
    "documents_changed",
    "before_publish_entity_changed",
    "entity_changed",
]


@pytest.fixture
def events() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    with ExitStack() as stack:
        for name in DOC_SIGNALS:

            def receiver(sender: Any, _name: str = name, **kwargs: Any) -> None:
                seen.append((_name, kwargs))

            stack.enter_context(getattr(signals, name).connected_to(receiver, sender=Employee))
        yield seen


def names(seen: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [n for n, _ in seen]


def test_add_save_remove_order(mapper: em.Mapper, events: list[Any]) -> None:
    repo = mapper.repository(Employee)
    doc = repo.add(Employee(id="a"))
    assert names(events) == [
        "documents_adding",
        "documents_changing",
        "documents_added",
        "documents_changed",
        "before_publish_entity_changed",
        "entity_changed",
    ]
    assert events[-1][1]["message"] == em.EntityChanged(
        type="Employee", id="a", change_type=em.ChangeType.ADDED
    )
    events.clear()
    doc.age = 3
    repo.save(doc)
    assert names(events)[:4] == [
        "documents_saving",
        "documents_changing",
        "documents_saved",
        "documents_changed",
    ]
    saved = events[0][1]["documents"][0]
    assert saved.value is doc and saved.original.age == 0  # originals from the store
    events.clear()
    repo.remove(doc)
    assert names(events)[0] == "documents_removing"
    assert events[-1][1]["message"].change_type == em.ChangeType.REMOVED


def test_soft_delete_is_published_as_removed(mapper: em.Mapper, events: list[Any]) -> None:
    repo = mapper.repository(Employee)
    doc = repo.add(Employee(id="s"))
    events.clear()
    doc.is_deleted = True
    repo.save(doc)
    assert events[-1][1]["message"].change_type == em.ChangeType.REMOVED
    events.clear()
    # already deleted: no false -> true transition, so SAVED (a patch that soft-deletes
    # is REMOVED, like a save: tests/integration/repository/test_patch_soft_deletes.py)
    repo.patch("s", em.PartialPatch({"is_deleted": True}))
    assert names(events) == ["documents_changed", "before_publish_entity_changed", "entity_changed"]
    assert events[0][1]["documents"] == []
    assert events[-1][1]["message"].change_type == em.ChangeType.SAVED


def test_a_raising_ing_receiver_vetoes_the_write(mapper: em.Mapper) -> None:
    def veto(sender: Any, **kwargs: Any) -> None:
        raise em.DocumentValidationError("no interns")

    with (
        signals.documents_adding.connected_to(veto, sender=Employee),
        pytest.raises(em.DocumentValidationError),
    ):
        mapper.repository(Employee).add(Employee(id="x"))
    assert mapper.repository(Employee).get("x") is None


def test_ing_receivers_may_modify_documents(mapper: em.Mapper) -> None:
    signals.documents_adding.connect(
        lambda sender, documents, **kw: [setattr(d.value, "email", "set@x") for d in documents],  # type: ignore[func-returns-value]
        sender=Employee,
    )  # a lambda keeps working: receivers are held strongly
    try:
        assert mapper.repository(Employee).add(Employee(id="m")).email == "set@x"
        assert mapper.repository(Employee).get("m").email == "set@x"
    finally:
        for receiver in list(signals.documents_adding.receivers_for(Employee)):
            signals.documents_adding.disconnect(receiver, sender=Employee)


def test_publishing_can_be_cancelled_or_switched_off(mapper: em.Mapper, events: list[Any]) -> None:
    repo = mapper.repository(Employee)
    repo.add(Employee(id="q"), notifications=False)
    assert "entity_changed" not in names(events)

    def cancel(sender: Any, message: em.EntityChanged, **kwargs: Any) -> None:
        message.cancel = True

    with signals.before_publish_entity_changed.connected_to(cancel, sender=Employee):
        repo.add(Employee(id="r"))
    assert "entity_changed" not in names(events)


def test_only_confirmed_documents_fire_ed_signals(mapper: em.Mapper, events: list[Any]) -> None:
    repo = mapper.repository(Employee)
    repo.add(Employee(id="d1"))
    events.clear()
    with pytest.raises(em.DuplicateDocumentError):
        repo.add([Employee(id="d2"), Employee(id="d1")])
    added = [kw for n, kw in events if n == "documents_added"]
    assert [d.value.id for d in added[0]["documents"]] == ["d2"]
    assert [kw["message"].id for n, kw in events if n == "entity_changed"] == ["d2"]


def test_session_signals(mapper: em.Mapper) -> None:
    seen: list[str] = []
    with ExitStack() as stack:
        for name in ("before_flush", "after_flush", "after_commit", "after_rollback"):
            receiver = lambda s, _n=name, **kw: seen.append(_n)  # noqa: E731
            stack.enter_context(getattr(signals, name).connected_to(receiver))
        with mapper.session() as s:
            s.add(Employee(id="z"))
        with pytest.raises(KeyError), mapper.session():
            raise KeyError("x")
    assert seen == ["before_flush", "after_flush", "after_commit", "after_rollback"]


def test_patch_notification_ids(mapper: em.Mapper, events: list[Any]) -> None:
    repo = mapper.repository(Employee)
    n1, _ = repo.add([Employee(id="n1", age=1), Employee(id="n2", age=2)], consistency="wait")
    stored_updated = n1.to_source()["updated_utc"]

    def published() -> list[str | None]:
        ids = [kw["message"].id for n, kw in events if n == "entity_changed"]
        events.clear()
        return ids

    published()
    # a caller-supplied updated_utc is kept, so this changes nothing: a noop, no message
    repo.patch("n1", em.PartialPatch({"age": 1, "updated_utc": stored_updated}))
    assert published() == []
    repo.patch(
        ["n1", "n2"],
        em.ScriptPatch(
            "if (ctx._source.age == 1) { ctx._source.age = 5 } else { ctx.op = 'none' }"
        ),
        consistency="immediate",
    )
    assert published() == ["n1"]  # Script/Partial by ids: only modified ids
    repo.patch(["n1", "n2"], em.ActionPatch(lambda e: e.age == 5 or False))
    assert sorted(published()) == ["n1", "n2"]  # Json/Action by ids: every id, noops too
    repo.patch_all("age:>0", em.ScriptPatch("ctx._source.age += 1"), consistency="immediate")
    assert published() == [None]  # ScriptPatch by query (update-by-query): one message, no id
    repo.patch_all("age:>0", em.PartialPatch({"email": "x@y"}), consistency="immediate")
    assert sorted(published()) == ["n1", "n2"]  # PartialPatch by query: per-document writes
    repo.patch_all("age:>0", em.ScriptPatch("ctx.op = 'none'"), consistency="immediate")
    assert published() == []  # a no-op script by query: nothing changed, nothing published
    repo.patch(["n1", "n2"], em.ActionPatch(lambda e: False))
    assert published() == []  # an ActionPatch returning False everywhere: no message


def test_removing_by_id_shows_receivers_the_document(mapper: em.Mapper) -> None:
    repo = mapper.repository(Employee)
    repo.add(Employee(id="v", name="Visible"))
    seen: list[str] = []

    def look(sender: Any, documents: list[em.ModifiedDocument], **kwargs: Any) -> None:
        seen.extend(d.value.name for d in documents)

    with signals.documents_removing.connected_to(look, sender=Employee):
        repo.remove(["v", "missing"])
    assert seen == ["Visible"]
    assert not signals.has_receivers(signals.documents_removing, Employee)
