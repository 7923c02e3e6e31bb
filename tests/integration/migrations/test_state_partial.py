"""The migration records are never read from a listing some shards did not answer (issue
26, item 1): a record missing from it would run its migration again."""

from __future__ import annotations

import pytest

import esmapper as em
from esmapper.migrations import MigrationRecord, MigrationResult, StateStore
from esmapper.testing._real_shards import shard_of
from esmapper.testing.cluster import ClusterProxy

from .conftest import Employee, MakeMapper
from .test_runner import Calls, migration

LISTING = r"-esmapper-migrations/_search$"


def test_a_partial_listing_of_the_records_is_refused(
    cluster: ClusterProxy, index_prefix: str
) -> None:
    with em.Mapper(cluster.url, models=[Employee], index_prefix=index_prefix) as mapper:
        store = StateStore(mapper.client, index_prefix=index_prefix)
        store.ensure()
        saved = {
            str(v): MigrationRecord(id=str(v), kind="versioned", version=v, attempts=1)
            for v in range(1, 10)
        }
        for record in saved.values():
            store.save(record)
        assert any(shard_of(i) == 0 for i in saved)
        cluster.fail_shards(path=LISTING)
        with pytest.raises(em.PartialResultsError):
            store.load()
        assert store.load() == saved


def test_a_completed_migration_is_not_run_again_on_a_partial_listing(
    make_mapper: MakeMapper, cluster: ClusterProxy, index_prefix: str
) -> None:
    calls: Calls = []
    done = [migration(calls, v) for v in range(1, 7)]
    first = make_mapper(*done)
    first.configure_indexes()  # existing indexes: not a fresh install, the migrations run
    assert first.migrate() == MigrationResult.SUCCESS
    assert len(calls) == 6
    cluster.fail_shards(path=LISTING, times=10, shard=shard_of("1"))  # record 1 is lost
    through = make_mapper(*done, url=cluster.url)
    with pytest.raises(em.PartialResultsError):
        through.migrate()
    assert len(calls) == 6  # none ran again
