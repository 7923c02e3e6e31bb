"""Reindex workers in processes of their own, on a Redis queue: a worker killed (kill -9)
or stopped (SIGSTOP) while it holds an item in the middle of its reindex loses the item
when its lease runs out; another worker takes it, waits out the dead one's reindex lock
and completes it. No document is lost (the writes made meanwhile included), the alias ends
on the target version, reindexed once, and the queue is empty; the stopped worker, resumed,
is refused and changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.jobs import QueueCounts, RedisWorkQueue
from tests.integration.conftest import MakeMapper
from tests.integration.indexes.models import ItemV1, ItemV2
from tests.integration.pausing import Child, children, linux_only

pytestmark = linux_only

WORKER = "tests.integration.jobs.queue_worker"
SEEDED = 300
LEASE, LOCK_TTL = "1", "3"


@pytest.fixture
def queue(redis_url: str) -> Iterator[RedisWorkQueue]:
    made = RedisWorkQueue(redis_url, name=f"esmapper-test:{uuid.uuid4().hex[:8]}")
    yield made
    made.client.delete(*made.keys.values())
    made.close()


def _targets(client: Elasticsearch, alias: str) -> list[str]:
    return sorted(client.options(ignore_status=404).indices.get_alias(name=alias).body)


def _stored(client: Elasticsearch, alias: str) -> dict[str, int]:
    client.indices.refresh(index=alias)
    hits = client.search(index=alias, size=10_000, query={"match_all": {}})["hits"]["hits"]
    return {h["_id"]: h["_source"]["n"] for h in hits}


@pytest.mark.parametrize("how", ["kill", "stop"])
def test_a_dead_or_stopped_worker_s_item_is_completed_by_another_and_nothing_is_lost(
    how: str,
    tmp_path: Path,
    make_mapper: MakeMapper,
    es_url: str,
    es_client: Elasticsearch,
    redis_url: str,
    queue: RedisWorkQueue,
    index_prefix: str,
) -> None:
    seed = make_mapper(ItemV1, configure=True)
    seeded = seed.repository(ItemV1).add([ItemV1(name="seed", n=i) for i in range(SEEDED)])
    expected = {str(d.id): d.n for d in seeded}
    mapper = make_mapper(ItemV2, work_queue=queue)
    em.bootstrap(mapper, begin_reindexing_outdated=True)
    assert queue.counts() == QueueCounts(pending=1, leased=0, failed=0)
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    args = (es_url, index_prefix, redis_url, queue.name, LEASE, LOCK_TTL)

    with children() as started:
        a = Child(WORKER, tmp_path, "a", *args, "copy")
        started.append(a)
        a.wait_paused()  # in its copy: v2 made and claimed, the item leased to A
        assert queue.counts() == QueueCounts(pending=0, leased=1, failed=0)
        if how == "kill":
            a.proc.kill()
            a.proc.wait()
        else:
            a.stop()
        # writes meanwhile, through the alias (still on v1)
        repo = mapper.repository(ItemV2)
        changed = repo.get_many(list(expected)[:20])
        for doc in changed:
            doc.n += 1000
        repo.save(changed)
        added = repo.add([ItemV2(name="meanwhile", n=5000 + i) for i in range(20)])
        expected.update({str(d.id): d.n for d in [*changed, *added]})

        b = Child(WORKER, tmp_path, "b", *args, "none")
        started.append(b)
        done = b.outcome()
        assert (done["status"], done["reindex"]) == ("success", "reindexed"), done
        if how == "stop":
            a.resume()
            late = a.outcome()
            assert late["status"] == "failed", late  # refused: its lock was taken over

    assert _targets(es_client, alias) == [v2]
    assert not es_client.indices.exists(index=v1)
    assert sorted(es_client.indices.get(index=f"{alias}-v*").body) == [v2]
    assert _stored(es_client, alias) == expected  # 0 lost, 0 stale, 0 resurrected
    assert queue.counts() == QueueCounts(0, 0, 0) and queue.failed() == []
    # the version advanced once: a worker with the same item finds nothing to do
    again = em.handle_reindex_work_item(mapper, em.ReindexWorkItem(
        old_index=v1, new_index=v2, alias=alias, timestamp_field="updated_utc"
    ))  # fmt: skip
    assert again.status == "up_to_date"
