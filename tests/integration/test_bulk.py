"""BulkWriter against the test server, with FaultProxy for the transient failures."""

from __future__ import annotations

from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.bulk import BulkAction, BulkRequestError, BulkWriter
from esmapper.testing.faults import FaultProxy


@pytest.fixture
def index(index_prefix: str) -> str:
    return f"{index_prefix}bulk"


def _writer(client: Elasticsearch, **kwargs: Any) -> tuple[BulkWriter, list[float]]:
    sleeps: list[float] = []
    return BulkWriter(client, sleep=sleeps.append, **kwargs), sleeps


def _docs(index: str, n: int, start: int = 0, **extra: Any) -> list[BulkAction]:
    return [
        BulkAction("index", index, f"d{i}", {"n": i, **extra}, ref=i)
        for i in range(start, start + n)
    ]


def _stored_ids(client: Elasticsearch, index: str) -> set[str]:
    client.indices.refresh(index=index)
    resp = client.search(index=index, size=1000, source=False)
    return {hit["_id"] for hit in resp["hits"]["hits"]}


def test_round_trip_with_versions(es_client: Elasticsearch, index: str) -> None:
    writer, _ = _writer(es_client)
    created, auto, _other = writer.write(
        [
            BulkAction("create", index, "a", {"name": "Ann", "age": 30}),
            BulkAction("index", index, None, {"name": "Bob", "age": 40}),
            BulkAction("index", index, "c", {"name": "Cy", "age": 50}),
        ],
        refresh="wait_for",
    )
    assert (created.ok, created.status, created.result, created.id) == (True, 201, "created", "a")
    assert auto.ok and auto.id and auto.id != "None"
    assert created.seq_no is not None and created.primary_term is not None
    got = es_client.get(index=index, id="a")
    assert created.version == f"{got['_primary_term']}:{got['_seq_no']}"
    assert es_client.get(index=index, id=auto.id)["_source"]["name"] == "Bob"

    updated, scripted, deleted, missing = writer.write(
        [
            BulkAction(
                "update",
                index,
                "a",
                {"doc": {"age": 31}},
                if_seq_no=created.seq_no,
                if_primary_term=created.primary_term,
            ),
            BulkAction(
                "update",
                index,
                "c",
                {"script": {"source": "ctx._source.age += params.n", "params": {"n": 5}}},
                retry_on_conflict=2,
            ),
            BulkAction("delete", index, auto.id),
            BulkAction("delete", index, "nope"),
        ],
        refresh=True,
    )
    assert (updated.ok, updated.result) == (True, "updated")
    assert updated.seq_no is not None and created.seq_no is not None
    assert updated.seq_no > created.seq_no
    assert scripted.ok
    assert (deleted.ok, deleted.result) == (True, "deleted")
    assert (missing.ok, missing.status, missing.result) == (False, 404, "not_found")
    assert missing.to_failure().error_type == "not_found"
    assert es_client.get(index=index, id="a")["_source"]["age"] == 31
    assert es_client.get(index=index, id="c")["_source"]["age"] == 55
    assert _stored_ids(es_client, index) == {"a", "c"}


def test_filtered_answers_keep_noop_results_and_the_concrete_index(
    es_client: Elasticsearch, index: str
) -> None:
    # the writer asks for a filter_path: what outcomes read must survive it
    writer, _ = _writer(es_client)
    writer.write([BulkAction("create", index, "n", {"v": 1})], refresh=True)
    es_client.indices.put_alias(index=index, name=f"{index}-alias")
    same, bad = writer.write(
        [
            BulkAction("update", f"{index}-alias", "n", {"doc": {"v": 1}}),
            BulkAction("update", index, "absent", {"doc": {"v": 1}}),
        ]
    )
    assert (same.ok, same.status, same.result, same.index) == (True, 200, "noop", index)
    assert same.seq_no is not None and same.primary_term is not None
    assert (bad.ok, bad.status, bad.error_type) == (False, 404, "document_missing_exception")
    assert bad.reason and "absent" in bad.reason


def test_duplicate_create_fails_alone(es_client: Elasticsearch, index: str) -> None:
    writer, sleeps = _writer(es_client)
    writer.write([BulkAction("create", index, "dup", {"v": 1})])
    outcomes = writer.write(
        [
            BulkAction("create", index, "x1", {"v": 1}),
            BulkAction("create", index, "dup", {"v": 2}, ref="the-dup"),
            BulkAction("create", index, "x2", {"v": 1}),
        ]
    )
    assert [o.status for o in outcomes] == [201, 409, 201]
    failure = outcomes[1].to_failure()
    assert failure.is_conflict
    assert failure.error_type == "version_conflict_engine_exception"
    assert failure.document == "the-dup"
    assert sleeps == []
    assert es_client.get(index=index, id="dup")["_source"] == {"v": 1}


def test_stale_seq_no_gives_409_without_retry(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    (first,) = BulkWriter(es_client).write([BulkAction("index", index, "v", {"n": 1})])
    BulkWriter(es_client).write([BulkAction("index", index, "v", {"n": 2})])
    writer, sleeps = _writer(proxy_client)
    (stale,) = writer.write(
        [
            BulkAction(
                "index",
                index,
                "v",
                {"n": 3},
                if_seq_no=first.seq_no,
                if_primary_term=first.primary_term,
            )
        ]
    )
    assert (stale.ok, stale.status, stale.error_type) == (
        False,
        409,
        "version_conflict_engine_exception",
    )
    assert sleeps == []
    assert proxy.count(r"/_bulk$") == 1
    assert es_client.get(index=index, id="v")["_source"] == {"n": 2}


def test_item_429_storm_is_retried_until_it_passes(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    proxy.fail_bulk_items(5, status=429, times=3)  # the first request and two retries
    writer, sleeps = _writer(proxy_client)
    outcomes = writer.write(_docs(index, 20))
    assert all(o.ok for o in outcomes)
    assert sleeps == [0.5, 1.0, 2.0]
    assert [r.bulk_items for r in proxy.requests] == [20, 5, 5, 5]
    assert writer.last_stats is not None
    assert writer.last_stats.retried_items == 15
    assert _stored_ids(es_client, index) == {f"d{i}" for i in range(20)}


def test_item_429_storm_longer_than_max_retries_leaves_those_items_failed(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    proxy.fail_bulk_items([2, 7], status=429, times=1)
    proxy.fail_bulk_items(2, status=429, times=10)  # every retry of those two items
    writer, sleeps = _writer(proxy_client, max_retries=3, initial_backoff=1.0)
    outcomes = writer.write(_docs(index, 10))
    assert sleeps == [1.0, 2.0, 4.0]
    assert [o.id for o in outcomes if not o.ok] == ["d2", "d7"]
    assert {o.status for o in outcomes if not o.ok} == {429}
    assert proxy.count(r"/_bulk$") == 4
    assert _stored_ids(es_client, index) == {f"d{i}" for i in range(10)} - {"d2", "d7"}


def test_whole_request_429_and_503_are_retried(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    proxy.reply_status(429, path=r"/_bulk$")
    proxy.reply_status(503, path=r"/_bulk$")
    writer, sleeps = _writer(proxy_client)
    outcomes = writer.write(_docs(index, 3))
    assert all(o.ok for o in outcomes)
    assert sleeps == [0.5, 1.0]
    assert proxy.count(r"/_bulk$") == 3


def test_whole_request_rejection_raises_after_earlier_chunks(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    proxy.reply_status(400, path=r"/_bulk$", skip=1)  # the second chunk is rejected
    writer, sleeps = _writer(proxy_client, chunk_size=2)
    with pytest.raises(BulkRequestError) as info:
        writer.write(_docs(index, 6))
    err = info.value
    assert (err.status, err.ids) == (400, ("d2", "d3"))
    assert [(o.id, o.ok) for o in err.outcomes] == [("d0", True), ("d1", True)]
    assert sleeps == []
    assert proxy.count(r"/_bulk$") == 2
    assert _stored_ids(es_client, index) == {"d0", "d1"}


@pytest.mark.parametrize("dropped", [0, 1])
def test_dropped_connection_on_one_chunk_still_sends_the_others(
    dropped: int,
    es_client: Elasticsearch,
    proxy: FaultProxy,
    proxy_client: Elasticsearch,
    index: str,
) -> None:
    proxy.drop_connection(times=1, path=r"/_bulk$", skip=dropped)
    writer, sleeps = _writer(proxy_client, chunk_size=5)
    outcomes = writer.write(_docs(index, 15))
    assert proxy.count(r"/_bulk$") == 3
    assert sleeps == []
    lost = range(5 * dropped, 5 * dropped + 5)
    for i, o in enumerate(outcomes):
        if i in lost:
            assert (o.ok, o.status, o.error_type) == (False, 0, "connection_error")
        else:
            assert o.ok
    assert _stored_ids(es_client, index) == {f"d{i}" for i in range(15) if i not in lost}


def test_connection_lost_after_the_write_is_not_retried(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    """Why no retry: the server may have applied the chunk (here it did)."""
    proxy.drop_connection(times=1, path=r"/_bulk$", after_forwarding=True)
    writer, _ = _writer(proxy_client)
    outcomes = writer.write([BulkAction("create", index, "once", {"v": 1})])
    assert (outcomes[0].status, outcomes[0].error_type) == (0, "connection_error")
    assert proxy.count(r"/_bulk$") == 1
    assert es_client.get(index=index, id="once")["found"]


def test_chunking_by_bytes_sends_several_requests(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    writer, _ = _writer(proxy_client, chunk_size=1000, max_bytes=2048)
    actions = _docs(index, 60, pad="x" * 100)
    actions.append(BulkAction("index", index, "huge", {"pad": "y" * 10_000}))
    outcomes = writer.write(actions, refresh="wait_for")
    assert all(o.ok for o in outcomes)
    requests = [r for r in proxy.requests if r.path.endswith("/_bulk")]
    assert len(requests) >= 5
    assert all(r.body_bytes <= 2048 for r in requests if r.bulk_items and r.bulk_items > 1)
    assert requests[-1].bulk_items == 1  # the oversize action went alone
    assert sum(r.bulk_items or 0 for r in requests) == 61
    assert len(_stored_ids(es_client, index)) == 61


class Blocked(em.Document):
    class Index:
        name = "blocked"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    name: str = ""


def test_a_write_held_by_a_write_block_waits_for_its_removal_even_with_retries_0(
    es_url: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    """A reindex blocks the old index from its final catch-up until the swap; a write in
    that window (here ``retries=0``, the strictest call) waits on ``write_block_wait``, not
    on ``retries``. The block is lifted during the writer's second wait."""
    physical = f"{index_prefix}blocked-v1"
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:  # the reindex swapped: the block is gone
            es_client.indices.put_settings(index=physical, settings={"index.blocks.write": False})

    with em.Mapper(es_url, models=[Blocked], index_prefix=index_prefix, sleep=sleep) as mapper:
        mapper.configure_indexes()
        es_client.indices.add_block(index=physical, block="write")
        doc = mapper.repository(Blocked).add(Blocked(name="a"), retries=0)
        assert mapper.repository(Blocked).get(doc.id) is not None
    assert waits == [0.5, 1.0]


def test_a_write_block_held_longer_than_write_block_wait_fails_the_write(
    es_url: str, es_client: Elasticsearch, index_prefix: str
) -> None:
    waits: list[float] = []
    with em.Mapper(
        es_url,
        models=[Blocked],
        index_prefix=index_prefix,
        sleep=waits.append,
        write_block_wait=1.2,
    ) as mapper:
        mapper.configure_indexes()
        es_client.indices.add_block(index=f"{index_prefix}blocked-v1", block="write")
        with pytest.raises(em.DocumentError) as caught:
            mapper.repository(Blocked).add(Blocked(name="a"))
    assert caught.value.error_type == "cluster_block_exception"
    assert sum(waits) == pytest.approx(1.2)
