"""``mapper.health()`` against the test server: each thing that needs attention."""

from __future__ import annotations

import datetime as dt

from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.health import HealthReport
from esmapper.indexes.blocks import block_writes
from esmapper.locks import LockProvider
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import FakeClock, MakeMapper
from tests.integration.indexes.models import SETTINGS, DailyLog, ItemV1, ItemV2


class ItemV1Grown(em.Document, em.HasDates, em.Versioned):
    """ItemV1 with a field its index does not map yet (no configure_indexes since)."""

    class Index:
        name = "items"
        version = 1
        settings = SETTINGS

    name: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Integer(), default=0)
    colour: str = em.field(em.Keyword(), default="")


class Crowded(em.Document):
    """Nine fields against a limit of ten."""

    class Index:
        name = "crowded"
        settings = {**SETTINGS, "index.mapping.total_fields.limit": 10}  # noqa: RUF012

    a: str = ""
    b: str = ""
    c: str = ""
    d: str = ""
    e: str = ""
    f: str = ""
    g: str = ""
    h: str = ""


class Piped(em.Document):
    class Index:
        name = "piped"
        settings = SETTINGS
        pipeline = "no-such-pipeline-for-health"

    a: str = ""


def _codes(report: HealthReport, severity: str) -> list[tuple[str, str]]:
    return sorted((i.model or "", i.code) for i in report.issues if i.severity == severity)


def test_a_healthy_application(make_mapper: MakeMapper, index_prefix: str) -> None:
    mapper = make_mapper(ItemV1, DailyLog, clock=FakeClock(dt.datetime.now(dt.timezone.utc)))
    mapper.configure_indexes()
    mapper.repository(DailyLog).add(DailyLog(message="m"))
    report = mapper.health()
    assert report.ok, list(report.lines())
    assert report.status in ("green", "yellow") and report.nodes >= 1
    items, logs = report.models
    assert (items.alias, items.indexes, items.state) == (
        f"{index_prefix}items", (f"{index_prefix}items-v1",), "ok",
    )  # fmt: skip
    assert items.fields == 5 and items.field_limit == 1000  # id, name, n and the two dates
    assert items.drift is not None and items.drift.clean and not items.drift.extra
    assert (logs.kind, logs.partitions, logs.expected) == (
        "daily", 1, f"{index_prefix}logs-v1-*",
    )  # fmt: skip
    lines = list(report.lines())
    assert lines[0].startswith("cluster ") and lines[1].split()[0] == "MODEL"
    assert lines[-1] in ("health: ok", "health: 0 need attention, 1 warnings")


def test_missing_indexes_and_a_pending_reindex_need_attention(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    assert _codes(make_mapper(ItemV1).health(), "attention") == [("ItemV1", "missing")]
    make_mapper(ItemV1).configure_indexes()
    report = make_mapper(ItemV2).health()
    assert not report.ok
    assert _codes(report, "attention") == [("ItemV2", "reindex_pending")]
    (issue,) = report.attention
    assert f"{index_prefix}items serves {index_prefix}items-v1, the model is at version 2" in (
        issue.message
    )
    assert report.models[0].state == "outdated"


def test_a_write_block_left_behind_needs_attention(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(ItemV1)
    mapper.configure_indexes()
    index = f"{index_prefix}items-v1"
    locks = LockProvider(es_client, index_prefix=index_prefix)
    lock = locks.acquire(f"reindex:{index_prefix}items")
    block_writes(es_client, index, lock=lock, into=f"{index_prefix}items-v2")
    running = mapper.health()
    assert _codes(running, "warning")[-2:] == [
        ("ItemV1", "reindex_running"),
        ("ItemV1", "write_block"),
    ]
    assert running.ok  # a reindex running now owns its block
    lock.release()  # the reindex "died": its block stays
    report = mapper.health()
    assert _codes(report, "attention") == [("ItemV1", "write_block")]
    assert "writes fail: migrate or reindex lifts it" in report.attention[0].message


def test_mapping_drift_field_limits_and_pipelines(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    make_mapper(ItemV1, Crowded).configure_indexes()
    es_client.indices.put_mapping(
        index=f"{index_prefix}items-v1", properties={"legacy": {"type": "keyword"}}
    )
    report = make_mapper(ItemV1Grown, Crowded, Piped).health()
    assert _codes(report, "attention") == [
        ("Crowded", "fields"),
        ("ItemV1Grown", "mapping_drift"),
        ("Piped", "missing"),
        ("Piped", "pipeline"),
    ]
    messages = {i.code: i.message for i in report.attention}
    assert "not mapped on the server: colour" in messages["mapping_drift"]
    assert "unknown to the model: legacy" in messages["mapping_drift"]
    assert "maps 9 fields of its limit 10" in messages["fields"]
    assert "ingest pipeline no-such-pipeline-for-health does not exist" in messages["pipeline"]


class Tenanted(em.Document, em.HasCustomFields):
    class Index:
        name = "tenanted"
        settings = SETTINGS
        tenant_field = "company"

    company: str = em.field(em.Keyword(), default="")


def test_custom_field_slots_are_not_drift(make_mapper: MakeMapper) -> None:
    mapper = make_mapper(Tenanted)
    mapper.configure_indexes()
    mapper.custom_fields(Tenanted).add_field("acme", "Level", "int")
    mapper.repository(Tenanted).add(
        Tenanted(company="acme", custom_fields={"Level": 5}), consistency="immediate"
    )
    report = mapper.health()
    assert report.ok, list(report.lines())
    (model,) = [m for m in report.models if m.model == "Tenanted"]
    assert model.drift is not None and model.drift.extra == ()
    assert model.fields is not None and model.fields >= 6  # the slot counts towards the limit


class Replicated(em.Document):
    """The default of Elasticsearch: one replica per shard (two shards here)."""

    class Index:
        name = "replicated"
        settings = {"number_of_shards": 2, "number_of_replicas": 1}  # noqa: RUF012

    a: str = ""


def test_a_one_node_cluster_yellow_from_replicas_is_explained_not_warned(
    make_mapper: MakeMapper, index_prefix: str
) -> None:
    mapper = make_mapper(Replicated, configure=True)
    report = mapper.health()
    assert report.status == "yellow" and report.nodes == 1
    assert [i for i in report.issues if i.code == "cluster" and i.severity != "info"] == []
    (note,) = report.notes
    assert f"data node: {index_prefix}replicated-v1 (1 replicas)" in note.message  # first
    assert "cluster has 1 data node" in note.message
    assert "set index.number_of_replicas (Index.settings) to at most 0" in note.message
    lines = list(report.lines())
    assert lines[-1] == "health: ok" and str(note) in lines


def test_replicas_a_bigger_cluster_could_hold_are_a_warning_that_says_why(
    make_mapper: MakeMapper, es_url: str, index_prefix: str, es_client: Elasticsearch
) -> None:
    # another application's index, named before the model's: the model's come first
    es_client.indices.create(
        index=f"{index_prefix}aaa", settings={"number_of_shards": 1, "number_of_replicas": 1}
    )
    with ClusterProxy(es_url, lifetime=120, nodes=3) as cluster:
        mapper = make_mapper(Replicated, url=cluster.url, configure=True)
        report = mapper.health()
    assert report.nodes == 3 and report.ok  # a warning, not attention
    (warning,) = [i for i in report.warnings if i.code == "cluster"]
    index = f"{index_prefix}replicated-v1"
    # (other indexes of the test server may be listed too: the model's come first)
    assert "replica shards not active that its 3 data nodes could hold, in " in warning.message
    assert f"in {index} (1 replicas, 2 unassigned, 0 initializing)" in warning.message
    # Elasticsearch's reason for one of the model's (allocation explain)
    assert f"; {index} shard 0 replica (INDEX_CREATED): " in warning.message
    assert report.notes == []
