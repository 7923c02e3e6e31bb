"""The ClusterProxy's tasks API (esmapper.testing._real_tasks): requests sent with
``wait_for_completion=false`` answer with a task at once and run in the background, the
task can be followed, listed, cancelled, and its result read and deleted from ``.tasks``,
with the shapes Elasticsearch answers with."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from elastic_transport import ConnectionError as LostConnection
from elasticsearch import AuthorizationException, Elasticsearch, NotFoundError

from esmapper.testing._real_tasks import NODE
from esmapper.testing.cluster import ClusterProxy


@pytest.fixture
def client(cluster: ClusterProxy) -> Iterator[Elasticsearch]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "technical preview", system index access
        with Elasticsearch(cluster.url, request_timeout=30) as through:
            yield through


@pytest.fixture
def index(es_client: Elasticsearch, index_prefix: str) -> str:
    name = f"{index_prefix}counters"
    es_client.indices.create(index=name, mappings={"properties": {"n": {"type": "integer"}}})
    for i in range(3):
        es_client.index(index=name, id=f"c{i}", document={"n": 0})
    es_client.indices.refresh(index=name)
    return name


def bump(client: Elasticsearch, index: str, **params: Any) -> Any:
    return client.update_by_query(
        index=index, script={"source": "ctx._source.n += 1"}, conflicts="proceed", **params
    )


def test_a_task_answers_at_once_runs_and_keeps_its_result_until_deleted(
    cluster: ClusterProxy, client: Elasticsearch, index: str
) -> None:
    gate = cluster.tasks.hold()
    task = bump(client, index, wait_for_completion=False, refresh=True)["task"]
    assert task.startswith(f"{NODE}:")
    assert gate.wait_reached()
    running = client.tasks.get(task_id=task).body
    assert running["completed"] is False
    info = running["task"]
    assert (info["node"], info["action"], info["cancellable"], info["cancelled"]) == (
        NODE,
        "indices:data/write/update/byquery",
        True,
        False,
    )
    assert info["description"].startswith(f"update-by-query [{index}]")
    assert info["status"]["updated"] == 0

    gate.release()
    assert cluster.tasks.wait_idle()
    done = client.tasks.get(task_id=task).body
    assert done["completed"] is True
    assert (done["response"]["total"], done["response"]["updated"]) == (3, 3)
    assert done["task"]["status"]["updated"] == 3
    assert cluster.tasks.stored == 1
    stored = client.get(index=".tasks", id=task)
    assert stored["_source"]["response"]["updated"] == 3
    assert "system indices" in stored.meta.headers.get("Warning", "")

    assert client.delete(index=".tasks", id=task)["result"] == "deleted"
    assert cluster.tasks.stored == 0
    with pytest.raises(NotFoundError, match="isn't running and hasn't stored its results"):
        client.tasks.get(task_id=task)
    with pytest.raises(NotFoundError):
        client.delete(index=".tasks", id=task)


def test_a_cancelled_task_that_had_not_started_writes_nothing(
    cluster: ClusterProxy, client: Elasticsearch, es_client: Elasticsearch, index: str
) -> None:
    cluster.tasks.hold()
    task = bump(client, index, wait_for_completion=False)["task"]
    cancelled = client.tasks.cancel(task_id=task).body
    assert cancelled["nodes"][NODE]["tasks"][task]["cancelled"] is True
    assert cluster.tasks.wait_idle()
    done = client.tasks.get(task_id=task).body
    assert done["response"]["canceled"] == "by user request"
    assert done["response"]["updated"] == 0 and done["task"]["cancelled"] is True
    assert es_client.search(index=index, query={"term": {"n": 1}})["hits"]["total"]["value"] == 0
    # cancelling again: the task is not running any more
    again = client.tasks.cancel(task_id=task).body
    assert again["nodes"] == {}
    assert again["node_failures"][0]["caused_by"]["type"] == "resource_not_found_exception"
    assert cluster.tasks.cancels == 1


def test_running_requests_are_listed_with_their_opaque_id(
    cluster: ClusterProxy, client: Elasticsearch, index: str
) -> None:
    gate = cluster.tasks.hold()
    task = bump(client.options(opaque_id="mine"), index, wait_for_completion=False)["task"]
    assert gate.wait_reached()
    action = "indices:data/write/update/byquery"
    listed = client.tasks.list(actions=action, detailed=True).body
    info = listed["nodes"][NODE]["tasks"][task]
    assert info["headers"] == {"X-Opaque-Id": "mine"} and "status" in info
    flat = client.tasks.list(actions="*byquery", group_by="none").body["tasks"]
    assert [(t["id"], "status" in t) for t in flat] == [(int(task.split(":")[1]), False)]
    assert client.tasks.list(actions="*reindex").body["nodes"] == {}
    gate.release()
    assert cluster.tasks.wait_idle()
    assert client.tasks.list(actions=action).body["nodes"] == {}


def test_a_synchronous_request_waits_like_a_task_and_stores_nothing(
    cluster: ClusterProxy, client: Elasticsearch, index: str
) -> None:
    cluster.tasks.report_conflicts(2)
    answer = bump(client, index, refresh=True).body
    assert (answer["updated"], answer["version_conflicts"]) == (3, 2)
    assert (cluster.tasks.started, cluster.tasks.runs, cluster.tasks.stored) == (0, 1, 0)


def test_a_failing_task_keeps_its_error_and_a_refused_document_its_failures(
    cluster: ClusterProxy, client: Elasticsearch, index: str, index_prefix: str
) -> None:
    missing = client.delete_by_query(
        index=f"{index_prefix}nothing", query={"match_all": {}}, wait_for_completion=False
    )["task"]
    refused = client.update_by_query(
        index=index, script={"source": "ctx._source.n = 'x'"}, wait_for_completion=False
    )["task"]
    assert cluster.tasks.wait_idle()
    assert client.tasks.get(task_id=missing)["error"]["type"] == "index_not_found_exception"
    failures = client.tasks.get(task_id=refused)["response"]["failures"]
    assert failures[0]["cause"]["type"] == "document_parsing_exception"


def test_the_start_of_a_task_can_lose_its_answer_after_the_task_started(
    cluster: ClusterProxy, client: Elasticsearch, es_client: Elasticsearch, index: str
) -> None:
    cluster.drop_connection(path=r"/_update_by_query$", after_forwarding=True)
    with pytest.raises(LostConnection):
        bump(client.options(max_retries=0), index, wait_for_completion=False, refresh=True)
    assert cluster.tasks.wait_idle()
    assert cluster.tasks.started == 1 and cluster.tasks.stored == 1
    assert es_client.search(index=index, query={"term": {"n": 1}})["hits"]["total"]["value"] == 3


def test_results_can_be_refused_and_the_root_names_a_real_build(
    cluster: ClusterProxy, client: Elasticsearch, index: str
) -> None:
    assert client.info()["version"]["build_hash"] != "noida"
    cluster.tasks.forbid_results()
    task = bump(client, index, wait_for_completion=False)["task"]
    assert cluster.tasks.wait_idle()
    with pytest.raises(AuthorizationException, match="security_exception"):
        client.delete(index=".tasks", id=task)
    assert cluster.tasks.stored == 1
