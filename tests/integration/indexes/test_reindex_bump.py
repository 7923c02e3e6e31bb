"""Review of the version bump's verify shortcut (equal counts skip the id scroll): deletes
and inserts during the bump, and a document removed then added again under its id while
the bump runs. Nothing may be lost, resurrected or stale in the new index."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexError, ReindexProgress, reindex
from esmapper.indexes.blocks import read_block
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import FakeClock, MakeMapper

from .models import SETTINGS as ITEM_SETTINGS
from .models import ItemV1, ItemV2, ItemV2Scripted
from .test_reindex_unknown_outcomes import lose
from .writes import after_the_copy

NOW = dt.datetime(2026, 3, 10, 12, 30, tzinfo=dt.timezone.utc)

#: deletes forgotten at once: a document added again under a removed id starts over at
#: ``_version`` 1 (what Elasticsearch does once ``index.gc_deletes``, 60 s, has passed; the
#: local test server keeps no delete tombstones at all, whatever the setting)
SETTINGS: dict[str, Any] = {
    "number_of_shards": 1,
    "number_of_replicas": 0,
    "index": {"gc_deletes": "0s"},
}


class ThingV1(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "review_things"
        version = 1
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


class ThingV2(em.Document, em.HasDates, em.Versioned):
    class Index:
        name = "review_things"
        version = 2
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


@pytest.fixture
def mappers(es_url: str, index_prefix: str) -> Iterator[tuple[em.Mapper, em.Mapper]]:
    with (
        em.Mapper(es_url, models=[ThingV1], index_prefix=index_prefix) as v1,
        em.Mapper(es_url, models=[ThingV2], index_prefix=index_prefix) as v2,
    ):
        v1.configure_indexes()
        yield v1, v2


def _new_index(es_client: Elasticsearch, index_prefix: str) -> dict[str, int]:
    index = f"{index_prefix}review_things-v2"
    es_client.indices.refresh(index=index)
    hits = es_client.search(index=index, size=1000)["hits"]["hits"]
    return {h["_id"]: h["_source"]["n"] for h in hits}


def test_a_delete_and_an_insert_during_the_bump_are_both_in_the_new_index(
    mappers: tuple[em.Mapper, em.Mapper], es_client: Elasticsearch, index_prefix: str
) -> None:
    v1, v2 = mappers
    things = v1.repository(ThingV1).add([ThingV1(n=i) for i in range(20)])
    repo = v2.repository(ThingV2)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:  # copied, not yet blocked
            repo.remove(things[5].id or "")
            repo.add(ThingV2(id="late", n=99))

    result = reindex(v2, ThingV2, progress=during)
    assert (result.status, result.old_count, result.new_count) == ("reindexed", 20, 20)
    expected = {t.id: t.n for t in things if t.id != things[5].id} | {"late": 99}
    assert _new_index(es_client, index_prefix) == expected


def test_a_document_removed_and_added_again_during_the_bump_is_not_stale(
    mappers: tuple[em.Mapper, em.Mapper], es_client: Elasticsearch, index_prefix: str
) -> None:
    v1, v2 = mappers
    old = v1.repository(ThingV1)
    things = old.add([ThingV1(n=i) for i in range(10)])
    for i in range(3):  # a few saves: its _version is 4 when copied
        things[5].n = 100 + i
        old.save(things[5])
    repo = v2.repository(ThingV2)
    target = things[5].id or ""

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            repo.remove(target)
            es_client.indices.refresh(index=v2.spec(ThingV2).alias)
            repo.add(ThingV2(id=target, n=555))  # the same id, written after the copy

    result = reindex(v2, ThingV2, progress=during)
    assert result.status == "reindexed"
    assert repo.get(target) is not None and repo.get(target).n == 555  # type: ignore[union-attr]
    assert _new_index(es_client, index_prefix)[target] == 555
    assert result.caught_up >= 1 and (result.old_count, result.new_count) == (10, 10)


def _add_again(
    repo: em.Repository[ItemV2Scripted], es_client: Elasticsearch, target: str, saves: int
) -> None:
    """Remove ``target`` and add it again under its id (``_version`` 1: no tombstone kept),
    then save it ``saves`` times."""
    repo.remove(target)
    es_client.indices.refresh(index=repo.mapper.spec(ItemV2Scripted).alias)
    again = repo.add(ItemV2Scripted(id=target, name="again", n=555))
    for i in range(saves):
        again.n = 556 + i
        repo.save(again)


def _seed_items(make_mapper: MakeMapper, clock: FakeClock) -> tuple[list[ItemV1], str]:
    """Ten items; the fourth saved three times (``_version`` 4 when copied)."""
    old = make_mapper(ItemV1, clock=clock, configure=True).repository(ItemV1)
    items = old.add([ItemV1(name=f"item{i}", n=i) for i in range(10)])
    for i in range(3):
        clock.now += dt.timedelta(seconds=1)
        items[3].n = 100 + i
        old.save(items[3])
    return items, items[3].id or ""


def _sources(es_client: Elasticsearch, index: str) -> dict[str, dict[str, Any]]:
    es_client.indices.refresh(index=index)
    hits = es_client.search(index=index, size=1000)["hits"]["hits"]
    return {h["_id"]: h["_source"] for h in hits}


@pytest.mark.parametrize(
    ("phase", "saves"),
    [("copy", 0), ("copy", 3), ("catch_up", 0), ("catch_up", 3)],
    ids=["during-copy", "during-copy-saved-to-the-same-version", "during-catch-up",
         "during-catch-up-saved-to-the-same-version"],
)  # fmt: skip
def test_a_document_added_again_before_any_pass_is_copied_again_with_the_script(
    phase: str, saves: int, make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    # The clock moves 10 minutes after the re-add: the passes that follow (the catch-up's
    # and the final pass's windows start after it) do not select it by ``updated_utc``;
    # saved 3 times, it is back at the ``_version`` it was copied at.
    clock = FakeClock(NOW)
    items, target = _seed_items(make_mapper, clock)
    mapper = make_mapper(ItemV2Scripted, clock=clock)
    repo = mapper.repository(ItemV2Scripted)
    done: list[str] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == phase and report.message and not done:
            done.append(phase)
            clock.now += dt.timedelta(minutes=10)
            _add_again(repo, es_client, target, saves)
            clock.now += dt.timedelta(minutes=10)

    # a write after the copy: the catch-up runs (an untouched index would skip it)
    progress = after_the_copy(es_client, f"{index_prefix}items", during)
    result = reindex(mapper, ItemV2Scripted, progress=progress)

    assert done and result.status == "reindexed"
    assert (result.old_count, result.new_count) == (10, 10)
    sources = _sources(es_client, f"{index_prefix}items-v2")
    n = 555 + saves
    assert (sources[target]["name"], sources[target]["n"]) == ("again", n)
    assert sources[target]["label"] == f"item-{n}"  # the reindex script ran on it
    assert {i: (s["name"], s["n"], s["label"]) for i, s in sources.items() if i != target} == {
        t.id: (t.name, t.n, f"item-{t.n}") for t in items if t.id != target
    }


def test_nothing_is_copied_again_when_no_document_was_added_again(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW)
    items, target = _seed_items(make_mapper, clock)
    mapper = make_mapper(ItemV2, clock=clock, url=proxy.url)
    writer = make_mapper(ItemV2, clock=clock).repository(ItemV2)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            clock.now += dt.timedelta(minutes=10)
            writer.save(writer.get(target))  # type: ignore[arg-type]
            writer.remove(items[0].id or "")
            writer.add(ItemV2(id="late", n=99))

    result = reindex(mapper, ItemV2, progress=during)

    assert result.status == "reindexed"
    expected = {t.id for t in items[1:]} | {"late"}
    assert set(_sources(es_client, f"{index_prefix}items-v2")) == expected
    # the copy, the catch-up and the final pass: no other pass (the tasks probe is read-only),
    # and one bulk (the verify step deleting the removed document from the new index)
    assert proxy.count(r"^/_reindex$", method="POST") == 3
    assert proxy.count(r"^/_bulk$", method="PUT") == 1
    assert _compared(proxy) >= 2  # the final pass skipped the saved one: compared


def _compared(proxy: FaultProxy) -> int:
    """Searches comparing ``updated_utc`` (they ask for that field alone)."""
    return sum(1 for r in proxy.requests if "_source_includes" in r.query)


def test_a_bump_whose_catch_up_passes_skipped_nothing_compares_nothing(
    make_mapper: MakeMapper, proxy: FaultProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    clock = FakeClock(NOW - dt.timedelta(hours=1))  # seeded before the copy's window
    items, _ = _seed_items(make_mapper, clock)
    clock.now = NOW
    mapper = make_mapper(ItemV2, clock=clock, url=proxy.url)
    writer = make_mapper(ItemV2, clock=clock).repository(ItemV2)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            writer.add(ItemV2(id="late", n=99))  # written by the catch-up, skipped by none
            es_client.indices.refresh(index=f"{index_prefix}items")  # seen by the catch-up
            clock.now += dt.timedelta(minutes=10)  # the final pass's window starts after it

    result = reindex(mapper, ItemV2, progress=during)

    assert (result.status, result.caught_up) == ("reindexed", 1)
    assert _compared(proxy) == 0
    assert set(_sources(es_client, f"{index_prefix}items-v2")) == {t.id for t in items} | {"late"}


@pytest.mark.parametrize("how", ["drop_before", "drop_after", "truncate"])
def test_lost_answers_while_copying_again_are_settled(
    how: str,
    make_mapper: MakeMapper,
    proxy: FaultProxy,
    es_client: Elasticsearch,
    index_prefix: str,
) -> None:
    clock = FakeClock(NOW)
    items, target = _seed_items(make_mapper, clock)
    mapper = make_mapper(ItemV2Scripted, clock=clock, url=proxy.url)
    repo = make_mapper(ItemV2Scripted, clock=clock).repository(ItemV2Scripted)
    done: list[bool] = []

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message and not done:
            done.append(True)
            clock.now += dt.timedelta(minutes=10)
            _add_again(repo, es_client, target, 0)
            clock.now += dt.timedelta(minutes=10)

    # the deletes of the stale copy, then the pass copying it again (after the copy, the
    # catch-up and the final pass)
    lose(proxy, how, path=r"^/_bulk$", method="PUT")
    lose(proxy, how, path=r"^/_reindex$", method="POST", skip=3)

    result = reindex(mapper, ItemV2Scripted, progress=during)

    assert (result.status, result.swapped) == ("reindexed", True)
    assert proxy.pending_faults == 0
    assert proxy.count(r"^/_bulk$", method="PUT") == 2  # the deletes, sent once more
    assert proxy.count(r"^/_reindex$", method="POST") == 5  # the last pass, run once more
    sources = _sources(es_client, f"{index_prefix}items-v2")
    assert (sources[target]["n"], sources[target]["label"]) == (555, "item-555")
    assert set(sources) == {t.id for t in items}
    assert (result.old_count, result.new_count) == (10, 10)  # counted after the repair


class PlainThingV1(em.Document):
    class Index:
        name = "review_plain"
        version = 1
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


class PlainThingV2(em.Document):
    class Index:
        name = "review_plain"
        version = 2
        settings = SETTINGS

    n: int = em.field(em.Integer(), default=0)


def test_a_document_added_again_during_a_bump_of_a_model_without_dates(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    old = make_mapper(PlainThingV1, configure=True).repository(PlainThingV1)
    things = old.add([PlainThingV1(n=i) for i in range(5)])
    for i in range(3):
        things[2].n = 100 + i
        old.save(things[2])
    mapper = make_mapper(PlainThingV2)
    repo = mapper.repository(PlainThingV2)
    target = things[2].id or ""

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            repo.remove(target)
            es_client.indices.refresh(index=mapper.spec(PlainThingV2).alias)
            repo.add(PlainThingV2(id=target, n=555))

    assert reindex(mapper, PlainThingV2, progress=during).status == "reindexed"
    assert _sources(es_client, f"{index_prefix}review_plain-v2")[target]["n"] == 555


def test_a_document_added_again_at_the_same_version_during_a_bump_without_dates(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    # Its copy and the document added again both have _version 1: only their content
    # tells the copy is stale.
    old = make_mapper(PlainThingV1, configure=True).repository(PlainThingV1)
    things = old.add([PlainThingV1(n=i) for i in range(5)])
    mapper = make_mapper(PlainThingV2)
    repo = mapper.repository(PlainThingV2)
    target = things[3].id or ""

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            repo.remove(target)
            es_client.indices.refresh(index=mapper.spec(PlainThingV2).alias)
            repo.add(PlainThingV2(id=target, n=777))

    result = reindex(mapper, PlainThingV2, progress=during)
    assert result.status == "reindexed"
    sources = _sources(es_client, f"{index_prefix}review_plain-v2")
    assert sources[target]["n"] == 777
    assert {i: s["n"] for i, s in sources.items() if i != target} == {
        t.id: t.n for t in things if t.id != target
    }


class ShardedThingV1(em.Document):
    class Index:
        name = "review_sharded"
        version = 1
        settings = {**SETTINGS, "number_of_shards": 3}  # noqa: RUF012

    n: int = em.field(em.Integer(), default=0)


class ShardedThingV2(em.Document):
    class Index:
        name = "review_sharded"
        version = 2
        settings = {**SETTINGS, "number_of_shards": 3}  # noqa: RUF012

    n: int = em.field(em.Integer(), default=0)


def test_documents_added_again_in_several_shards_during_a_bump_without_dates(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    # Each shard numbers its writes on its own: the documents written since the copy
    # began are those above the lowest shard's highest number then.
    old = make_mapper(ShardedThingV1, configure=True).repository(ShardedThingV1)
    things = old.add([ShardedThingV1(n=i) for i in range(30)])
    for thing in things[:20]:  # the shards' numbers drift apart
        thing.n += 100
    old.save(things[:20])
    mapper = make_mapper(ShardedThingV2)
    repo = mapper.repository(ShardedThingV2)
    again = {t.id or "": 500 + i for i, t in enumerate(things[::6])}

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            repo.remove(list(again))
            es_client.indices.refresh(index=mapper.spec(ShardedThingV2).alias)
            repo.add([ShardedThingV2(id=i, n=n) for i, n in again.items()])

    assert reindex(mapper, ShardedThingV2, progress=during).status == "reindexed"
    sources = _sources(es_client, f"{index_prefix}review_sharded-v2")
    assert {i: s["n"] for i, s in sources.items()} == {
        t.id: again.get(t.id or "", t.n) for t in things
    }


class PlainThingV2Scripted(em.Document):
    class Index:
        name = "review_plain"
        version = 2
        settings = SETTINGS
        reindex_scripts = {2: "ctx._source.n = ctx._source.n + 1000"}  # noqa: RUF012

    n: int = em.field(em.Integer(), default=0)


def test_a_document_added_again_during_a_scripted_bump_without_dates_gets_the_script(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    # Same version, and the script changes the content: the copy cannot be compared with
    # the document, so the documents written during the bump are copied again.
    old = make_mapper(PlainThingV1, configure=True).repository(PlainThingV1)
    things = old.add([PlainThingV1(n=i) for i in range(5)])
    mapper = make_mapper(PlainThingV2Scripted)
    repo = mapper.repository(PlainThingV2Scripted)
    target = things[1].id or ""

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            repo.remove(target)
            es_client.indices.refresh(index=mapper.spec(PlainThingV2Scripted).alias)
            repo.add(PlainThingV2Scripted(id=target, n=555))

    assert reindex(mapper, PlainThingV2Scripted, progress=during).status == "reindexed"
    sources = _sources(es_client, f"{index_prefix}review_plain-v2")
    assert {i: s["n"] for i, s in sources.items()} == {
        t.id: (1555 if t.id == target else t.n + 1000) for t in things
    }


class ItemV2FailsOnAgain(em.Document, em.HasDates, em.Versioned):
    """Its script fails on the documents named ``again``."""

    class Index:
        name = "items"
        version = 2
        settings = ITEM_SETTINGS
        reindex_scripts = {  # noqa: RUF012
            2: "if (ctx._source.name == 'again') { ctx._source.x = ctx._source.no.toString() }"
        }

    name: str = em.field(em.Keyword(), default="")
    n: int = em.field(em.Long(), default=0)


def test_a_failure_copying_a_document_again_rolls_the_bump_back(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    # Stamped between the copy's start and the final pass's window: only the comparison
    # under the block finds it, and its copy fails there.
    clock = FakeClock(NOW)
    items, target = _seed_items(make_mapper, clock)
    mapper = make_mapper(ItemV2FailsOnAgain, clock=clock)
    repo = mapper.repository(ItemV2FailsOnAgain)

    def during(report: ReindexProgress) -> None:
        if report.phase == "copy" and report.message:
            clock.now = NOW + dt.timedelta(minutes=10)
        elif report.phase == "catch_up" and report.message:
            clock.now = NOW + dt.timedelta(minutes=1)
            repo.remove(target)
            es_client.indices.refresh(index=f"{index_prefix}items")
            repo.add(ItemV2FailsOnAgain(id=target, name="again", n=555))
            clock.now = NOW + dt.timedelta(minutes=20)

    with pytest.raises(ReindexError, match="copying documents added again failed") as failed:
        reindex(
            mapper, ItemV2FailsOnAgain, progress=after_the_copy(es_client, repo.spec.alias, during)
        )

    assert failed.value.result.failures
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    assert sorted(es_client.indices.get_alias(name=f"{index_prefix}items").body) == [v1]
    assert not es_client.indices.exists(index=v2)
    assert not read_block(es_client, v1)  # writes allowed again
    assert _sources(es_client, v1)[target]["name"] == "again"
    assert len(_sources(es_client, v1)) == len(items)
