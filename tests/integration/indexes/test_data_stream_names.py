"""Models named like Elasticsearch's built-in data streams, against a cluster that has the
built-in templates (the ClusterProxy answers as one): a time-series model whose partitions
``logs-*-*`` claims writes before ``configure_indexes`` ran (its own template, priority
501, is put first); a versioned one is refused before anything is sent."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes._data_streams import data_stream_pattern
from esmapper.testing.cleanup import delete_prefixed
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import FakeClock

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)


@pytest.fixture
def logs_name(es_client: Elasticsearch, index_prefix: str) -> Iterator[str]:
    """A unique model index name starting with ``logs-`` (its indexes deleted after)."""
    yield f"logs-{index_prefix}trail"
    delete_prefixed(es_client, f"logs-{index_prefix}")


def daily(index_name: str) -> type:
    class Index:
        name = index_name
        kind = "daily"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    return type(
        "Trail",
        (em.Document, em.HasDates),
        {"Index": Index, "__module__": __name__, "__annotations__": {"step": str}, "step": ""},
    )


def test_a_time_series_model_named_like_a_data_stream_writes_before_configure_indexes(
    cluster: ClusterProxy, es_client: Elasticsearch, logs_name: str
) -> None:
    trail = daily(logs_name)
    with em.Mapper(cluster.url, models=[trail], clock=FakeClock(NOW)) as mapper:
        spec = mapper.spec(trail)
        assert data_stream_pattern(spec.partition_name(NOW)) == "logs-*-*"
        repo: em.Repository[Any] = mapper.repository(trail)
        days = [NOW - dt.timedelta(days=d) for d in (0, 1)]
        repo.add([trail(step=f"s{n}", created_utc=day) for n, day in enumerate(days)])
        assert repo.count(consistency="immediate") == 2
        template = es_client.indices.get_index_template(name=spec.template_name)
        (entry,) = template["index_templates"]
        assert entry["index_template"]["priority"] == 501
        assert sorted(es_client.indices.get_alias(name=spec.alias).body) == sorted(
            spec.partition_name(day) for day in days
        )
        # configure_indexes afterwards: the template is there already
        assert [s.action for s in mapper.configure_indexes()] == ["template_updated"]


def test_a_refused_partition_says_why(
    cluster: ClusterProxy, es_client: Elasticsearch, logs_name: str
) -> None:
    """A data-stream template of the user's own, above the model's: the create fails with
    Elasticsearch's reason in the error."""
    trail = daily(logs_name)
    es_client.indices.put_index_template(
        name=f"{logs_name}-stream",
        index_patterns=[f"{logs_name}-*"],
        priority=900,
        data_stream={},
    )
    with (
        em.Mapper(cluster.url, models=[trail], clock=FakeClock(NOW)) as mapper,
        pytest.raises(em.IndexConfigurationError) as raised,
    ):
        mapper.repository(trail).add(trail(step="s", created_utc=NOW))
    assert "creates data streams only" in str(raised.value)
    assert raised.value.error_type == "illegal_argument_exception"


def test_a_versioned_model_named_like_a_data_stream_is_refused_before_anything_is_sent(
    cluster: ClusterProxy, logs_name: str
) -> None:
    class Index:
        name = logs_name
        version = 1

    item = type("Item", (em.Document,), {"Index": Index, "__module__": __name__})
    with pytest.raises(em.IndexConfigurationError, match="creates data streams only"):
        em.Mapper(cluster.url, models=[item])
    assert cluster.requests == []
