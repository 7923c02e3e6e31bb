"""Delayed delivery (:class:`esmapper.bus.HeldMessages`): one delivery thread per bus
however many messages wait, each delivered exactly once, nothing held past a close."""

from __future__ import annotations

import threading
from collections.abc import Callable

import esmapper as em
from esmapper import signals
from esmapper.bus import HeldMessages


class Doc(em.Document):
    class Index:
        name = "bus_docs"


def _threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "esmapper-delayed-notifications")


def test_many_delayed_messages_share_one_delivery_thread() -> None:
    held = HeldMessages()
    got: list[int] = []
    before = _threads()
    for n in range(200):
        held.hold(3600, lambda n=n: got.append(n))  # type: ignore[misc]
    assert _threads() - before == 1  # not a timer thread per message
    assert len(held) == 200 and got == []
    held.close()
    assert got == list(range(200))  # delivered at the close, in the order held
    assert len(held) == 0


def test_a_message_held_after_the_close_is_delivered_at_once() -> None:
    held = HeldMessages()
    held.close()
    got: list[str] = []
    held.hold(3600, lambda: got.append("late"))
    assert got == ["late"] and len(held) == 0


def test_a_flushed_message_is_not_delivered_again_by_its_scheduler() -> None:
    due: list[Callable[[], None]] = []
    held = HeldMessages(lambda seconds, deliver: due.append(deliver))
    got: list[str] = []
    held.hold(5, lambda: got.append("a"))
    held.flush()
    for deliver in due:  # the scheduler's timer fires later
        deliver()
    assert got == ["a"]


def test_a_delivery_that_raises_is_logged_and_the_next_still_runs(caplog) -> None:  # type: ignore[no-untyped-def]
    held = HeldMessages()
    got: list[str] = []

    def boom() -> None:
        raise RuntimeError("receiver down")

    held.hold(3600, boom)
    held.hold(3600, lambda: got.append("b"))
    held.flush()
    assert got == ["b"]
    assert "delivering a delayed entity_changed failed" in caplog.text


def test_closing_the_mapper_delivers_what_its_bus_holds_once() -> None:
    due: list[Callable[[], None]] = []
    bus = em.BlinkerMessageBus(scheduler=lambda seconds, deliver: due.append(deliver))
    mapper = em.Mapper("http://127.0.0.1:9", models=[Doc], bus=bus)
    got: list[em.EntityChanged] = []

    def receiver(sender: type, message: em.EntityChanged, **_: object) -> None:
        got.append(message)

    message = em.EntityChanged(type="Doc", id="d1", change_type=em.ChangeType.SAVED)
    with signals.entity_changed.connected_to(receiver, sender=Doc):
        bus.publish(Doc, message, delay=60.0)
        assert got == []
        mapper.close()
        assert got == [message]  # not after the close
        for deliver in due:
            deliver()
    assert got == [message]
