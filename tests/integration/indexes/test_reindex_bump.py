"""Review of the version bump's verify shortcut (equal counts skip the id scroll): deletes
and inserts during the bump, and a document removed then added again under its id while
the bump runs. Nothing may be lost, resurrected or stale in the new index."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import ReindexProgress, reindex

#: deletes forgotten at once: a document added again under a removed id starts over at
#: ``_version`` 1 (what Elasticsearch does once ``index.gc_deletes``, 60 s, has passed)
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


@pytest.mark.xfail(
    strict=True,
    reason="a document removed and added again under its id during a bump restarts at "
    "_version 1 (after gc_deletes): the external-version catch-up skips it as a conflict "
    "and the new index keeps the copy of the removed document (open: copying without the "
    "version condition under the write block would rewrite an undated index whole)",
)
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
