"""Notifications (issue 30, item 7): ``patch_all`` over explicit ids publishes per id,
``Index.notification_delay`` delivers through the bus after the delay,
``Index.batch_notifications`` publishes one message per call and change type, and
``originals=`` gives saves of documents not loaded their stored original."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import ApiError
from elasticsearch.dsl.query import Ids

import esmapper as em
from esmapper import signals
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper, ManualScheduler

from .models import Employee


class Notice(em.Document, em.HasDates, em.SoftDeletes):
    """Delayed notifications."""

    class Index:
        name = "notices"
        notification_delay = dt.timedelta(seconds=2)

    n: int = em.field(em.Integer(), default=0)


class Batched(em.Document, em.SoftDeletes):
    class Index:
        name = "batched"
        batch_notifications = True

    n: int = em.field(em.Integer(), default=0)


Seen = list[em.EntityChanged]


@pytest.fixture
def seen() -> Iterator[Seen]:
    got: Seen = []

    def receiver(sender: type, message: em.EntityChanged, **_: object) -> None:
        got.append(message)

    with signals.entity_changed.connected_to(receiver):
        yield got


def _ids(seen: Seen) -> list[tuple[str | None, em.ChangeType]]:
    return [(m.id, m.change_type) for m in seen]


SAVED, ADDED, REMOVED = em.ChangeType.SAVED, em.ChangeType.ADDED, em.ChangeType.REMOVED
SCRIPT = em.ScriptPatch("ctx._source.age += 1")


# -- patch_all over explicit ids ---------------------------------------------------


@pytest.fixture
def staff(employees: em.Repository[Employee]) -> list[Employee]:
    return employees.add([Employee(id=f"e{i}", age=i) for i in range(3)], consistency="wait")


def test_patch_all_over_explicit_ids_publishes_one_message_per_id(
    employees: em.Repository[Employee], staff: list[Employee], seen: Seen
) -> None:
    assert employees.patch_all(Ids(values=["e0", "e2", "e0"]), SCRIPT) == 2
    assert _ids(seen) == [("e0", SAVED), ("e2", SAVED)]
    assert [d.age for d in employees.get_many(["e0", "e1", "e2"])] == [1, 1, 3]


def test_a_listed_id_that_matched_nothing_is_published_too(
    employees: em.Repository[Employee], staff: list[Employee], seen: Seen
) -> None:
    """The update-by-query's answer does not say which ids matched (the reference
    publishes every listed id as well)."""
    assert employees.patch_all(Ids(values=["e1", "nope"]), SCRIPT) == 1
    assert _ids(seen) == [("e1", SAVED), ("nope", SAVED)]


def test_a_filter_patch_all_publishes_one_message_without_id(
    employees: em.Repository[Employee], staff: list[Employee], seen: Seen
) -> None:
    assert employees.patch_all("age:>0", SCRIPT) == 2
    assert _ids(seen) == [(None, SAVED)]


def test_explicit_ids_that_change_nothing_publish_nothing(
    employees: em.Repository[Employee], staff: list[Employee], seen: Seen
) -> None:
    assert employees.patch_all(Ids(values=["e0"]), em.ScriptPatch("ctx.op = 'none'")) == 0
    assert employees.patch_all(Ids(values=["absent"]), SCRIPT) == 0
    assert seen == []


def test_batch_paths_over_explicit_ids_publish_the_changed_ids(
    employees: em.Repository[Employee], staff: list[Employee], seen: Seen
) -> None:
    patch = em.ActionPatch(lambda d: None if d.age > 0 else False)
    assert employees.patch_all(Ids(values=["e0", "e1", "e2"]), patch) == 2
    assert sorted(_ids(seen)) == [("e1", SAVED), ("e2", SAVED)]


@pytest.mark.parametrize("after_forwarding", [False, True])
def test_an_unknown_update_by_query_outcome_publishes_nothing(
    make_mapper: MakeMapper, proxy: FaultProxy, seen: Seen, after_forwarding: bool
) -> None:
    repo = make_mapper(Employee, url=proxy.url, configure=True).repository(Employee)
    repo.add([Employee(id="e0"), Employee(id="e1")], consistency="wait")
    proxy.drop_connection(path=r"/_update_by_query$", after_forwarding=after_forwarding)
    with pytest.raises(em.OutcomeUnknownError):
        repo.patch_all(Ids(values=["e0", "e1"]), SCRIPT)
    assert [m for m in seen if m.change_type is SAVED] == []
    ages = [d.age for d in repo.get_many(["e0", "e1"])]
    assert ages == ([1, 1] if after_forwarding else [0, 0])


# -- delayed delivery -------------------------------------------------------


@pytest.fixture
def scheduler() -> ManualScheduler:
    return ManualScheduler()


@pytest.fixture
def notices(make_mapper: MakeMapper, scheduler: ManualScheduler) -> em.Repository[Notice]:
    bus = em.BlinkerMessageBus(scheduler=scheduler)
    return make_mapper(Notice, configure=True, bus=bus).repository(Notice)


def test_a_delayed_notification_waits_for_the_bus(
    notices: em.Repository[Notice], scheduler: ManualScheduler, seen: Seen
) -> None:
    notices.add(Notice(id="a"))
    notices.patch("a", em.PartialPatch({"n": 2}))
    assert seen == []  # held by the bus
    assert [seconds for seconds, _ in scheduler.waiting] == [2.0, 2.0]
    scheduler.run_all()
    assert _ids(seen) == [("a", ADDED), ("a", SAVED)]


def test_a_write_whose_answer_was_lost_is_announced_once(
    make_mapper: MakeMapper, proxy: FaultProxy, scheduler: ManualScheduler, seen: Seen
) -> None:
    bus = em.BlinkerMessageBus(scheduler=scheduler)
    repo = make_mapper(Notice, url=proxy.url, configure=True, bus=bus).repository(Notice)
    proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
    repo.add(Notice(id="lost"))
    proxy.drop_connection(path=r"/_bulk$")
    repo.add(Notice(id="dropped"))
    scheduler.run_all()
    assert _ids(seen) == [("lost", ADDED), ("dropped", ADDED)]


def test_a_failed_write_schedules_nothing(
    notices: em.Repository[Notice], scheduler: ManualScheduler, seen: Seen
) -> None:
    notices.add(Notice(id="a"))
    scheduler.run_all()
    with pytest.raises(em.DuplicateDocumentError):
        notices.add(Notice(id="a"))
    assert scheduler.waiting == []


def test_a_bus_that_cannot_delay_delivers_at_once_and_warns_once(
    make_mapper: MakeMapper, caplog: pytest.LogCaptureFixture
) -> None:
    got: list[tuple[em.EntityChanged, dict[str, Any]]] = []

    class Plain:  # no supports_delay
        def publish(self, model: type, message: em.EntityChanged, **context: Any) -> None:
            got.append((message, context))

        def subscribe(self, model: type, handler: Any) -> Any:
            raise NotImplementedError

    repo = make_mapper(Notice, configure=True, bus=Plain()).repository(Notice)
    with caplog.at_level(logging.WARNING, logger="esmapper.repository"):
        repo.add([Notice(id="a")])
        repo.add([Notice(id="b")])
    assert [m.id for m, _ in got] == ["a", "b"]
    assert all("delay" not in context for _, context in got)
    warned = [r for r in caplog.records if "cannot delay" in r.getMessage()]
    assert len(warned) == 1


@pytest.mark.parametrize("value", [-1, "2s", dt.timedelta(days=2), True])
def test_a_bad_notification_delay_is_refused(value: object) -> None:
    with pytest.raises(em.IndexConfigurationError, match="notification_delay"):

        class Bad(em.Document):
            Index = type("Index", (), {"name": "bad", "notification_delay": value})

        assert Bad.__esmapper__ is not None


# -- batch notifications -----------------------------------------------------------


@pytest.fixture
def batched(make_mapper: MakeMapper) -> em.Repository[Batched]:
    return make_mapper(Batched, configure=True).repository(Batched)


def test_batched_notifications_are_one_message_per_call_and_change_type(
    batched: em.Repository[Batched], seen: Seen
) -> None:
    docs = batched.add([Batched(id=f"b{i}") for i in range(3)], consistency="wait")
    assert [(m.id, m.change_type, m.ids) for m in seen] == [(None, ADDED, ("b0", "b1", "b2"))]
    seen.clear()
    for doc in docs:
        doc.is_deleted = doc.id == "b1"
    batched.save(docs)
    assert sorted((m.change_type, m.ids) for m in seen) == [
        (SAVED, ("b0", "b2")),
        (REMOVED, ("b1",)),
    ]
    seen.clear()
    batched.patch(["b0", "b2"], em.PartialPatch({"n": 5}))
    assert [(m.id, m.change_type, m.ids) for m in seen] == [(None, SAVED, ("b0", "b2"))]


def test_a_batched_message_can_be_cancelled_or_enriched(
    batched: em.Repository[Batched], seen: Seen
) -> None:
    def enrich(sender: type, message: em.EntityChanged, **_: object) -> None:
        message.data["count"] = len(message.ids)
        message.cancel = message.change_type is REMOVED

    with signals.before_publish_entity_changed.connected_to(enrich, sender=Batched):
        batched.add([Batched(id="x"), Batched(id="y")])
        batched.remove(["x", "y"])
    assert [(m.change_type, m.ids, m.data) for m in seen] == [(ADDED, ("x", "y"), {"count": 2})]


def test_batch_notifications_must_be_a_bool() -> None:
    with pytest.raises(em.IndexConfigurationError, match="batch_notifications"):

        class Bad(em.Document):
            Index = type("Index", (), {"name": "bad", "batch_notifications": "yes"})

        assert Bad.__esmapper__ is not None


# -- originals of documents not loaded ---------------------------------------------


def test_a_soft_delete_of_a_document_not_loaded_needs_originals(
    employees: em.Repository[Employee], staff: list[Employee], seen: Seen
) -> None:
    employees.save(Employee(id="e0", age=0, is_deleted=True))
    employees.save(Employee(id="e1", age=1, is_deleted=True), originals=True)
    assert _ids(seen) == [("e0", SAVED), ("e1", REMOVED)]


def test_receivers_get_the_stored_original_with_originals(
    employees: em.Repository[Employee], staff: list[Employee]
) -> None:
    originals: list[Any] = []

    def saving(sender: type, documents: list[em.ModifiedDocument], **_: object) -> None:
        originals.extend(None if d.original is None else d.original.age for d in documents)

    with signals.documents_saving.connected_to(saving, sender=Employee):
        employees.save([Employee(id="e2", age=20), Employee(id="new", age=1)], originals=True)
        employees.save(Employee(id="e2", age=21))  # not asked: nothing read
    assert originals == [2, None, None]


def test_the_original_read_is_never_written_back(
    employees: em.Repository[Employee], staff: list[Employee], es_client: Any
) -> None:
    alias = employees.spec.alias
    es_client.update(index=alias, id="e0", doc={"unknown_key": 1}, refresh=True)
    employees.save(Employee(id="e0", age=7), originals=True)
    assert "unknown_key" not in es_client.get(index=alias, id="e0")["_source"]


def test_the_model_default_and_a_failed_read(
    make_mapper: MakeMapper, proxy: FaultProxy, seen: Seen
) -> None:
    class Remembered(em.Document, em.SoftDeletes):
        class Index:
            name = "remembered"
            originals = True

    repo = make_mapper(Remembered, url=proxy.url, configure=True).repository(Remembered)
    repo.add(Remembered(id="r"), consistency="wait")
    repo.save(Remembered(id="r", is_deleted=True))
    assert _ids(seen)[-1] == ("r", REMOVED)
    proxy.reply_status(500, path=r"/_mget$")
    with pytest.raises(ApiError):  # the read's error, as a get's: nothing is sent after it
        repo.save(Remembered(id="r", is_deleted=False))
    assert repo.get("r", soft_deletes="all").is_deleted is True  # nothing written
    repo.save(Remembered(id="r", is_deleted=False), originals=False)
    assert _ids(seen)[-1] == ("r", SAVED)


def test_an_original_read_answered_with_an_entry_error_writes_nothing(
    make_mapper: MakeMapper, proxy: FaultProxy, seen: Seen
) -> None:
    """An ``_mget`` entry answered with an error (a shard that failed) does not say the
    document is not stored: the save is refused, as any failed read of the originals."""

    class Guarded(em.Document, em.SoftDeletes):
        class Index:
            name = "guarded"
            originals = True

    repo = make_mapper(Guarded, url=proxy.url, configure=True).repository(Guarded)
    repo.add(Guarded(id="g"), consistency="wait")
    entry = {
        "_index": repo.spec.alias,
        "_id": "g",
        "error": {"type": "no_shard_available_action_exception", "reason": "no shard"},
    }
    proxy.reply_status(200, path=r"/_mget$", body={"docs": [entry]})
    with pytest.raises(em.DocumentError, match="no_shard_available_action_exception"):
        repo.save(Guarded(id="g", is_deleted=True))
    assert repo.get("g") is not None  # nothing written
    assert _ids(seen) == [("g", ADDED)]
