"""Reindex passes on a cluster that keeps tasks (the ClusterProxy's tasks API): each pass is
a task, followed to its end, whose result is deleted from ``.tasks``; learning that the
server keeps tasks sends no write."""

from __future__ import annotations

import threading

from elasticsearch import Elasticsearch

from esmapper.indexes import ReindexError, reindex
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


def test_a_copy_cancelled_by_someone_else_fails_the_run(
    cluster: ClusterProxy, make_mapper: MakeMapper, es_client: Elasticsearch, index_prefix: str
) -> None:
    """A ``_reindex`` task cancelled by another process (an operator's ``POST
    _tasks/<id>/_cancel``, or the rerun of a reindex that took this one's lapsed lock over)
    ends "completed" with ``canceled`` in its answer and no failure: what it did not copy
    yet is missing. Taken for a complete copy, the run would catch up by date only, swap,
    and serve an index without those documents (and record a completed copy a rerun
    resumes from)."""
    v1, v2 = f"{index_prefix}items-v1", f"{index_prefix}items-v2"
    mapper = make_mapper(ItemV1, configure=True)
    mapper.repository(ItemV1).add([ItemV1(n=i) for i in range(20)], consistency="wait")
    gate = cluster.tasks.hold()  # the copy's task waits at the proxy
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(reindex(make_mapper(ItemV2, url=cluster.url), ItemV2))
        except BaseException as exc:  # reported below
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert gate.wait_reached()
        with Elasticsearch(cluster.url, request_timeout=30) as operator:
            listed = operator.tasks.list(actions="indices:data/write/reindex", detailed=True)
            tasks = [t for node in listed["nodes"].values() for t in node["tasks"]]
            assert len(tasks) == 1
            operator.tasks.cancel(task_id=tasks[0])
    finally:
        thread.join(120)
    assert len(outcome) == 1 and isinstance(outcome[0], ReindexError), outcome
    assert "cancel" in str(outcome[0])
    assert sorted(es_client.indices.get_alias(name=f"{index_prefix}items").body) == [v1]
    assert not es_client.indices.exists(index=v2)
