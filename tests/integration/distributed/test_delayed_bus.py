"""Delayed and batched notifications on the real Redis, two mappers standing for two
processes (one process: the messages of A reach this process's receivers once from A's
publish, ``origin="local"``, and once from B's listener, ``origin="remote"``)."""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper import signals
from esmapper.distributed import RedisMessageBus
from tests.integration.conftest import ManualScheduler

from .conftest import wait_leased


class Delayed(em.Document):
    class Index:
        name = "delayed_notes"
        notification_delay = dt.timedelta(seconds=1)

    n: int = 0


class Grouped(em.Document):
    class Index:
        name = "grouped_notes"
        batch_notifications = True

    n: int = 0


def wait_for(predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    value = predicate()
    while not value and time.monotonic() < deadline:
        time.sleep(0.02)
        value = predicate()
    return value


Pair = tuple[em.Mapper, em.Mapper, ManualScheduler]


@pytest.fixture
def pair(es_url: str, redis_url: str, index_prefix: str) -> Iterator[Pair]:
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    scheduler = ManualScheduler()
    buses = [
        RedisMessageBus(redis_url, namespace=namespace, scheduler=scheduler),
        RedisMessageBus(redis_url, namespace=namespace),
    ]
    mappers = [
        em.Mapper(es_url, models=[Delayed, Grouped], index_prefix=index_prefix, bus=bus)
        for bus in buses
    ]
    mappers[0].configure_indexes()
    for bus in buses:
        assert wait_leased(bus.link)
    yield mappers[0], mappers[1], scheduler
    for mapper in mappers:
        mapper.close()
    for bus in buses:
        bus.close()


Got = list[tuple[str, str | None, tuple[str, ...], em.ChangeType]]


@pytest.fixture
def got() -> Iterator[Got]:
    seen: Got = []

    def receiver(sender: Any, message: em.EntityChanged, **_: object) -> None:
        seen.append((message.origin, message.id, message.ids, message.change_type))

    with signals.entity_changed.connected_to(receiver):
        yield seen


def test_a_delayed_message_reaches_no_process_before_its_time(pair: Pair, got: Got) -> None:
    a, _b, scheduler = pair
    a.repository(Delayed).add(Delayed(id="d1"))
    assert got == [] and [s for s, _ in scheduler.waiting] == [1.0]
    scheduler.run_all()
    assert got[0] == ("local", "d1", (), em.ChangeType.ADDED)
    assert wait_for(lambda: len(got) >= 2)
    assert got == [
        ("local", "d1", (), em.ChangeType.ADDED),
        ("remote", "d1", (), em.ChangeType.ADDED),
    ]


def test_a_batched_message_carries_its_ids_to_the_other_process(pair: Pair, got: Got) -> None:
    a, _b, _scheduler = pair
    a.repository(Grouped).add([Grouped(id="g1"), Grouped(id="g2")])
    assert wait_for(lambda: len(got) >= 2)
    assert sorted(got) == [
        ("local", None, ("g1", "g2"), em.ChangeType.ADDED),
        ("remote", None, ("g1", "g2"), em.ChangeType.ADDED),
    ]


def test_a_delayed_message_that_cannot_be_sent_is_refused_at_once(redis_url: str) -> None:
    scheduler = ManualScheduler()
    bus = RedisMessageBus(redis_url, namespace=f"t-{uuid.uuid4().hex[:8]}", scheduler=scheduler)
    try:
        message = em.EntityChanged(
            type="Delayed", id="x", change_type=em.ChangeType.SAVED, data={"o": object()}
        )
        with pytest.raises(TypeError):
            bus.publish(Delayed, message, delay=1.0)
        assert scheduler.waiting == []
    finally:
        bus.close()


def test_closing_the_bus_sends_what_it_holds_while_its_link_is_open(pair: Pair, got: Got) -> None:
    """Before, the message stayed with the scheduler and went out after the close, on a
    closed link: the other process never got it."""
    a, _b, scheduler = pair
    a.repository(Delayed).add(Delayed(id="d2"))
    assert got == []
    a.services.bus.close()  # type: ignore[attr-defined]
    assert got[0] == ("local", "d2", (), em.ChangeType.ADDED)
    assert wait_for(lambda: len(got) >= 2)
    assert got[1] == ("remote", "d2", (), em.ChangeType.ADDED)
    scheduler.run_all()  # the timer firing later delivers nothing more
    assert len(got) == 2
