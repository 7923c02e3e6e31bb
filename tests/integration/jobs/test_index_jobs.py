"""Index jobs against the test server: maintenance, and the cleanup of expired partitions,
leftovers of successful reindexes only, and dated indexes by pattern (a dry run first)."""

from __future__ import annotations

import datetime as dt

import elastic_transport
import pytest
from elasticsearch import Elasticsearch

from esmapper.indexes import reindex
from esmapper.jobs import CleanupIndexesJob, MaintainIndexesJob
from esmapper.locks import LockProvider
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper
from tests.integration.indexes.models import DailyLog, ItemV1, ItemV2, PlainV1, PlainV2

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)


def _leave_a_leftover(make_mapper: MakeMapper, es_url: str, index_prefix: str) -> None:
    """Reindex items v1 -> v2 whose final DELETE of v1 never reaches the server (as if the
    process was killed there): v1 is left behind by a *successful* reindex."""
    make_mapper(ItemV1).repository(ItemV1).add(ItemV1(name="a"), consistency="immediate")
    with FaultProxy(es_url, lifetime=120) as proxy:
        mapper = make_mapper(ItemV2, url=proxy.url)
        proxy.drop_connection(path=rf"^/{index_prefix}items-v1$", method="DELETE")
        with pytest.raises(elastic_transport.ConnectionError):
            reindex(mapper, ItemV2)


def test_cleanup_lists_by_default_then_deletes_what_is_safe(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, es_url: str
) -> None:
    p = index_prefix
    _leave_a_leftover(make_mapper, es_url, p)
    make_mapper(PlainV1).repository(PlainV1).add(PlainV1(n=1), consistency="immediate")
    reindex(make_mapper(PlainV2), PlainV2, delete_old=False)  # kept on purpose
    clock = FakeClock(NOW)
    logs = make_mapper(DailyLog, clock=clock)
    logs.repository(DailyLog).add(
        [DailyLog(created_utc=NOW - dt.timedelta(days=d)) for d in (0, 20)]
    )
    for name in ("ext-2020.01.15", "ext-2999.01.01", "ext-nodate"):
        es_client.indices.create(index=f"{p}{name}")
    clock.now = NOW + dt.timedelta(days=15)  # the partition of 02.18 expired on 03.20

    mapper = make_mapper(ItemV2, PlainV2, DailyLog, clock=clock)
    kwargs = {"patterns": [f"{p}ext-*"], "max_age": dt.timedelta(days=30)}
    dry = CleanupIndexesJob(mapper, **kwargs).run()  # type: ignore[arg-type]
    assert dry.is_success, dry
    report = dry.details
    assert report.dry_run and report.deleted == ()
    assert [(i.kind, i.index, i.model) for i in report.candidates] == [
        ("leftover", f"{p}items-v1", "ItemV2"),
        ("expired", f"{p}logs-v1-2026.02.18", "DailyLog"),
        ("dated", f"{p}ext-2020.01.15", None),
    ]
    assert [(i.index, i.reason.split(";")[-1].strip()) for i in report.kept] == [
        (f"{p}plain_items-v1", "delete it by hand"),
    ]
    assert dry.message.startswith("would delete 3 indexes (1 expired partitions, 1 leftover")
    assert es_client.indices.exists(index=f"{p}items-v1")  # nothing deleted

    done = CleanupIndexesJob(mapper, dry_run=False, **kwargs).run()  # type: ignore[arg-type]
    assert done.is_success, done
    assert sorted(done.details.deleted) == sorted(
        [f"{p}items-v1", f"{p}logs-v1-2026.02.18", f"{p}ext-2020.01.15"]
    )
    for gone in done.details.deleted:
        assert not es_client.indices.exists(index=gone)
    for kept in ("plain_items-v1", "ext-2999.01.01", "ext-nodate", "items-v2"):
        assert es_client.indices.exists(index=f"{p}{kept}")
    again = CleanupIndexesJob(mapper, **kwargs).run()  # type: ignore[arg-type]
    assert again.details.candidates == ()


def test_the_cleanup_lock_held_elsewhere_skips_the_run_but_not_the_dry_run(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(ItemV1)
    mapper.configure_indexes()
    with LockProvider(es_client, index_prefix=index_prefix).acquire("index-cleanup"):
        applied = CleanupIndexesJob(mapper, dry_run=False).run()
        dry = CleanupIndexesJob(mapper).run()
    assert applied.skipped and "lock 'index-cleanup' is held" in applied.message
    assert dry.is_success and not dry.skipped


def test_a_pattern_needs_a_max_age(make_mapper: MakeMapper) -> None:
    with pytest.raises(ValueError, match="needs max_age"):
        CleanupIndexesJob(make_mapper(ItemV1), patterns=["logs-*"])


def test_maintenance_as_a_job(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW)
    mapper = make_mapper(DailyLog, clock=clock)
    mapper.repository(DailyLog).add([DailyLog(created_utc=NOW - dt.timedelta(days=20))])
    clock.now = NOW + dt.timedelta(days=15)
    result = MaintainIndexesJob(mapper).run()
    assert result.is_success, result
    assert result.details.deleted == (f"{index_prefix}logs-v1-2026.02.18",)
    assert result.message == "1 expired, 1 deleted, 0 alias changes"
