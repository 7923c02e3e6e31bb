"""Review: seams between delete_indexes, first-write ensuring and time-series partitions."""

from __future__ import annotations

import datetime as dt

from elasticsearch import Elasticsearch

from tests.integration.indexes.conftest import FakeClock, MakeMapper
from tests.integration.indexes.models import DailyLog, ItemV1

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


def test_time_series_write_after_another_mapper_deleted_the_indexes(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW)
    writer = make_mapper(DailyLog, clock=clock)
    admin = make_mapper(DailyLog, clock=clock)
    repo = writer.repository(DailyLog)
    repo.add(DailyLog(message="before", created_utc=NOW))  # partition cached by `writer`

    admin.delete_indexes([DailyLog])

    # `writer` still believes today's dated alias exists: the next add must recreate it
    doc = repo.add(DailyLog(message="after", created_utc=NOW), consistency="immediate")
    assert repo.get(doc.id) is not None


def test_versioned_write_after_another_mapper_deleted_the_indexes(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    writer = make_mapper(ItemV1)
    admin = make_mapper(ItemV1)
    repo = writer.repository(ItemV1)
    repo.add(ItemV1(name="a"))
    admin.delete_indexes([ItemV1])
    doc = repo.add(ItemV1(name="b"), consistency="immediate")
    assert [d.id for d in repo.find().documents] == [doc.id]
    assert es_client.indices.get_alias(name=f"{index_prefix}items").body.keys() == {
        f"{index_prefix}items-v1"
    }
