"""A version bump never acts on a listing some shards did not answer (issue 26, item 1):
the id listing that decides which documents the new index must lose, and the counts that
decide whether to list at all, are refused when partial, before anything is deleted."""

from __future__ import annotations

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.indexes import reindex
from esmapper.testing._real_shards import shard_of
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2, ItemV2Scripted
from .writes import after_the_copy


def _seed(make_mapper: MakeMapper, count: int) -> list[str]:
    mapper = make_mapper(ItemV1)
    mapper.configure_indexes()
    repo = mapper.repository(ItemV1)
    docs = repo.add([ItemV1(n=i) for i in range(count)], consistency="immediate")
    return [d.id for d in docs]


def _alias_ids(es_client: Elasticsearch, alias: str) -> set[str]:
    es_client.indices.refresh(index=alias)
    hits = es_client.search(index=alias, size=1000, source=False)["hits"]["hits"]
    return {h["_id"] for h in hits}


def test_a_partial_id_listing_of_the_old_index_deletes_nothing(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, 30)
    assert any(shard_of(i) == 0 for i in ids)  # the failed shard holds some of them
    v1, alias = f"{index_prefix}items-v1", f"{index_prefix}items"
    mapper = make_mapper(ItemV2Scripted, url=cluster.url)
    # the id scroll of the old index (a scripted bump written to during the run compares
    # ids), after the listing of the documents written during the copy (the stale copies)
    cluster.fail_shards(method="POST", path=rf"^/{v1}/_search$", times=3, skip=1)

    with pytest.raises(em.PartialResultsError) as raised:  # a write during the run: ids compared
        reindex(mapper, ItemV2Scripted, progress=after_the_copy(es_client, alias))

    assert raised.value.index == v1 and raised.value.shards.failed == 1
    assert str(raised.value).startswith(f"the id listing of {v1} is incomplete")
    assert cluster.count(r"/_bulk$") == 0  # nothing was deleted from the new index
    assert es_client.indices.get_alias(name=alias).body.keys() == {v1}  # the old one serves
    assert _alias_ids(es_client, alias) == set(ids)
    # every shard answers again: the bump goes through, no document lost
    result = reindex(make_mapper(ItemV2Scripted), ItemV2Scripted)
    assert (result.status, result.removed, result.new_count) == ("reindexed", 0, 30)
    assert _alias_ids(es_client, alias) == set(ids)


def test_a_partial_count_of_the_old_index_is_refused(
    make_mapper: MakeMapper, cluster: ClusterProxy, es_client: Elasticsearch, index_prefix: str
) -> None:
    ids = _seed(make_mapper, 30)
    v1, alias = f"{index_prefix}items-v1", f"{index_prefix}items"
    cluster.fail_shards(path=rf"^/{v1}/_count$")

    with pytest.raises(em.PartialResultsError) as raised:  # a write during the run: counted
        reindex(
            make_mapper(ItemV2, url=cluster.url), ItemV2, progress=after_the_copy(es_client, alias)
        )

    assert raised.value.results < len(ids)  # the count it refused
    assert es_client.indices.get_alias(name=alias).body.keys() == {v1}
    assert _alias_ids(es_client, alias) == set(ids)
