"""A parent/child join index (two models, one alias) through the queue path: the item
``bootstrap(begin_reindexing_outdated=True)`` enqueues is the one the worker checks it
against (the same model of the index: the first registered, as every per-index listing
takes), so a script declared on one of them does not fail the item as "another release"."""

from __future__ import annotations

from typing import Any

from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.jobs import InMemoryWorkQueue
from tests.integration.conftest import MakeMapper

SETTINGS: dict[str, Any] = {"number_of_shards": 1, "number_of_replicas": 0}


class Den(em.Document):
    class Index:
        name = "rqj-dens"
        settings = SETTINGS
        join_field = "relation"
        relation = "den"

    name: str = em.field(em.Keyword(), default="")


class Cub(em.Document):
    class Index:
        name = "rqj-dens"
        settings = SETTINGS
        parent = Den
        parent_field = "den_id"
        relation = "cub"

    den_id: str | None = em.field(em.Keyword(), default=None)


class DenV2(em.Document):
    class Index:
        name = "rqj-dens"
        version = 2
        settings = SETTINGS
        join_field = "relation"
        relation = "den"
        reindex_scripts = {2: "ctx._source.name = 'v2'"}  # noqa: RUF012

    name: str = em.field(em.Keyword(), default="")


class CubV2(em.Document):
    class Index:
        name = "rqj-dens"
        version = 2
        settings = SETTINGS
        parent = DenV2
        parent_field = "den_id"
        relation = "cub"

    den_id: str | None = em.field(em.Keyword(), default=None)


def test_a_join_index_item_is_run_by_the_model_it_was_made_from(
    make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    seeded = make_mapper(Den, Cub, configure=True)
    seeded.repository(Den).add(Den(id="d1", name="v1"))
    seeded.repository(Cub).add(Cub(id="c1", den_id="d1"), consistency="immediate")
    queue = InMemoryWorkQueue()
    mapper = make_mapper(DenV2, CubV2, work_queue=queue)

    em.bootstrap(mapper, begin_reindexing_outdated=True)

    lease = queue.dequeue()
    assert lease is not None and queue.dequeue() is None  # one item for the one index
    assert lease.item.script == "ctx._source.name = 'v2'"  # the parent's, as a plan's
    result = em.handle_reindex_work_item(mapper, lease.item)
    assert result.status == "reindexed"
    alias = f"{index_prefix}rqj-dens"
    assert sorted(es_client.indices.get_alias(name=alias).body) == [f"{alias}-v2"]
