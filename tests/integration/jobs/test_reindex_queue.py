"""The queue path of reindexing against the local server: ``configure_indexes(
begin_reindexing_outdated=True)`` enqueues (once) and reindexes nothing, no queue raises,
the handler runs the reindex under its lock and a second run finds it done, a worker of
another release refuses an item, time-series models get one item, ``bootstrap``."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.jobs import InMemoryWorkQueue, ReindexWorker, ReindexWorkItem
from esmapper.locks import LockProvider
from tests.integration.conftest import FakeClock, MakeMapper
from tests.integration.indexes.models import DailyLog, DailyLogV2, ItemV1, ItemV2, ItemV2Scripted

SEEDED = 50


def _targets(client: Elasticsearch, alias: str) -> list[str]:
    return sorted(client.options(ignore_status=404).indices.get_alias(name=alias).body)


def _stored(client: Elasticsearch, alias: str) -> dict[str, int]:
    client.indices.refresh(index=alias)
    hits = client.search(index=alias, size=10_000, query={"match_all": {}})["hits"]["hits"]
    return {h["_id"]: h["_source"]["n"] for h in hits}


def _seed(make_mapper: MakeMapper) -> dict[str, int]:
    old = make_mapper(ItemV1, configure=True)
    docs = old.repository(ItemV1).add([ItemV1(name="s", n=i) for i in range(SEEDED)])
    return {str(d.id): d.n for d in docs}


def test_outdated_models_are_enqueued_once_and_not_reindexed(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    expected = _seed(make_mapper)
    queue = InMemoryWorkQueue()
    mapper = make_mapper(ItemV2Scripted, work_queue=queue)
    alias = f"{index_prefix}items"

    (state,) = mapper.configure_indexes(begin_reindexing_outdated=True)

    assert (state.action, state.current_index) == ("outdated", f"{alias}-v1")
    assert _targets(es_client, alias) == [f"{alias}-v1"]  # nothing reindexed inline
    assert queue.counts() == em.jobs.QueueCounts(pending=1, leased=0, failed=0)
    # forced again, and by a plain call: the item pending is not enqueued twice
    mapper.configure_indexes(begin_reindexing_outdated=True, force=True)
    mapper.configure_indexes(begin_reindexing_outdated=True, models=[ItemV2Scripted])
    assert queue.counts().pending == 1
    lease = queue.dequeue()
    assert lease is not None
    assert lease.item == ReindexWorkItem(
        old_index=f"{alias}-v1",
        new_index=f"{alias}-v2",
        alias=alias,
        script="ctx._source.label = 'item-' + ctx._source.n",
        delete_old=True,
        timestamp_field="updated_utc",
    )
    # running: not enqueued again either
    mapper.configure_indexes(begin_reindexing_outdated=True, force=True)
    assert queue.counts() == em.jobs.QueueCounts(pending=0, leased=1, failed=0)

    result = em.handle_reindex_work_item(mapper, lease.item)
    assert queue.complete(lease)

    assert (result.status, result.old_deleted) == ("reindexed", True)
    assert _targets(es_client, alias) == [f"{alias}-v2"]
    assert _stored(es_client, alias) == expected
    labels = {
        h["_source"]["label"] for h in es_client.search(index=alias, size=100)["hits"]["hits"]
    }
    assert labels == {f"item-{n}" for n in expected.values()}
    # a second worker with the same item: the version already advanced, nothing done
    again = em.handle_reindex_work_item(mapper, lease.item)
    assert again.status == "up_to_date" and again.copied == 0
    mapper.configure_indexes(begin_reindexing_outdated=True, force=True)
    assert queue.counts() == em.jobs.QueueCounts(0, 0, 0)


def test_without_a_queue_an_outdated_model_raises_and_the_configuration_is_not_marked(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper)
    mapper = make_mapper(ItemV2)
    alias = f"{index_prefix}items"

    with pytest.raises(em.IndexConfigurationError) as raised:
        mapper.configure_indexes(begin_reindexing_outdated=True)

    message = str(raised.value)
    assert message.startswith("Must specify a work queue (Mapper(work_queue=...)) in order to")
    assert f"outdated {alias} ({alias}-v1 -> {alias}-v2)" in message
    assert _targets(es_client, alias) == [f"{alias}-v1"]
    # not marked done: the next call configures (and reports) again
    (state,) = mapper.configure_indexes()
    assert state.action == "outdated"
    # the default enqueues nothing and needs no queue
    assert [s.action for s in mapper.configure_indexes(force=True)] == ["outdated"]


def test_with_nothing_outdated_no_queue_is_needed(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(ItemV1)
    (state,) = mapper.configure_indexes(begin_reindexing_outdated=True)
    assert state.action == "created"


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"begin_reindexing_outdated": "yes"}, TypeError, "begin_reindexing_outdated must be"),
        ({"lock_ttl": dt.timedelta(0)}, ValueError, "lock_ttl must be more than 0"),
        ({"lock_ttl": 60}, TypeError, "lock_ttl must be a datetime"),
        ({"lock_wait": dt.timedelta(seconds=-1)}, ValueError, "lock_wait must be at least 0"),
    ],
)
def test_bad_configure_options_are_refused_before_anything_is_sent(
    options: dict[str, Any], error: type, text: str, make_mapper: MakeMapper
) -> None:
    mapper = make_mapper(ItemV1, url="http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(error, match=text):
        mapper.configure_indexes(**options)


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"begin_reindexing_outdated": 1}, TypeError, "begin_reindexing_outdated must be"),
        ({"wait": 5}, TypeError, "wait must be a datetime"),
        ({"wait": dt.timedelta(seconds=-1)}, ValueError, "wait must be at least 0"),
    ],
)
def test_bad_bootstrap_options_are_refused_before_anything_is_sent(
    options: dict[str, Any], error: type, text: str, make_mapper: MakeMapper
) -> None:
    mapper = make_mapper(ItemV1, url="http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(error, match=text):
        em.bootstrap(mapper, **options)


def test_the_configure_lock_takes_the_ttl_given(
    make_mapper: MakeMapper, monkeypatch: pytest.MonkeyPatch
) -> None:
    mapper = make_mapper(ItemV1)
    seen: list[Any] = []
    real = LockProvider.acquire

    def acquire(self: LockProvider, name: str, ttl: dt.timedelta, **kw: Any) -> Any:
        seen.append((name, ttl))
        return real(self, name, ttl, **kw)

    monkeypatch.setattr(LockProvider, "acquire", acquire)
    mapper.configure_indexes(lock_ttl=dt.timedelta(minutes=20))
    assert seen == [("configure-indexes", dt.timedelta(minutes=20))]


def test_a_worker_of_another_release_refuses_the_item_before_sending_anything(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    alias = f"{index_prefix}items"
    mapper = make_mapper(ItemV2, url="http://127.0.0.1:9")  # nothing listens there
    base: dict[str, Any] = {"old_index": f"{alias}-v1", "new_index": f"{alias}-v2", "alias": alias}
    base["timestamp_field"] = "updated_utc"
    cases = [  # foreign: for a newer release or another application (released, not failed)
        ({**base, "new_index": f"{alias}-v3"}, "a worker of another release", True),
        ({**base, "new_index": f"{alias}-v1"}, "a worker of another release", False),
        ({**base, "script": "ctx._source.x = 1"}, "reindex script is not the one", False),
        ({**base, "timestamp_field": None}, "timestamp field None", False),
        ({**base, "alias": "nothing", "old_index": "nothing-v1"}, "no model of this", True),
    ]
    for fields, text, foreign in cases:
        with pytest.raises(em.WorkItemError, match=text) as refused:
            em.handle_reindex_work_item(mapper, ReindexWorkItem(**fields))
        assert refused.value.foreign is foreign, fields
    with pytest.raises(TypeError, match="takes a ReindexWorkItem"):
        em.handle_reindex_work_item(mapper, base)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="stall_timeout"):
        em.handle_reindex_work_item(
            mapper, ReindexWorkItem(**base), stall_timeout=dt.timedelta(seconds=-1)
        )


def test_a_worker_runs_items_completes_them_and_abandons_failures(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    expected = _seed(make_mapper)
    queue = InMemoryWorkQueue(max_attempts=2, retry_delay=dt.timedelta(0))
    mapper = make_mapper(ItemV2, work_queue=queue)
    alias = f"{index_prefix}items"
    # an item this release refuses (another script): retried, then failed
    stranger = ReindexWorkItem(
        old_index=f"{alias}-v1", new_index=f"{alias}-v2", alias=alias, script="ctx.op = 'noop'"
    )
    queue.enqueue(stranger)
    # an item of a newer release: left for its workers, never failed by this one
    newer = ReindexWorkItem(old_index=f"{alias}-v1", new_index=f"{alias}-v9", alias=alias)
    queue.enqueue(newer)
    reports: list[em.ReindexProgress] = []
    worker = ReindexWorker(mapper, progress=reports.append)

    first, second = worker.run_once(), worker.run_once()  # no retry delay here
    assert first is not None and first.is_failed and "reindex script is not" in first.message
    assert second is not None and second.is_failed
    assert [i for i, _ in queue.failed()] == [stranger]
    third = worker.run_once()
    assert third is not None and third.skipped and "left for another worker" in third.message
    # this release's own item has the failed one's key: enqueued again, no longer failed
    mapper.configure_indexes(begin_reindexing_outdated=True)
    assert queue.failed() == []
    fourth = worker.run_once()  # the newer release's item again (it was first): left
    assert fourth is not None and fourth.skipped
    done = worker.run_once()
    assert done is not None and done.is_success
    assert isinstance(done.details, em.ReindexResult) and done.details.status == "reindexed"
    assert queue.counts() == em.jobs.QueueCounts(pending=1, leased=0, failed=0)
    assert _targets(es_client, alias) == [f"{alias}-v2"]
    assert _stored(es_client, alias) == expected
    assert reports and reports[-1].percent == 100


def test_a_cancelled_worker_rolls_back_and_puts_the_item_back(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    _seed(make_mapper)
    queue = InMemoryWorkQueue(retry_delay=dt.timedelta(0))
    mapper = make_mapper(ItemV2, work_queue=queue)
    mapper.configure_indexes(begin_reindexing_outdated=True)
    cancel = threading.Event()

    def progress(report: em.ReindexProgress) -> None:
        if report.phase == "copy":
            cancel.set()

    result = ReindexWorker(mapper, progress=progress).run_once(cancel)

    assert result is not None and result.is_cancelled
    alias = f"{index_prefix}items"
    assert _targets(es_client, alias) == [f"{alias}-v1"]
    assert queue.counts() == em.jobs.QueueCounts(pending=1, leased=0, failed=0)


def test_a_worker_waiting_for_the_reindex_lock_is_cancelled_at_once(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """A direct reindex (``esmapper migrate``) holds ``reindex:<alias>``: the worker waits
    for it (up to ``lock_wait``, 30 min by default), and a cancel (a SIGTERM to ``--once``,
    a second one to ``--loop``) must end that wait, not be ignored until the lock comes."""
    _seed(make_mapper)
    queue = InMemoryWorkQueue(retry_delay=dt.timedelta(0))
    mapper = make_mapper(ItemV2, work_queue=queue)
    mapper.configure_indexes(begin_reindexing_outdated=True)
    alias = f"{index_prefix}items"
    locks = LockProvider(mapper.client, index_prefix=index_prefix)
    held = locks.acquire(f"reindex:{alias}", dt.timedelta(minutes=10))
    cancel = threading.Event()
    worker = ReindexWorker(mapper, lock_wait=dt.timedelta(minutes=5))
    results: list[em.JobResult | None] = []
    thread = threading.Thread(target=lambda: results.append(worker.run_once(cancel)))
    try:
        thread.start()
        while queue.counts().leased == 0 and thread.is_alive():
            threading.Event().wait(0.05)
        cancel.set()
        thread.join(timeout=60)
        assert not thread.is_alive(), "the cancel was ignored while waiting for the lock"
    finally:
        held.release()
        thread.join()
    ((result,),) = [results]
    assert result is not None and result.is_cancelled
    assert queue.counts() == em.jobs.QueueCounts(pending=1, leased=0, failed=0)
    assert _targets(es_client, alias) == [f"{alias}-v1"]


def test_an_item_whose_reindex_runs_elsewhere_waits_for_it_without_using_up_attempts(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """``bootstrap(begin_reindexing_outdated=True)`` racing a direct ``esmapper migrate``
    longer than the worker's ``lock_wait``: the item is not failed for a reindex that is
    running; once that ends, the item finds the alias moved (or runs)."""
    _seed(make_mapper)
    queue = InMemoryWorkQueue(max_attempts=1)
    mapper = make_mapper(ItemV2, work_queue=queue)
    em.bootstrap(mapper, begin_reindexing_outdated=True)
    alias = f"{index_prefix}items"
    migrate = LockProvider(mapper.client, index_prefix=index_prefix)
    held = migrate.acquire(f"reindex:{alias}", dt.timedelta(minutes=10))
    worker = ReindexWorker(mapper, lock_wait=dt.timedelta(0))
    try:
        for _ in range(3):
            waited = worker.run_once()
            assert waited is not None and waited.skipped, waited
            assert "running elsewhere" in waited.message
    finally:
        held.release()
    assert queue.counts() == em.jobs.QueueCounts(pending=1, leased=0, failed=0)
    done = worker.run_once()
    assert done is not None and done.is_success and "reindexed" in done.message
    assert _targets(es_client, alias) == [f"{alias}-v2"]


def test_a_time_series_model_gets_one_item_that_moves_every_partition(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    now = dt.datetime(2026, 3, 10, 12, tzinfo=dt.timezone.utc)
    clock = FakeClock(now)
    old = make_mapper(DailyLog, clock=clock, configure=True)
    docs = []
    for day in (2, 1, 0):
        at = now - dt.timedelta(days=day)
        docs += old.repository(DailyLog).add(
            [DailyLog(message=f"m{i}", created_utc=at) for i in range(4)], consistency="immediate"
        )
    queue = InMemoryWorkQueue()
    mapper = make_mapper(DailyLogV2, clock=clock, work_queue=queue)
    alias = f"{index_prefix}logs"

    (state,) = em.bootstrap(mapper, begin_reindexing_outdated=True)

    assert state.action == "outdated"
    lease = queue.dequeue()
    assert lease is not None
    assert (lease.item.old_index, lease.item.new_index) == (f"{alias}-v1-*", f"{alias}-v2-*")
    result = em.handle_reindex_work_item(mapper, lease.item)
    assert result.status == "reindexed" and len(result.partitions) == 3
    names = sorted(es_client.indices.get(index=f"{alias}-v*").body)
    assert names == [f"{alias}-v2-2026.03.0{d}" for d in (8, 9)] + [f"{alias}-v2-2026.03.10"]
    es_client.indices.refresh(index=alias)
    assert es_client.count(index=alias)["count"] == len(docs)


def test_bootstrap_configures_once_and_refuses_what_is_not_a_mapper(
    make_mapper: MakeMapper, caplog: pytest.LogCaptureFixture
) -> None:
    _seed(make_mapper)
    mapper = make_mapper(ItemV2)
    with caplog.at_level("WARNING", logger="esmapper.indexes"):
        (state,) = em.bootstrap(mapper)
    assert state.action == "outdated"
    assert "outdated, served from their old version until reindexed" in caplog.text
    (again,) = em.bootstrap(make_mapper(ItemV2))  # another process of the fleet
    assert again.action == "skipped"
    with pytest.raises(TypeError, match=r"bootstrap takes an esmapper\.Mapper"):
        em.bootstrap("http://127.0.0.1:9200")  # type: ignore[arg-type]
