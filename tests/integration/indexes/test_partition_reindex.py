"""Version upgrades of time-series models: partition by partition, lowest version and
oldest period first, with the no-loss guarantees of a versioned reindex."""

from __future__ import annotations

import datetime as dt
import random
import threading
import time
from typing import Any

import elastic_transport
import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexError, ReindexProgress, find_leftovers, reindex, timeseries
from esmapper.indexes.leftovers import delete_leftovers
from esmapper.migrations import plan
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .fences import without_fence
from .models import SETTINGS, DailyLog, DailyLogV2

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=UTC)
MAX_AGE = dt.timedelta(days=30)


class Log1(em.Document, em.HasDates):
    class Index:
        name = "tlogs"
        kind = "daily"
        max_age = MAX_AGE
        settings = SETTINGS

    message: str = em.field(em.Keyword(), default="")
    tmp: str = em.field(em.Keyword(), default="")


class Log2(em.Document, em.HasDates):
    class Index:
        name = "tlogs"
        kind = "daily"
        version = 2
        max_age = MAX_AGE
        settings = SETTINGS
        reindex_scripts = {2: em.rename_field("message", "text")}  # noqa: RUF012

    text: str = em.field(em.Keyword(), default="")
    tmp: str = em.field(em.Keyword(), default="")
    level: int = em.field(em.Integer(), default=0)


class Log3(em.Document, em.HasDates):
    class Index:
        name = "tlogs"
        kind = "daily"
        version = 3
        max_age = MAX_AGE
        settings = SETTINGS
        reindex_scripts = {  # noqa: RUF012
            2: em.rename_field("message", "text"),
            3: em.remove_field("tmp"),
        }

    text: str = em.field(em.Keyword(), default="")
    level: int = em.field(em.Integer(), default=0)


class Log2Plain(em.Document, em.HasDates):
    """Version 2 without scripts (a rename would copy the stale ``message`` kept by saves
    over the new ``text``: that is what a rename does)."""

    class Index:
        name = "tlogs"
        kind = "daily"
        version = 2
        max_age = MAX_AGE
        settings = SETTINGS

    message: str = em.field(em.Keyword(), default="")
    level: int = em.field(em.Integer(), default=0)


class Log2Failing(em.Document, em.HasDates):
    """Its script fails on the documents whose message is ``boom``."""

    class Index:
        name = "tlogs"
        kind = "daily"
        version = 2
        max_age = MAX_AGE
        settings = SETTINGS
        reindex_scripts = {  # noqa: RUF012
            2: "if (ctx._source.message == 'boom') { ctx._source.x = ctx._source.no.toString() }"
        }

    message: str = em.field(em.Keyword(), default="")


def _aliases(client: Elasticsearch, prefix: str) -> dict[str, list[str]]:
    body = client.options(ignore_status=404).indices.get_alias(index=f"{prefix}tlogs-v*").body
    return {
        index.removeprefix(prefix): [
            a.removeprefix(prefix) for a in without_fence(index, entry["aliases"])
        ]
        for index, entry in sorted(body.items())
    }


def _sources(client: Elasticsearch, index: str) -> dict[str, dict[str, Any]]:
    client.indices.refresh(index=index)
    hits = client.search(index=index, size=10_000)["hits"]["hits"]
    return {hit["_id"]: hit["_source"] for hit in hits}


def _templates(client: Elasticsearch, prefix: str) -> list[str]:
    body = client.options(ignore_status=404).indices.get_index_template(name=f"{prefix}*").body
    return sorted(t["name"].removeprefix(prefix) for t in body.get("index_templates", []))


def test_a_version_bump_reindexes_every_live_partition_oldest_first(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    clock = FakeClock(NOW - dt.timedelta(days=20))
    old = make_mapper(Log1, clock=clock)
    old.configure_indexes()
    docs = []
    for day in (40, 2, 0, 1):  # the first one expires when the clock moves to NOW
        at = NOW - dt.timedelta(days=day)
        clock.now = max(at, clock.now)
        docs += old.repository(Log1).add(
            [Log1(message=f"m{i}-{at:%d}", tmp="t", created_utc=at) for i in range(5)],
            consistency="immediate",
        )
    clock.now = NOW
    mapper = make_mapper(Log2, clock=clock)

    (state,) = mapper.configure_indexes()
    assert (state.action, state.current_index) == ("outdated", f"{p}tlogs-v1-*")
    (step,) = [s for s in plan(mapper) if s.action == "reindex"]
    assert step.target == f"{p}tlogs" and "partitions at version 1" in step.reason

    reports: list[ReindexProgress] = []
    result = reindex(mapper, Log2, progress=reports.append)

    assert (result.status, result.old_index, result.new_index) == (
        "reindexed",
        f"{p}tlogs-v1-*",
        f"{p}tlogs-v2-*",
    )
    assert [r.old_index for r in result.partitions] == [
        f"{p}tlogs-v1-2026.03.08",
        f"{p}tlogs-v1-2026.03.09",
        f"{p}tlogs-v1-2026.03.10",
    ]
    assert result.copied == 15 and result.swapped and result.old_deleted
    percents = [r.percent for r in reports]
    assert percents == sorted(percents) and percents[-1] == 100
    # every live partition moved with all its aliases; the expired one is left to retention
    assert _aliases(es_client, p) == {
        "tlogs-v1-2026.01.29": ["tlogs", "tlogs-2026.01.29"],
        "tlogs-v2-2026.03.08": ["tlogs", "tlogs-2026.03.08"],
        "tlogs-v2-2026.03.09": ["tlogs", "tlogs-2026.03.09"],
        "tlogs-v2-2026.03.10": ["tlogs", "tlogs-2026.03.10"],
    }
    assert _templates(es_client, p) == ["tlogs-v2-template"]
    sources = _sources(es_client, f"{p}tlogs")
    assert sorted(sources) == sorted(d.id for d in docs)
    renamed = [s for s in sources.values() if "text" in s]
    assert len(renamed) == 15 and not any("message" in s for s in renamed)
    mapping = es_client.indices.get_mapping(index=f"{p}tlogs-v2-2026.03.10").body
    assert "level" in mapping[f"{p}tlogs-v2-2026.03.10"]["mappings"]["properties"]

    repo = mapper.repository(Log2)
    assert repo.count("text:m1-10") == 1
    got = repo.get(docs[-1].id)
    assert got is not None and got.text == docs[-1].message
    got.level = 3
    repo.save(got, consistency="immediate")  # through the dated alias, into v2
    assert es_client.get(index=f"{p}tlogs-v2-2026.03.09", id=got.id)["_source"]["level"] == 3

    assert reindex(mapper, Log2).status == "up_to_date"
    assert [s.action for s in mapper.configure_indexes()] == ["template_updated"]


def test_the_lowest_version_goes_first_and_scripts_compose(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    v1 = make_mapper(Log1, clock=FakeClock(NOW))
    v1.repository(Log1).add(
        [Log1(message="one", tmp="t", created_utc=NOW - dt.timedelta(days=d)) for d in (0, 1)],
        consistency="immediate",
    )
    v2 = make_mapper(Log2, clock=FakeClock(NOW))
    v2.configure_indexes()  # a new day is created at version 2
    v2.repository(Log2).add(
        Log2(text="two", tmp="t", created_utc=NOW - dt.timedelta(days=5)), consistency="immediate"
    )
    mapper = make_mapper(Log3, clock=FakeClock(NOW))

    result = reindex(mapper, Log3)

    assert [r.old_index.removeprefix(p) for r in result.partitions if r.old_index] == [
        "tlogs-v1-2026.03.09",
        "tlogs-v1-2026.03.10",
        "tlogs-v2-2026.03.05",  # oldest day, but a higher version: last
    ]
    sources = _sources(es_client, f"{p}tlogs")
    assert sorted(s["text"] for s in sources.values()) == ["one", "one", "two"]
    assert not any("tmp" in s or "message" in s for s in sources.values())
    assert set(_aliases(es_client, p)) == {
        "tlogs-v3-2026.03.05",
        "tlogs-v3-2026.03.09",
        "tlogs-v3-2026.03.10",
    }


def test_writes_during_the_reindex_all_reach_the_new_partitions(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    now = dt.datetime.now(UTC)
    days = [now - dt.timedelta(days=d) for d in (2, 1, 0)]
    seeded = (
        make_mapper(Log1)
        .repository(Log1)
        .add([Log1(message=f"seed{i}", created_utc=days[i % 3]) for i in range(900)])
    )
    ids = [d.id for d in seeded]
    mapper = make_mapper(Log2Plain)
    mapper.configure_indexes()
    repo = mapper.repository(Log2Plain)
    latest: dict[str, str] = {}
    stop, errors = threading.Event(), list[Exception]()

    def write(step: int, rnd: random.Random) -> None:
        if step % 3 == 0:
            doc = repo.add(Log2Plain(message=f"new{step}", created_utc=rnd.choice(days)))
            ids.append(doc.id)
            latest[doc.id] = doc.message
            return
        id = rnd.choice(ids)
        doc = repo.get(id)
        if doc is not None:
            doc.message = f"changed{step}"
            repo.save(doc)
            latest[id] = doc.message

    def writer() -> None:
        rnd, step = random.Random(11), 0
        while not stop.is_set():
            step += 1
            try:
                write(step, rnd)
            except em.VersionConflictError:
                pass  # read from v1, saved to v2 after the swap: re-read next time
            except em.EsmapperError as exc:
                failures = getattr(exc, "failures", None) or []
                types = {exc.error_type} | {getattr(f, "error_type", None) for f in failures}
                if "cluster_block_exception" not in types:
                    errors.append(exc)
                    return
                time.sleep(0.01)  # refused by the write block, not applied
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)
                return

    def progress(report: ReindexProgress) -> None:
        if report.phase in ("copy", "catch_up", "final_catch_up") and report.message:
            time.sleep(0.15)  # let the writer work between the phases

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        result = reindex(mapper, Log2Plain, progress=progress)
        time.sleep(0.2)  # writes after the last swap
    finally:
        stop.set()
        thread.join()

    assert not errors, errors
    assert result.status == "reindexed" and len(result.partitions) == 3
    assert len(latest) > 30, "the writer barely ran"
    sources = _sources(es_client, f"{index_prefix}tlogs")
    assert sorted(sources) == sorted(set(ids))
    assert {id: sources[id]["message"] for id in latest} == latest
    assert all(name.startswith("tlogs-v2-") for name in _aliases(es_client, index_prefix))


def test_a_failing_partition_rolls_back_and_a_rerun_continues(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    p = index_prefix
    old = make_mapper(Log1, clock=FakeClock(NOW))
    old.repository(Log1).add(
        [
            Log1(message="fine", created_utc=NOW - dt.timedelta(days=2)),
            Log1(message="boom", created_utc=NOW - dt.timedelta(days=1)),
            Log1(message="fine", created_utc=NOW),
        ],
        consistency="immediate",
    )
    mapper = make_mapper(Log2Failing, clock=FakeClock(NOW))
    mapper.configure_indexes()

    with pytest.raises(ReindexError) as caught:
        reindex(mapper, Log2Failing)

    result = caught.value.result
    assert result.status == "failed" and "1 of 3 partitions" in str(caught.value)
    assert [r.status for r in result.partitions] == ["reindexed", "failed"]
    assert _aliases(es_client, p) == {
        "tlogs-v1-2026.03.09": ["tlogs", "tlogs-2026.03.09"],  # still serving, unblocked
        "tlogs-v1-2026.03.10": ["tlogs", "tlogs-2026.03.10"],
        "tlogs-v2-2026.03.08": ["tlogs", "tlogs-2026.03.08"],
    }
    settings = es_client.indices.get_settings(index=f"{p}tlogs-v1-2026.03.09").body
    blocks = settings[f"{p}tlogs-v1-2026.03.09"]["settings"]["index"].get("blocks", {})
    assert str(blocks.get("write", "false")) == "false"
    mapper.repository(Log2Failing).add(Log2Failing(message="still writable", created_utc=NOW))

    # the bad document is fixed; the rerun does the two partitions left
    (boom,) = [id for id, s in _sources(es_client, f"{p}tlogs").items() if s["message"] == "boom"]
    es_client.update(index=f"{p}tlogs-2026.03.09", id=boom, doc={"message": "fixed"}, refresh=True)
    again = reindex(mapper, Log2Failing)
    assert [r.old_index for r in again.partitions] == [
        f"{p}tlogs-v1-2026.03.09",
        f"{p}tlogs-v1-2026.03.10",
    ]
    assert len(_sources(es_client, f"{p}tlogs")) == 4


def test_migrate_reindexes_time_series_models(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    make_mapper(Log1, clock=FakeClock(NOW)).repository(Log1).add(
        Log1(message="m", created_utc=NOW), consistency="immediate"
    )
    mapper = make_mapper(Log2, clock=FakeClock(NOW))

    assert mapper.migrate() is em.MigrationResult.SUCCESS

    assert _aliases(es_client, index_prefix) == {
        "tlogs-v2-2026.03.10": ["tlogs", "tlogs-2026.03.10"]
    }
    (source,) = _sources(es_client, f"{index_prefix}tlogs").values()
    assert source["text"] == "m"


def test_an_old_partition_left_after_the_swap_is_found_and_deleted(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str, es_url: str
) -> None:
    p = index_prefix
    make_mapper(Log1, clock=FakeClock(NOW)).repository(Log1).add(
        Log1(message="m", created_utc=NOW), consistency="immediate"
    )
    with FaultProxy(es_url, lifetime=300) as proxy:
        mapper = make_mapper(Log2, clock=FakeClock(NOW), url=proxy.url)
        mapper.configure_indexes()
        # the delete of the old partition never reaches the server (like a kill -9 there)
        proxy.drop_connection(path=rf"^/{p}tlogs-v1-2026\.03\.10$", method="DELETE")
        with pytest.raises(elastic_transport.ConnectionError):  # it surfaces, after the swap
            reindex(mapper, Log2)

    assert _aliases(es_client, p) == {
        "tlogs-v1-2026.03.10": [],
        "tlogs-v2-2026.03.10": ["tlogs", "tlogs-2026.03.10"],
    }
    checker = make_mapper(Log2, clock=FakeClock(NOW))
    (leftover,) = find_leftovers(es_client, checker.spec(Log2))
    assert (leftover.index, leftover.target) == (
        f"{p}tlogs-v1-2026.03.10",
        f"{p}tlogs-v2-2026.03.10",
    )
    assert leftover.deletable and leftover.current
    assert reindex(checker, Log2).status == "up_to_date"  # not outdated: only left behind

    assert delete_leftovers(checker, Log2) == [f"{p}tlogs-v1-2026.03.10"]
    assert set(_aliases(es_client, p)) == {"tlogs-v2-2026.03.10"}


def test_patch_all_racing_a_partition_reindex_writes_through_the_dated_alias(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """``patch_all`` scans hits of the partition ``logs-v1-2026.03.10``; a reindex swaps
    and deletes it before the first page is written. Each write names the period's dated
    alias (``IndexSpec.write_name``), never ``hit.index``: the old partition does not come
    back, the version read from it answers 409 in the new one, and the conflict round
    patches the documents there."""
    clock = FakeClock(NOW)
    old = make_mapper(DailyLog, clock=clock)
    new = make_mapper(DailyLogV2, clock=clock)
    repo = old.repository(DailyLog)
    repo.add([DailyLog(message=f"m{i}", created_utc=NOW) for i in range(3)], consistency="wait")
    ran: list[Any] = []

    def bump(doc: Any) -> bool:
        if not ran:
            ran.append(reindex(new, DailyLogV2))
        doc.message = doc.message + "!"
        return True

    assert repo.patch_all("*", em.ActionPatch(bump), consistency="wait") == 3
    names = es_client.options(ignore_status=404).indices.get(index=f"{index_prefix}logs*").body
    assert sorted(names) == [f"{index_prefix}logs-v2-2026.03.10"]  # v1 did not come back
    stored = new.repository(DailyLogV2).find(consistency="immediate").documents
    assert sorted(d.message for d in stored) == ["m0!", "m1!", "m2!"]


def test_a_document_added_again_while_its_partition_is_reindexed_is_not_stale(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """Removed and added again under its id after its partition was copied: the local server
    keeps no delete tombstone, so it restarts at ``_version`` 1, below its copy's 4."""
    now = dt.datetime.now(UTC)
    old = make_mapper(Log1).repository(Log1)
    logs = old.add([Log1(message=f"seed{i}", created_utc=now) for i in range(5)])
    for i in range(3):
        logs[2].message = f"saved{i}"
        old.save(logs[2])
    mapper = make_mapper(Log2Plain)
    repo = mapper.repository(Log2Plain)
    done: list[bool] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not done:
            done.append(True)
            gone = repo.get(logs[2].id or "")
            assert gone is not None
            repo.remove(gone)
            es_client.indices.refresh(index=f"{index_prefix}tlogs")
            repo.add(Log2Plain(id=logs[2].id, message="again", created_utc=now))

    result = reindex(mapper, Log2Plain, progress=during)

    assert done and result.status == "reindexed" and len(result.partitions) == 1
    sources = _sources(es_client, f"{index_prefix}tlogs")
    assert {id: s["message"] for id, s in sources.items()} == {
        log.id: "again" if log.id == logs[2].id else log.message for log in logs
    }


def test_a_first_write_racing_a_partition_reindex_goes_to_the_new_partition(
    make_mapper: MakeMapper,
    es_client: Elasticsearch,
    index_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process's first write of a period reads the dated alias (on the v1 partition),
    then a reindex swaps it to v2 and deletes v1 before the write checks v1's fence: the
    write lands in v2 (it got a 404 adding the fence to the deleted v1)."""
    clock = FakeClock(NOW)
    old = make_mapper(DailyLog, clock=clock)
    old.repository(DailyLog).add(DailyLog(message="seed", created_utc=NOW), consistency="wait")
    bump, writer = make_mapper(DailyLogV2, clock=clock), make_mapper(DailyLogV2, clock=clock)
    v1 = f"{index_prefix}logs-v1-2026.03.10"
    real = timeseries.parse_partition
    ran: list[Any] = []

    def parse_partition(spec: Any, index: str) -> Any:
        if index == v1 and not ran:  # the reindex completes right after the alias read
            ran.append(None)
            ran.append(reindex(bump, DailyLogV2))
        return real(spec, index)

    monkeypatch.setattr(timeseries, "parse_partition", parse_partition)
    writer.repository(DailyLogV2).add(
        DailyLogV2(message="meanwhile", created_utc=NOW), consistency="wait"
    )

    assert ran[1].status == "reindexed"
    names = es_client.options(ignore_status=404).indices.get(index=f"{index_prefix}logs*").body
    assert sorted(names) == [f"{index_prefix}logs-v2-2026.03.10"]
    stored = writer.repository(DailyLogV2).find(consistency="immediate").documents
    assert sorted(d.message for d in stored) == ["meanwhile", "seed"]
