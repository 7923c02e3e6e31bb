"""Reindex passes on a cluster that keeps tasks (the ClusterProxy's tasks API): each pass is
a task, followed to its end, whose result is deleted from ``.tasks``; learning that the
server keeps tasks sends no write."""

from __future__ import annotations

from elasticsearch import Elasticsearch

from esmapper.indexes import reindex
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper

from .models import ItemV1, ItemV2
from .writes import after_the_copy


def test_reindex_passes_run_as_tasks_and_leave_no_results(
    cluster: ClusterProxy, make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    mapper = make_mapper(ItemV1, configure=True)
    mapper.repository(ItemV1).add([ItemV1(n=i) for i in range(20)], consistency="wait")

    progress = after_the_copy(es_client, f"{index_prefix}items")  # the catch-ups run
    result = reindex(make_mapper(ItemV2, url=cluster.url), ItemV2, progress=progress)

    assert (result.status, result.copied, result.new_count) == ("reindexed", 20, 20)
    # the copy, the catch-up and the final pass, each a task followed to its end
    assert cluster.tasks.started == cluster.tasks.runs == 3
    assert cluster.tasks.stored == 0
    assert cluster.count(r"^/\.tasks/_doc/", method="DELETE") == 3


def test_learning_that_the_server_keeps_tasks_sends_no_write(
    cluster: ClusterProxy, make_mapper: MakeMapper, index_prefix: str
) -> None:
    mapper = make_mapper(ItemV1, configure=True)
    mapper.repository(ItemV1).add([ItemV1(n=i) for i in range(3)], consistency="wait")

    reindex(make_mapper(ItemV2, url=cluster.url), ItemV2)

    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    # every _reindex was a pass from the old index to the new one: no probe writing the
    # other way (a role allowed to write the new index only would get 403)
    assert cluster.tasks.descriptions == [f"reindex from [{v1}] to [{v2}]"]  # the copy alone
    assert cluster.count(r"^/_tasks$", method="GET") == 1  # the read-only probe


def test_a_user_who_may_not_read_tasks_reindexes_synchronously(
    cluster: ClusterProxy, make_mapper: MakeMapper
) -> None:
    """Without the ``monitor`` privilege a task could be started but never followed."""
    mapper = make_mapper(ItemV1, configure=True)
    mapper.repository(ItemV1).add([ItemV1(n=i) for i in range(3)], consistency="wait")
    cluster.reply_status(403, path=r"^/_tasks$", method="GET")

    result = reindex(make_mapper(ItemV2, url=cluster.url), ItemV2)

    assert (result.status, result.copied) == ("reindexed", 3)
    assert (cluster.tasks.started, cluster.tasks.runs) == (0, 1)  # nothing to catch up
