"""The reindex's write block (who set it, how long it lasted, when it is lifted) and the
throttle options, against the local server."""

from __future__ import annotations

import datetime as dt

import pytest
from elasticsearch import ApiError, Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexProgress, reindex
from esmapper.indexes.blocks import (
    BLOCK_MARKER,
    block_writes,
    clear_leftover_block,
    read_block,
    write_blocked,
)
from esmapper.locks import Lock, LockProvider
from esmapper.migrations import run_migrations
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .models import DailyLog, DailyLogV2, ItemV1, ItemV2, PlainV1, PlainV2

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


def seeded(make_mapper: MakeMapper, model: type, count: int) -> em.Mapper:
    mapper = make_mapper(model)
    mapper.configure_indexes()
    mapper.repository(model).add([model(n=i) for i in range(count)])
    return mapper


def killed_reindex_block(
    es: Elasticsearch, prefix: str, index: str, alias: str, clock: FakeClock | None = None
) -> None:
    """What a reindex killed in its final pass leaves: the marked block, its lock (held by
    a holder that is dropped without a release: it lapses 1 s later on ``clock``)."""
    locks = LockProvider(es, index_prefix=prefix, clock=clock)
    lock = locks.acquire(f"reindex:{alias}", dt.timedelta(seconds=1), heartbeat=False)
    block_writes(es, index, lock=lock, into=f"{alias}-v2")


def test_the_result_says_how_long_writes_were_blocked(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    seeded(make_mapper, ItemV1, 30)
    messages: list[str] = []

    def progress(report: ReindexProgress) -> None:
        if report.phase == "swap" and report.done:
            messages.append(report.message)

    result = reindex(make_mapper(ItemV2), ItemV2, progress=progress)
    assert result.status == "reindexed" and result.cleared_block_seconds is None
    assert 0 < result.blocked_seconds < result.seconds
    (swapped,) = messages
    assert swapped.endswith(f"; writes were blocked for {result.blocked_seconds:.2f}s")


def test_a_model_without_dates_skips_the_id_scroll_when_the_counts_match(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, proxy: FaultProxy
) -> None:
    seeded(make_mapper, PlainV1, 20)
    result = reindex(make_mapper(PlainV2, url=proxy.url), PlainV2)
    assert (result.status, result.removed, result.new_count) == ("reindexed", 0, 20)
    assert proxy.count(r"/_search$") == 0  # no id scroll under the block


def test_throttle_options_reach_the_server_and_bad_ones_send_nothing(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, proxy: FaultProxy
) -> None:
    seeded(make_mapper, ItemV1, 10)
    mapper = make_mapper(ItemV2, url=proxy.url)
    for bad in ({"batch_size": 0}, {"requests_per_second": float("nan")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            reindex(mapper, ItemV2, **bad)  # type: ignore[arg-type]
    assert proxy.requests == []
    result = reindex(mapper, ItemV2, batch_size=3, requests_per_second=100.0)
    assert result.status == "reindexed" and result.new_count == 10
    passes = [r for r in proxy.requests if r.path == "/_reindex"]  # the copy pass
    assert passes and all("requests_per_second=100" in r.query for r in passes)


def test_a_leftover_block_is_lifted_even_when_the_alias_is_up_to_date(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = seeded(make_mapper, ItemV1, 5)
    alias, v1 = f"{index_prefix}items", f"{index_prefix}items-v1"
    killed_reindex_block(es_client, index_prefix, v1, alias)
    with pytest.raises(ApiError):
        es_client.index(index=alias, id="x", document={"n": 1})
    block = read_block(es_client, v1)
    assert block is not None and block.marked and block.lock == f"reindex:{alias}"

    result = reindex(mapper, ItemV1, lock_wait=dt.timedelta(seconds=30))  # an old app's rerun
    assert result.status == "up_to_date" and result.cleared_block_seconds is not None
    assert read_block(es_client, v1) is None
    mapping = es_client.indices.get_mapping(index=v1).body[v1]["mappings"]
    assert mapping["_meta"][BLOCK_MARKER] is None  # the marker is cleared too
    es_client.index(index=alias, id="x", document={"n": 1})  # writes work again


def test_a_live_reindex_keeps_its_block_and_someone_elses_block_refuses_a_reindex(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    seeded(make_mapper, ItemV1, 5)
    alias, v1 = f"{index_prefix}items", f"{index_prefix}items-v1"
    locks = LockProvider(es_client, index_prefix=index_prefix)
    with locks.acquire(f"reindex:{alias}") as live:
        block_writes(es_client, v1, lock=live, into=f"{alias}-v2")
        assert clear_leftover_block(locks, v1) is None  # its holder lives
        assert write_blocked(es_client, v1)
        cleared = clear_leftover_block(locks, v1, held=live)  # the holder itself may
        assert cleared is not None and cleared.owner == live.owner
    assert not write_blocked(es_client, v1)

    es_client.indices.add_block(index=v1, block="write")  # a user's block: no marker
    assert clear_leftover_block(locks, v1) is None and write_blocked(es_client, v1)
    with pytest.raises(em.IndexConfigurationError, match="not by an esmapper reindex"):
        reindex(make_mapper(ItemV2), ItemV2)
    assert write_blocked(es_client, v1)  # left as found
    assert not es_client.indices.exists(index=f"{alias}-v2")


def test_a_run_whose_lock_was_taken_over_leaves_the_indexes_to_the_new_holder(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    seeded(make_mapper, ItemV1, 5)
    alias, v1, v2 = f"{index_prefix}items", f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    locks = LockProvider(es_client, index_prefix=index_prefix)
    taken: list[Lock] = []

    def take_over(report: ReindexProgress) -> None:
        if report.phase == "verify" and not taken:  # under the block, before the swap
            es_client.delete(index=locks.index, id=f"reindex:{alias}", refresh=True)
            taken.append(locks.acquire(f"reindex:{alias}"))

    with pytest.raises(em.LockError, match="was lost"):
        reindex(make_mapper(ItemV2), ItemV2, progress=take_over)
    assert list(es_client.indices.get_alias(name=alias).body) == [v1]  # no swap
    assert es_client.indices.exists(index=v2)  # not deleted: the new holder's now
    assert write_blocked(es_client, v1)  # and so is the block
    taken[0].release()


def test_a_partition_left_blocked_is_lifted_by_migrate_and_by_the_partition_reindex(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW)
    v1 = make_mapper(DailyLog, clock=clock)
    v1.configure_indexes()
    days = [NOW - dt.timedelta(days=d) for d in (0, 1)]
    v1.repository(DailyLog).add(
        [DailyLog(message=f"m{i}", created_utc=day) for i, day in enumerate(days)],
        consistency="immediate",
    )
    alias = f"{index_prefix}logs"
    today, yesterday = (v1.spec(DailyLog).partition_name(day) for day in days)

    killed_reindex_block(es_client, index_prefix, yesterday, alias, clock)
    clock.now += dt.timedelta(seconds=2)  # its lock lapsed
    report = run_migrations(v1)
    assert report.result is em.MigrationResult.SUCCESS, report.error
    assert [(o.status, o.step.target) for o in report.outcomes] == [("unblocked", yesterday)]
    assert not write_blocked(es_client, yesterday)

    killed_reindex_block(es_client, index_prefix, today, alias, clock)
    clock.now += dt.timedelta(seconds=2)
    result = reindex(make_mapper(DailyLogV2, clock=clock), DailyLogV2)
    assert result.status == "reindexed" and len(result.partitions) == 2
    assert result.cleared_block_seconds is not None
    assert 0 < result.blocked_seconds == max(p.blocked_seconds for p in result.partitions)
    assert es_client.count(index=alias)["count"] == 2
