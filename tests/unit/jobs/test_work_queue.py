"""The reindex work item and the in-process work queue: checks before anything is sent,
deduplication on the item's key, leases that run out, retries and failed items."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

import esmapper as em
from esmapper.jobs import InMemoryWorkQueue, ReindexWorkItem, WorkQueue


def item(**changes: Any) -> ReindexWorkItem:
    fields: dict[str, Any] = {
        "old_index": "items-v1",
        "new_index": "items-v2",
        "alias": "items",
        "script": "ctx._source.a = 1",
        "timestamp_field": "updated_utc",
    }
    fields.update(changes)
    return ReindexWorkItem(**fields)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("changes", "error", "text"),
    [
        ({"batch_size": 0}, ValueError, "batch_size must be more than 0"),
        ({"batch_size": -5}, ValueError, "batch_size must be more than 0"),
        ({"batch_size": 2.5}, TypeError, "batch_size must be an int"),
        ({"batch_size": True}, TypeError, "batch_size must be an int"),
        ({"requests_per_second": 0}, ValueError, "requests_per_second must be a finite"),
        ({"requests_per_second": -1.0}, ValueError, "requests_per_second must be a finite"),
        ({"requests_per_second": math.nan}, ValueError, "requests_per_second must be a finite"),
        ({"requests_per_second": math.inf}, ValueError, "requests_per_second must be a finite"),
        ({"requests_per_second": "10"}, TypeError, "requests_per_second must be a number"),
        ({"alias": ""}, TypeError, "alias must be a non-empty str"),
        ({"old_index": None}, TypeError, "old_index must be a non-empty str"),
        ({"delete_old": "yes"}, TypeError, "delete_old must be True or False"),
        ({"script": 3}, TypeError, "script must be a str or None"),
    ],
)
def test_a_bad_item_is_refused_when_made(changes: dict[str, Any], error: type, text: str) -> None:
    with pytest.raises(error, match=text):
        item(**changes)


def test_an_item_round_trips_through_its_dict_and_is_checked_when_read() -> None:
    made = item(batch_size=200, requests_per_second=50.5, delete_old=False)
    assert ReindexWorkItem.from_dict(made.to_dict()) == made
    assert made.key == "reindex:items:items-v2"
    with pytest.raises(ValueError, match="unknown ReindexWorkItem fields: start"):
        ReindexWorkItem.from_dict({**made.to_dict(), "start": "2026-01-01"})
    with pytest.raises(ValueError, match="fields missing: alias"):
        ReindexWorkItem.from_dict({"old_index": "a-v1", "new_index": "a-v2"})
    with pytest.raises(ValueError, match="batch_size must be more than 0"):
        ReindexWorkItem.from_dict({**made.to_dict(), "batch_size": -1})
    with pytest.raises(AttributeError):
        made.alias = "other"  # type: ignore[misc]


def test_the_queues_are_work_queues() -> None:
    assert isinstance(InMemoryWorkQueue(), WorkQueue)
    assert not isinstance(object(), WorkQueue)
    with pytest.raises(TypeError, match="work_queue must be a WorkQueue"):
        em.Mapper("http://127.0.0.1:1", work_queue=object())  # type: ignore[arg-type]


def test_an_item_pending_or_leased_is_not_enqueued_twice() -> None:
    queue = InMemoryWorkQueue()
    assert queue.enqueue(item())
    assert not queue.enqueue(item(batch_size=10))  # same alias and target: same key
    assert queue.enqueue(item(new_index="items-v3"))  # another target
    lease = queue.dequeue()
    assert lease is not None and lease.item == item() and lease.attempt == 1
    assert not queue.enqueue(item())  # running
    assert queue.complete(lease)
    assert queue.enqueue(item())  # done: a new one may come
    assert queue.counts() == em.jobs.QueueCounts(pending=2, leased=0, failed=0)


def test_a_lease_that_runs_out_goes_to_another_worker_and_the_first_changes_nothing() -> None:
    clock = Clock()
    queue = InMemoryWorkQueue(clock=clock, max_attempts=3)
    queue.enqueue(item())
    first = queue.dequeue(dt.timedelta(seconds=10))
    assert first is not None
    clock.now += 5
    assert queue.dequeue() is None  # still leased
    assert queue.renew(first, dt.timedelta(seconds=10))
    clock.now += 9
    assert queue.dequeue() is None  # renewed
    clock.now += 2
    second = queue.dequeue(dt.timedelta(seconds=10))
    assert second is not None and second.item == item() and second.attempt == 2
    assert not queue.renew(first) and not queue.complete(first) and not queue.abandon(first)
    assert queue.complete(second)
    assert queue.counts() == em.jobs.QueueCounts(0, 0, 0)


def test_an_abandoned_item_is_retried_after_the_delay_then_failed_after_its_last_attempt() -> None:
    clock = Clock()
    queue = InMemoryWorkQueue(clock=clock, max_attempts=2, retry_delay=dt.timedelta(seconds=30))
    queue.enqueue(item())
    lease = queue.dequeue()
    assert lease is not None and queue.abandon(lease, "boom 1")
    assert queue.dequeue() is None  # waits out its retry delay
    assert queue.counts() == em.jobs.QueueCounts(pending=1, leased=0, failed=0)
    clock.now += 31
    lease = queue.dequeue()
    assert lease is not None and lease.attempt == 2
    assert queue.abandon(lease, "boom 2")
    assert queue.failed() == [(item(), "boom 2")]
    clock.now += 60
    assert queue.dequeue() is None
    assert queue.enqueue(item())  # enqueued again: pending, no longer failed
    assert queue.failed() == []


def test_a_lease_that_ran_out_max_attempts_times_fails_the_item() -> None:
    clock = Clock()
    queue = InMemoryWorkQueue(clock=clock, max_attempts=1)
    queue.enqueue(item())
    assert queue.dequeue(dt.timedelta(seconds=1)) is not None
    clock.now += 2
    assert queue.dequeue() is None
    ((failed, why),) = queue.failed()
    assert failed == item() and "lease ran out 1 times" in why


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"max_attempts": 0}, ValueError),
        ({"max_attempts": 1.5}, TypeError),
        ({"retry_delay": dt.timedelta(seconds=-1)}, ValueError),
        ({"retry_delay": 5}, TypeError),
    ],
)
def test_bad_queue_options_are_refused(options: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        InMemoryWorkQueue(**options)
    with pytest.raises(error):
        em.RedisWorkQueue("redis://127.0.0.1:1/0", **options)


def test_bad_leases_and_urls_are_refused() -> None:
    queue = InMemoryWorkQueue()
    with pytest.raises(ValueError, match="lease must be more than 0"):
        queue.dequeue(dt.timedelta(0))
    with pytest.raises(TypeError, match=r"lease must be a datetime\.timedelta"):
        queue.dequeue(30)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="enqueue takes a ReindexWorkItem"):
        queue.enqueue({"alias": "items"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a Redis URL"):
        em.RedisWorkQueue("http://127.0.0.1:6379")


def test_a_released_item_goes_to_the_back_with_its_attempt_not_counted() -> None:
    clock = Clock()
    queue = InMemoryWorkQueue(clock=clock, max_attempts=1)
    queue.enqueue(item())
    queue.enqueue(item(new_index="items-v3"))
    for _ in range(3):  # a worker that cannot run it, again and again
        lease = queue.dequeue()
        assert lease is not None and lease.item == item() and lease.attempt == 1
        assert queue.release(lease)
        other = queue.dequeue()  # the item behind it goes first
        assert other is not None and other.item.new_index == "items-v3"
        assert queue.release(other)
    assert queue.failed() == []
    lease = queue.dequeue(dt.timedelta(seconds=10))
    assert lease is not None and lease.attempt == 1
    clock.now += 11  # the lease runs out: another worker takes it over
    taken = queue.dequeue()
    assert taken is not None and taken.item == item(new_index="items-v3")
    assert not queue.release(lease)  # no longer this worker's: changes nothing
    assert queue.counts() == em.jobs.QueueCounts(pending=0, leased=1, failed=1)


def test_items_whose_leases_ran_out_come_back_oldest_first_as_on_redis() -> None:
    clock = Clock()
    queue = InMemoryWorkQueue(clock=clock)
    for n in (2, 3, 4):
        queue.enqueue(item(new_index=f"items-v{n}"))
    first = queue.dequeue(dt.timedelta(seconds=10))
    second = queue.dequeue(dt.timedelta(seconds=20))
    assert first is not None and second is not None
    clock.now += 30  # both ran out: they go before the item never taken, first one first
    order = [queue.dequeue() for _ in range(3)]
    assert [lease.item.new_index for lease in order if lease] == [
        "items-v2",
        "items-v3",
        "items-v4",
    ]
