"""By-query writes on a cluster that keeps tasks (the ClusterProxy's tasks API): ``patch_all``
and ``remove_all`` run their ``_update_by_query``/``_delete_by_query`` as one task each,
followed until it ends whatever the client's request timeout, cancelled when the call's
``timeout=`` passes or on Ctrl-C, never run twice at once, and leave no result in
``.tasks``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing.cluster import ClusterProxy
from tests.integration.conftest import MakeMapper


class Tally(em.Document):
    class Index:
        name = "tallies"

    n: int = em.field(em.Integer(), default=0)
    group: str = em.field(em.Keyword(), default="")


SCRIPT = em.ScriptPatch("ctx._source.n += 1")


@pytest.fixture
def raw(es_url: str) -> Iterator[Elasticsearch]:
    with Elasticsearch(es_url) as client:
        yield client


@pytest.fixture
def tallies(cluster: ClusterProxy, make_mapper: MakeMapper) -> em.Repository[Tally]:
    """Five tallies (group "g", n=0) behind the cluster proxy, on a client whose request
    timeout (2 s) is shorter than the slow tasks of these tests."""
    mapper = make_mapper(Tally, url=cluster.url, configure=True, request_timeout=2)
    repo = mapper.repository(Tally)
    repo.add([Tally(id=f"t{i}", group="g") for i in range(5)], consistency="wait")
    cluster.reset_counts()
    return repo


def values(raw: Elasticsearch, repo: em.Repository[Any]) -> list[int]:
    raw.indices.refresh(index=repo.spec.alias)
    hits = raw.search(index=repo.spec.alias, size=100, sort=["_doc"])["hits"]["hits"]
    return sorted(int(h["_source"]["n"]) for h in hits)


def test_patch_all_runs_as_one_task_longer_than_the_request_timeout(
    cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    cluster.tasks.delay(4.0)  # the task takes longer than the client's 2 s
    assert tallies.patch_all(None, SCRIPT) == 5
    assert (cluster.tasks.started, cluster.tasks.runs, cluster.tasks.stored) == (1, 1, 0)
    assert values(raw, tallies) == [1] * 5


def test_remove_all_runs_as_one_task_longer_than_the_request_timeout(
    cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    cluster.tasks.delay(4.0)
    assert tallies.remove_all("group:g", consistency="immediate") == 5
    assert (cluster.tasks.started, cluster.tasks.runs, cluster.tasks.peak) == (1, 1, 1)
    assert cluster.tasks.stored == 0
    assert values(raw, tallies) == []


@pytest.mark.parametrize("call", ["patch_all", "remove_all"])
def test_the_call_timeout_cancels_the_task(
    call: str, cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    gate = cluster.tasks.hold()  # the task never gets to run before the call gives up
    with pytest.raises(em.OutcomeUnknownError, match=r"timeout \(1s\) passed.*cancelled"):
        if call == "patch_all":
            tallies.patch_all(None, SCRIPT, timeout=1)
        else:
            tallies.remove_all(timeout=1)
    assert cluster.tasks.cancels == 1
    gate.release()
    assert cluster.tasks.wait_idle()
    assert values(raw, tallies) == [0] * 5  # the cancelled task never ran
    assert cluster.tasks.runs == 1 and cluster.tasks.stored == 0


@pytest.mark.parametrize("call", ["patch_all", "remove_all"])
def test_ctrl_c_cancels_the_task(
    call: str,
    cluster: ClusterProxy,
    tallies: em.Repository[Tally],
    raw: Elasticsearch,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = cluster.tasks.hold()
    real_sleep, caller = time.sleep, threading.current_thread()
    pressed: list[float] = []

    def ctrl_c_while_waiting(seconds: float) -> None:
        if threading.current_thread() is caller and not pressed:
            pressed.append(seconds)
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", ctrl_c_while_waiting)
    with pytest.raises(KeyboardInterrupt):
        if call == "patch_all":
            tallies.patch_all(None, SCRIPT)
        else:
            tallies.remove_all()
    monkeypatch.undo()
    assert pressed and cluster.tasks.cancels == 1
    gate.release()
    assert cluster.tasks.wait_idle()
    assert values(raw, tallies) == [0] * 5
    assert cluster.tasks.runs == 1 and cluster.tasks.stored == 0


def test_remove_all_runs_again_for_conflicts_only_after_the_first_run_ended(
    cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    cluster.tasks.delay(4.0)
    cluster.tasks.report_conflicts(2)  # another writer changed 2 matches meanwhile
    assert tallies.remove_all("group:g") == 5
    assert cluster.tasks.runs == 2 and cluster.tasks.peak == 1
    assert cluster.tasks.stored == 0 and values(raw, tallies) == []


@pytest.mark.parametrize("call", ["patch_all", "remove_all"])
def test_a_start_whose_answer_was_lost_is_followed_not_resent(
    call: str, cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    """The start reached the server and its task runs, but the answer never came back: the
    task is found by its X-Opaque-Id among the running ones and followed."""
    cluster.tasks.delay(3.0)
    verb = "update" if call == "patch_all" else "delete"
    cluster.drop_connection(path=rf"/_{verb}_by_query$", after_forwarding=True)
    if call == "patch_all":
        assert tallies.patch_all(None, SCRIPT) == 5
        assert values(raw, tallies) == [1] * 5
    else:
        assert tallies.remove_all() == 5
        assert values(raw, tallies) == []
    assert cluster.pending_faults == 0
    assert (cluster.tasks.runs, cluster.tasks.stored) == (1, 0)


def test_the_counts_of_a_patch_all_task_are_reported(
    cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    cluster.tasks.report_conflicts(2)
    with pytest.raises(em.VersionConflictError) as caught:
        tallies.patch_all(None, SCRIPT)
    assert caught.value.reason == "2 version conflicts, 5 updated"
    assert cluster.tasks.started == 1 and cluster.tasks.stored == 0


def test_the_failures_of_a_patch_all_task_are_reported(
    cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    """The server stops an update-by-query at a document it refuses and reports it in the
    task's ``response.failures``."""
    bad = em.ScriptPatch(
        "if (ctx._id == 't3') { ctx._source.n = 'three' } else { ctx._source.n += 1 }"
    )
    with pytest.raises(em.BulkWriteError) as caught:
        tallies.patch_all(None, bad)
    (failure,) = caught.value.failures
    assert (failure.id, failure.op, failure.status) == ("t3", "update", 400)
    assert failure.error_type == "document_parsing_exception"
    assert "update-by-query stopped on 1 failure(s)" in str(caught.value)
    assert cluster.tasks.started == 1 and cluster.tasks.stored == 0


def test_a_user_without_access_to_dot_tasks_still_gets_the_result(
    cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    cluster.tasks.forbid_results()  # DELETE /.tasks/_doc/<id> answers 403
    assert tallies.patch_all(None, SCRIPT) == 5
    assert cluster.count(r"^/\.tasks/_doc/", method="DELETE") == 1
    assert cluster.tasks.stored == 1  # left there: nothing else to do


def test_by_query_writes_work_on_a_server_without_tasks(
    make_mapper: MakeMapper, raw: Elasticsearch
) -> None:
    """The local server keeps no tasks: the requests are synchronous, as before."""
    repo = make_mapper(Tally, configure=True).repository(Tally)
    repo.add([Tally(id=f"s{i}", group="g") for i in range(3)], consistency="wait")
    assert repo.patch_all(None, SCRIPT) == 3
    assert repo.remove_all("n:1", consistency="immediate") == 3
    assert values(raw, repo) == []


@pytest.mark.filterwarnings("ignore::elasticsearch.exceptions.GeneralAvailabilityWarning")
@pytest.mark.parametrize("call", ["patch_all", "remove_all"])
def test_a_task_cancelled_by_someone_else_is_not_taken_for_a_complete_one(
    call: str, cluster: ClusterProxy, tallies: em.Repository[Tally], raw: Elasticsearch
) -> None:
    """An operator (or another process) cancels the task: Elasticsearch ends it
    "completed", with ``canceled`` in its answer and no failure, after part of the matches.
    The call raises instead of reporting success, and does not run it again by itself."""
    gate = cluster.tasks.hold()  # the task waits at the proxy until it is cancelled
    outcome: list[BaseException | int] = []

    def run() -> None:
        try:
            if call == "patch_all":
                outcome.append(tallies.patch_all(None, SCRIPT))
            else:
                outcome.append(tallies.remove_all())
        except BaseException as exc:  # reported below
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert gate.wait_reached()
        verb = "update" if call == "patch_all" else "delete"
        with Elasticsearch(cluster.url, request_timeout=30) as operator:
            listed = operator.tasks.list(actions=f"indices:data/write/{verb}/byquery")
            tasks = [t for node in listed["nodes"].values() for t in node["tasks"]]
            assert len(tasks) == 1
            operator.tasks.cancel(task_id=tasks[0])
    finally:
        thread.join(120)
    (error,) = outcome
    assert isinstance(error, em.OutcomeUnknownError), error
    assert error.error_type == "task_cancelled"
    assert f"{call} on Tally: its task {tasks[0]} was cancelled by someone else" in str(error)
    assert "after 0 of 0 documents; the rest was not processed" in str(error)
    again = "run it again only if" if call == "patch_all" else "safe to run again"
    assert again in str(error)
    assert (cluster.tasks.runs, cluster.tasks.cancels, cluster.tasks.stored) == (1, 1, 0)
    assert values(raw, tallies) == [0] * 5  # nothing written, and nothing run again
    if call == "patch_all":
        assert tallies.patch_all(None, SCRIPT) == 5
        assert values(raw, tallies) == [1] * 5
    else:
        assert tallies.remove_all() == 5
        assert values(raw, tallies) == []
