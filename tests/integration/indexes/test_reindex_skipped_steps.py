"""The requests a version bump leaves out when they cannot change its outcome, and the
writes that must still reach the new index without them: the refresh of the old index
before the first catch-up (skipped when the index refreshes itself well within the
catch-up margin) and the count of the new index (the passes' created documents)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexProgress, reindex
from esmapper.indexes._reindex_pass import refreshes_itself
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2
from .writes import after_the_copy

MANUAL = {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"}


class ManualV1(em.Document, em.HasDates, em.Versioned):
    """An index that never refreshes on a timer (a bulk load's setting)."""

    class Index:
        name = "manual"
        version = 1
        settings = MANUAL

    n: int = em.field(em.Integer(), default=0)


class ManualV2(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "manual"
        version = 2
        settings = MANUAL

    n: int = em.field(em.Long(), default=0)


def _bump_with_writes_after_the_copy(
    make_mapper: MakeMapper, proxy: FaultProxy, v1_model: type[Any], v2_model: type[Any]
) -> tuple[em.ReindexResult, list[str]]:
    """Seed 20 documents, bump with an add, a save and a delete made right after the copy
    pass (before the first catch-up), without a refresh; the seeded ids."""
    seeder = make_mapper(v1_model)
    seeder.configure_indexes()
    seeded: list[Any] = seeder.repository(v1_model).add([v1_model(n=i) for i in range(20)])
    ids = [d.id for d in seeded]
    seeder.client.indices.refresh(index=seeder.spec(v1_model).physical_name())
    mapper = make_mapper(v2_model, url=proxy.url)
    repo: em.Repository[Any] = mapper.repository(v2_model)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:  # the copy ended; no refresh since
            doc = repo.get(ids[0])
            assert doc is not None
            doc.n = 1000
            repo.save(doc)
            repo.add(v2_model(id="late", n=99))
            repo.remove(ids[1])

    return reindex(mapper, v2_model, progress=during), ids


def test_an_index_refreshing_itself_skips_the_refresh_before_the_catch_up(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    result, ids = _bump_with_writes_after_the_copy(make_mapper, proxy, ItemV1, ItemV2)
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    # before the copy and under the block only
    assert proxy.count(rf"^/{v1}/_refresh$") == 2
    assert result.status == "reindexed"
    # the writes the catch-up may not have seen were taken by the final pass
    assert es_client.get(index=v2, id="late")["_source"]["n"] == 99
    assert es_client.get(index=v2, id=ids[0])["_source"]["n"] == 1000
    assert not es_client.options(ignore_status=404).get(index=v2, id=ids[1])["found"]
    assert (result.removed, result.old_count, result.new_count) == (1, 20, 20)
    assert es_client.count(index=v2)["count"] == 20


def test_an_index_that_never_refreshes_itself_is_refreshed_before_every_pass(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    result, ids = _bump_with_writes_after_the_copy(make_mapper, proxy, ManualV1, ManualV2)
    v1, v2 = f"{index_prefix}manual-v1", f"{index_prefix}manual-v2"
    assert proxy.count(rf"^/{v1}/_refresh$") == 3  # before the copy, the catch-up, the last
    assert result.status == "reindexed"
    assert result.caught_up >= 2  # the catch-up saw the add and the save
    es_client.indices.refresh(index=v2)
    assert es_client.get(index=v2, id="late")["_source"]["n"] == 99
    assert es_client.get(index=v2, id=ids[0])["_source"]["n"] == 1000
    assert not es_client.options(ignore_status=404).get(index=v2, id=ids[1])["found"]
    assert es_client.count(index=v2)["count"] == 20


def test_equal_counts_are_proved_without_counting_the_new_index(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    seeder = make_mapper(ItemV1)
    seeder.configure_indexes()
    seeder.repository(ItemV1).add([ItemV1(n=i) for i in range(15)], consistency="immediate")
    progress = after_the_copy(es_client, f"{index_prefix}items")  # written: counted
    result = reindex(make_mapper(ItemV2, url=proxy.url), ItemV2, progress=progress)
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    assert (result.status, result.old_count, result.new_count) == ("reindexed", 15, 15)
    assert proxy.count(rf"^/{v1}/_count$") == 1
    assert proxy.count(rf"^/{v2}/_count$") == 0  # the passes created 15 documents in it
    # the new index was refreshed before the swap: reads through the alias see everything
    assert es_client.count(index=f"{index_prefix}items")["count"] == 15


@pytest.mark.parametrize(
    ("settings", "within", "expected"),
    [
        ({}, dt.timedelta(seconds=15), True),  # unset: Elasticsearch's 1s
        ({"refresh_interval": "1s"}, dt.timedelta(seconds=1), True),
        ({"refresh_interval": "500ms"}, dt.timedelta(seconds=1), True),
        ({"refresh_interval": "30s"}, dt.timedelta(seconds=15), False),
        ({"refresh_interval": "1m"}, dt.timedelta(minutes=2), True),
        ({"refresh_interval": "-1"}, dt.timedelta(hours=1), False),
        ({}, dt.timedelta(0), False),  # no margin: always refresh
    ],
)
def test_refreshes_itself_reads_the_refresh_interval(
    settings: dict[str, str],
    within: dt.timedelta,
    expected: bool,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    index = f"{index_prefix}refreshing"
    es_client.indices.create(index=index, settings={"number_of_shards": 1, **settings})
    try:
        assert refreshes_itself(es_client, index, within) is expected
    finally:
        es_client.indices.delete(index=index)
