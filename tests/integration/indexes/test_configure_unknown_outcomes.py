"""Creating indexes and partitions when the answer is lost (dropped before the server got
the request, dropped after the server applied it, or cut short): read back, sent again
only if missing, and an index that already exists does not fail the run."""

from __future__ import annotations

import datetime as dt

import pytest
from elasticsearch import Elasticsearch

from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .fences import without_fence
from .models import DailyLog, ItemV1

LOST = ["drop_before", "drop_after", "truncate"]
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)


def lose(proxy: FaultProxy, how: str, path: str) -> None:
    if how == "truncate":
        proxy.truncate_response(path=path, method="PUT")
    else:
        proxy.drop_connection(path=path, method="PUT", after_forwarding=how == "drop_after")


@pytest.mark.parametrize("how", LOST)
def test_a_lost_create_of_a_versioned_index_and_its_alias_is_read_back(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    alias, v1 = f"{index_prefix}items", f"{index_prefix}items-v1"
    lose(proxy, how, rf"^/{v1}$")

    (state,) = make_mapper(ItemV1, url=proxy.url).configure_indexes()

    assert (state.action, state.current_index) == ("created", v1)
    assert sorted(es_client.indices.get_alias(name=alias).body) == [v1]
    # sent again only when reading back showed it was not applied
    assert proxy.count(rf"^/{v1}$", method="PUT") == (2 if how == "drop_before" else 1)


@pytest.mark.parametrize("how", LOST)
def test_a_lost_create_of_a_partition_is_read_back(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    mapper = make_mapper(DailyLog, clock=FakeClock(NOW), url=proxy.url)
    mapper.configure_indexes()
    partition = f"{index_prefix}logs-v1-2026.03.10"
    lose(proxy, how, rf"^/{partition}$")

    mapper.repository(DailyLog).add(DailyLog(message="m", created_utc=NOW), consistency="immediate")

    assert proxy.pending_faults == 0
    aliases = es_client.indices.get_alias(index=partition).body[partition]["aliases"]
    assert without_fence(partition, aliases) == [
        f"{index_prefix}logs",
        f"{index_prefix}logs-2026.03.10",
    ]
    assert es_client.count(index=f"{index_prefix}logs")["count"] == 1
