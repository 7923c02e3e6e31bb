"""The Redis work queue against a real Redis: the same contract as the in-process queue
(deduplication, leases that run out on Redis's clock, retries, failed items), two queue
objects (two processes' views) sharing one queue, and a fleet starting at once enqueuing
one item."""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

import esmapper as em
from esmapper.jobs import QueueCounts, RedisWorkQueue, ReindexWorkItem
from tests.integration.conftest import MakeMapper
from tests.integration.indexes.models import ItemV1, ItemV2

SHORT = dt.timedelta(milliseconds=200)


def item(n: int = 2) -> ReindexWorkItem:
    return ReindexWorkItem(old_index="items-v1", new_index=f"items-v{n}", alias="items")


@pytest.fixture
def queue_name() -> str:
    return f"esmapper-test:{uuid.uuid4().hex[:8]}"


@pytest.fixture
def queues(redis_url: str, queue_name: str) -> Iterator[list[RedisWorkQueue]]:
    """Two queue objects on one Redis queue, as two processes have."""
    made = [
        RedisWorkQueue(redis_url, name=queue_name, max_attempts=2, retry_delay=SHORT)
        for _ in range(2)
    ]
    yield made
    client = made[0].client
    client.delete(*made[0].keys.values())
    for queue in made:
        queue.close()


def test_items_are_deduplicated_leased_completed_and_seen_by_every_process(
    queues: list[RedisWorkQueue],
) -> None:
    a, b = queues
    assert a.enqueue(item())
    assert not b.enqueue(item())  # pending: the same key
    assert b.enqueue(item(3))
    lease = b.dequeue(dt.timedelta(minutes=1))
    assert lease is not None and lease.item == item() and lease.attempt == 1
    assert not a.enqueue(item())  # running
    assert a.counts() == QueueCounts(pending=1, leased=1, failed=0)
    other = a.dequeue(dt.timedelta(minutes=1))
    assert other is not None and other.item == item(3)
    assert a.dequeue() is None
    assert not a.complete(em.jobs.Lease(lease.item, "not-the-token", 1))
    assert b.complete(lease) and a.complete(other)
    assert not b.complete(lease)  # sent again (a lost answer): already gone
    assert a.counts() == QueueCounts(0, 0, 0)
    assert a.enqueue(item())  # done: a new one may come


def _dequeue_within(queue: RedisWorkQueue, seconds: float = 30.0) -> em.jobs.Lease:
    deadline = time.monotonic() + seconds
    while True:
        lease = queue.dequeue(dt.timedelta(minutes=1))
        if lease is not None:
            return lease
        assert time.monotonic() < deadline, "the item never came back"
        time.sleep(0.05)


def test_a_lease_that_runs_out_goes_to_another_worker_and_the_first_changes_nothing(
    queues: list[RedisWorkQueue],
) -> None:
    a, b = queues
    a.enqueue(item())
    first = a.dequeue(SHORT)
    assert first is not None
    assert a.renew(first, dt.timedelta(minutes=1))
    assert b.dequeue() is None  # renewed for a minute: nobody else gets it
    assert a.renew(first, SHORT)
    second = _dequeue_within(b)
    assert second.item == item() and second.attempt == 2
    assert not a.renew(first) and not a.complete(first) and not a.abandon(first, "late")
    assert b.complete(second)
    assert a.counts() == QueueCounts(0, 0, 0) and a.failed() == []


def test_abandoned_items_are_retried_after_the_delay_then_failed(
    queues: list[RedisWorkQueue],
) -> None:
    a, b = queues
    a.enqueue(item())
    lease = a.dequeue()
    assert lease is not None and a.abandon(lease, "boom 1")
    assert a.counts() == QueueCounts(pending=1, leased=0, failed=0)
    again = _dequeue_within(b)
    assert again.attempt == 2
    assert b.abandon(again, "boom 2")
    assert a.failed() == [(item(), "boom 2")]
    assert a.counts() == QueueCounts(0, 0, 1)
    assert a.enqueue(item()) and a.failed() == []


def test_a_lease_running_out_on_the_last_attempt_fails_the_item(
    queues: list[RedisWorkQueue],
) -> None:
    a, b = queues
    a.enqueue(item())
    assert a.dequeue(SHORT) is not None
    assert _dequeue_within(b).attempt == 2  # ran out once: retried
    # ... and lapses again (the second worker died too)
    b.client.zadd(b.keys["leases"], {item().key: 0})
    assert a.dequeue() is None
    ((failed, why),) = a.failed()
    assert failed == item() and "lease ran out 2 times" in why


def test_a_released_item_goes_to_the_back_with_its_attempt_not_counted(
    queues: list[RedisWorkQueue],
) -> None:
    a, b = queues  # max_attempts=2
    a.enqueue(item())
    a.enqueue(item(3))
    for _ in range(3):  # a worker that cannot run it, again and again
        lease = a.dequeue()
        assert lease is not None and lease.item == item() and lease.attempt == 1
        assert a.release(lease)
        other = b.dequeue()  # the item behind it goes first
        assert other is not None and other.item == item(3) and other.attempt == 1
        assert b.release(other)
    assert a.failed() == [] and a.counts() == QueueCounts(pending=2, leased=0, failed=0)
    lease = a.dequeue(SHORT)
    assert lease is not None and lease.item == item() and lease.attempt == 1
    other = b.dequeue()
    assert other is not None and b.complete(other)
    taken = _dequeue_within(b)  # its lease ran out: another worker has it
    assert taken.item == item() and taken.attempt == 2
    assert not a.release(lease)  # no longer a's: changes nothing
    assert b.complete(taken)


def test_an_item_this_release_cannot_read_is_left_for_a_release_that_can(
    queues: list[RedisWorkQueue],
) -> None:
    a, _b = queues  # max_attempts=2
    newer = {**item().to_dict(), "slices": 4}  # a field a newer release added
    a.client.hset(a.keys["items"], item().key, json.dumps(newer))
    a.client.rpush(a.keys["pending"], item().key)
    a.enqueue(item(3))
    for _ in range(3):
        lease = a.dequeue()
        assert lease is not None and lease.item == item(3)
        assert a.release(lease)
    a.client.hdel(a.keys["items"], item(3).key)  # only the unreadable one is left
    for _ in range(3):
        assert a.dequeue() is None
    assert a.failed() == [] and a.counts() == QueueCounts(pending=1, leased=0, failed=0)
    assert a.client.hget(a.keys["attempts"], item().key) in (None, b"0")


def test_a_redis_that_lost_its_data_leaves_the_holder_changing_nothing(
    queues: list[RedisWorkQueue],
) -> None:
    """Redis restarted without persistence while a worker held an item: the worker's
    calls answer ``False`` (nothing to resurrect), and the next configure enqueues anew."""
    a, _b = queues
    a.enqueue(item())
    lease = a.dequeue()
    assert lease is not None
    a.client.delete(*a.keys.values())  # the restart
    a.client.script_flush()  # its scripts are gone too: redis-py loads them again
    assert not a.renew(lease) and not a.complete(lease)
    assert not a.abandon(lease, "late") and not a.release(lease)
    assert a.counts() == QueueCounts(0, 0, 0) and a.failed() == []
    assert a.enqueue(item())
    again = a.dequeue()
    assert again is not None and again.attempt == 1


def test_a_fleet_starting_at_once_enqueues_one_item(
    make_mapper: MakeMapper, redis_url: str, queue_name: str, index_prefix: str
) -> None:
    old = make_mapper(ItemV1, configure=True)
    old.repository(ItemV1).add([ItemV1(n=i) for i in range(10)])
    processes = 6
    mappers = [
        make_mapper(ItemV2, work_queue=RedisWorkQueue(redis_url, name=queue_name))
        for _ in range(processes)
    ]
    start = threading.Barrier(processes)
    errors: list[BaseException] = []

    def boot(mapper: em.Mapper) -> None:
        start.wait()
        try:
            em.bootstrap(mapper, begin_reindexing_outdated=True)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=boot, args=(m,)) for m in mappers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    queue = mappers[0].work_queue
    assert isinstance(queue, RedisWorkQueue)
    assert queue.counts() == QueueCounts(pending=1, leased=0, failed=0)
    lease = queue.dequeue()
    assert lease is not None and lease.item.new_index == f"{index_prefix}items-v2"
    assert queue.complete(lease)
    for mapper in mappers:
        assert isinstance(mapper.work_queue, RedisWorkQueue)
        mapper.work_queue.close()


def test_two_applications_sharing_one_queue_run_their_own_items_and_fail_none(
    es_url: str, redis_url: str, queue_name: str, index_prefix: str
) -> None:
    """Two index prefixes (two applications) on one Redis queue: the keys differ (the alias
    carries the prefix) and each worker leaves the other's item for it."""
    apps = []
    for prefix in (f"{index_prefix}a-", f"{index_prefix}b-"):
        with em.Mapper(es_url, models=[ItemV1], index_prefix=prefix) as old:
            old.configure_indexes()
            old.repository(ItemV1).add([ItemV1(n=i) for i in range(5)], consistency="wait")
        own = RedisWorkQueue(redis_url, name=queue_name, retry_delay=dt.timedelta(0))
        apps.append(em.Mapper(es_url, models=[ItemV2], index_prefix=prefix, work_queue=own))
    try:
        for app in apps:
            em.bootstrap(app, begin_reindexing_outdated=True)
        queue = apps[0].work_queue
        assert isinstance(queue, RedisWorkQueue)
        assert queue.counts() == QueueCounts(pending=2, leased=0, failed=0)
        a, b = (em.ReindexWorker(app) for app in apps)
        first = a.run_once()  # its own item was first
        assert first is not None and first.is_success and not first.skipped
        left = a.run_once()  # b's: left for b's workers, however often
        assert left is not None and left.skipped
        assert a.run_once() is not None and queue.counts().failed == 0
        done = b.run_once()
        assert done is not None and done.is_success and not done.skipped
        assert b.run_once() is None and queue.failed() == []
        for app in apps:
            alias = f"{app.index_prefix}items"
            assert list(app.client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]
            assert app.repository(ItemV2).count() == 5
    finally:
        for app in apps:
            assert isinstance(app.work_queue, RedisWorkQueue)
            app.work_queue.close()
            app.close()
