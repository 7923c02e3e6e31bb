"""The task runner (esmapper._server_tasks) against a fake client: how a request's start,
its task and its end are handled, whatever the server answers or fails to."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, ConnectionError, HttpHeaders, NodeConfig
from elasticsearch import ApiError, AuthorizationException, BadRequestError, NotFoundError

from esmapper import _server_tasks
from esmapper._server_tasks import (
    TaskCancelled,
    TaskLost,
    TaskStartUnknown,
    TaskTimedOut,
    TaskUnreachable,
    has_tasks,
    run_task,
)
from esmapper.errors import LockError
from tests.unit.tasks_api import answer_tasks_request

TASK = "node:7"
DONE = {"total": 3, "updated": 3, "failures": []}


def _meta(status: int) -> ApiResponseMeta:
    return ApiResponseMeta(
        status=status,
        http_version="1.1",
        headers=HttpHeaders(),
        duration=0.0,
        node=NodeConfig("http", "localhost", 9200),
    )


def error(cls: type[ApiError], status: int, body: Any) -> ApiError:
    return cls("error", _meta(status), body)


class Response(dict[str, Any]):
    @property
    def body(self) -> dict[str, Any]:
        return self


class Transport:
    """What the probe's answer is remembered by (``client.options()`` views share it)."""


class FakeTasks:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def list(self, **kwargs: Any) -> Response:
        self.client.calls.append(("list", kwargs))
        if isinstance(self.client.listing, Exception):
            raise self.client.listing
        return Response(self.client.listing)

    def get(self, task_id: str) -> Response:
        self.client.calls.append(("get", task_id))
        state = self.client.states.pop(0) if self.client.states else {"completed": False}
        if isinstance(state, Exception):
            raise state
        return Response(state)

    def cancel(self, task_id: str) -> Response:
        self.client.calls.append(("cancel", task_id))
        if self.client.cancel_error is not None:
            raise self.client.cancel_error
        if self.client.cancel_answer is not None:  # answered 200, maybe with failures
            return Response(self.client.cancel_answer)
        self.client.states = [{"completed": True, "response": {**DONE, "canceled": "by user"}}]
        return Response(nodes={})


class FakeClient:
    """Starts update-by-query with ``start(kwargs)``, answers the tasks API from ``states``
    (the next poll's answer each; an exception is raised) and ``listing``."""

    def __init__(
        self,
        start: Callable[[dict[str, Any]], Any] = lambda kw: {"task": TASK},
        *,
        states: list[Any] | None = None,
        listing: Any = None,
        root: str = "0" * 40,
    ) -> None:
        self.transport = Transport()
        self.tasks = FakeTasks(self)
        self.start = start
        self.states: list[Any] = list(states or [])
        self.listing = listing if listing is not None else {"nodes": {}}
        self.root = root
        self.calls: list[tuple[str, Any]] = []
        self.opaque: str | None = None
        self.cancel_error: Exception | None = None
        self.cancel_answer: dict[str, Any] | None = None
        self.delete_error: Exception | None = None

    def options(self, **kwargs: Any) -> FakeClient:
        self.opaque = kwargs.get("opaque_id", self.opaque)
        return self

    def perform_request(
        self, method: str, path: str, *, params: Any = None, headers: Any = None
    ) -> Response:
        return answer_tasks_request(self.tasks, method, path, params)  # type: ignore[no-any-return]

    def info(self) -> Response:
        return Response(version={"build_hash": self.root})

    def update_by_query(self, **kwargs: Any) -> Response:
        self.calls.append(("start", kwargs))
        answer = self.start(kwargs)
        if isinstance(answer, BaseException):
            raise answer
        return Response(answer)

    def delete(self, index: str, id: str) -> Response:
        self.calls.append(("delete", (index, id)))
        if self.delete_error is not None:
            raise self.delete_error
        return Response(result="deleted")

    def sent(self, kind: str) -> list[Any]:
        return [args for name, args in self.calls if name == kind]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _forget() -> Iterator[None]:
    _server_tasks._HAS_TASKS.clear()
    yield
    _server_tasks._HAS_TASKS.clear()


def run(client: FakeClient, **options: Any) -> Any:
    clock = Clock()
    options.setdefault("sleep", clock.sleep)
    options.setdefault("monotonic", clock)
    return run_task(client, "update_by_query", {"index": "x"}, what="patch", **options)  # type: ignore[arg-type]


def completed(**response: Any) -> dict[str, Any]:
    return {"completed": True, "task": {"status": response}, "response": response}


# -- the probe -------------------------------------------------------------------------


def test_the_probe_is_read_only_and_remembered_per_transport() -> None:
    client = FakeClient()
    assert has_tasks(client)  # type: ignore[arg-type]
    assert has_tasks(client.options(request_timeout=3))  # type: ignore[arg-type]
    assert [name for name, _ in client.calls] == ["list"]
    assert client.calls[0][1]["actions"] == (
        "indices:data/write/reindex,indices:data/write/update/byquery,"
        "indices:data/write/delete/byquery"
    )


@pytest.mark.parametrize(
    ("listing", "root"),
    [
        (error(AuthorizationException, 403, {"error": {"type": "security_exception"}}), "0" * 40),
        (error(BadRequestError, 400, {"error": {"type": "illegal_argument_exception"}}), "0" * 40),
        ({"nodes": {}}, "noida"),
    ],
    ids=["no monitor privilege", "no tasks API", "noida-db"],
)
def test_a_server_whose_tasks_cannot_be_followed_runs_synchronously(
    listing: Any, root: str
) -> None:
    client = FakeClient(lambda kw: DONE, listing=listing, root=root)
    result = run(client)
    assert result.response == DONE and result.task is None
    assert [kw["wait_for_completion"] for kw in client.sent("start")] == [True]


def test_a_lost_answer_without_tasks_may_still_be_running() -> None:
    client = FakeClient(lambda kw: ConnectionError("lost"), root="noida")
    with pytest.raises(TaskStartUnknown) as caught:
        run(client)
    assert not caught.value.listed and len(client.sent("start")) == 1


# -- the start -------------------------------------------------------------------------


def test_a_start_answered_without_a_task_is_the_result() -> None:
    client = FakeClient(lambda kw: DONE)  # noida-db's by-query ignores the parameter
    assert run(client).response == DONE
    assert client.sent("start")[0]["wait_for_completion"] is False
    assert client.sent("get") == []


def test_a_start_stopped_on_failures_is_the_result_other_errors_are_raised() -> None:
    body = {"total": 2, "updated": 1, "failures": [{"id": "a", "status": 400}]}
    failed = FakeClient(lambda kw: error(BadRequestError, 400, body))
    assert run(failed).failures == [{"id": "a", "status": 400}]
    refused = error(AuthorizationException, 403, {"error": {"type": "security_exception"}})
    with pytest.raises(AuthorizationException):
        run(FakeClient(lambda kw: refused))


def test_a_lost_start_is_followed_when_its_task_runs() -> None:
    client = FakeClient(lambda kw: ConnectionError("lost"), states=[completed(**DONE)])
    mine = {"node": "node", "id": 7, "headers": {"X-Opaque-Id": ""}}
    slice_of_it = {"node": "node", "id": 8, "parent_task_id": TASK}
    client.listing = {"nodes": {"node": {"tasks": {TASK: mine, "node:8": slice_of_it}}}}

    def listed(**_: Any) -> Response:
        for info in (mine, slice_of_it):
            info["headers"] = {"X-Opaque-Id": client.opaque or ""}
        return Response(client.listing)

    client.tasks.list = listed  # type: ignore[method-assign]
    has_tasks(client)  # type: ignore[arg-type]
    result = run(client)
    assert (result.task, result.response) == (TASK, DONE)
    assert len(client.sent("start")) == 1 and client.sent("get") == [TASK]


def test_a_lost_start_of_which_no_task_runs_is_not_resent() -> None:
    other = {"node": "node", "id": 3, "headers": {"X-Opaque-Id": "someone-else"}}
    client = FakeClient(
        lambda kw: ConnectionError("lost"), listing={"tasks": [other]}
    )  # group_by=none
    with pytest.raises(TaskStartUnknown, match="no task of it runs") as caught:
        run(client)
    assert caught.value.listed and len(client.sent("start")) == 1


def test_ctrl_c_during_the_start_cancels_the_task_it_started() -> None:
    client = FakeClient(lambda kw: KeyboardInterrupt())
    has_tasks(client)  # type: ignore[arg-type]

    def listed(**_: Any) -> Response:
        info = {"node": "node", "id": 7, "headers": {"X-Opaque-Id": client.opaque}}
        return Response(nodes={"node": {"tasks": {TASK: info}}})

    client.tasks.list = listed  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        run(client)
    assert client.sent("cancel") == [TASK]


# -- following the task ----------------------------------------------------------------


def test_a_task_is_polled_to_its_end_and_its_result_deleted() -> None:
    running = {"completed": False, "task": {"status": {"total": 3, "updated": 1}}}
    client = FakeClient(states=[running, completed(**DONE)])
    seen: list[tuple[int, int]] = []
    result = run(client, progress=lambda d, t: seen.append((d, t)))
    assert (result.task, result.count("updated")) == (TASK, 3)
    assert seen == [(1, 3), (3, 3)]
    assert client.sent("delete") == [(".tasks", TASK)]


def test_a_task_that_failed_gives_its_error() -> None:
    failed = {"completed": True, "error": {"type": "script_exception", "reason": "boom"}}
    result = run(FakeClient(states=[failed]))
    assert result.error == {"type": "script_exception", "reason": "boom"} and not result.response


def test_a_result_that_cannot_be_deleted_is_left_there() -> None:
    client = FakeClient(states=[completed(**DONE)])
    client.delete_error = error(AuthorizationException, 403, {"error": "security_exception"})
    assert run(client).response == DONE


def test_a_task_unknown_to_its_server_is_lost_and_the_server_remembered() -> None:
    gone = error(NotFoundError, 404, {"error": {"type": "resource_not_found_exception"}})
    client = FakeClient(states=[gone])
    with pytest.raises(TaskLost):
        run(client)
    assert not has_tasks(client)  # type: ignore[arg-type]


def test_a_task_whose_status_cannot_be_read_is_not_started_again() -> None:
    client = FakeClient(states=[ConnectionError("down")] * 6)
    client.cancel_error = ConnectionError("down")
    with pytest.raises(TaskUnreachable, match="may still be running"):
        run(client)
    assert len(client.sent("start")) == 1 and client.sent("cancel") == [TASK]


def test_the_call_timeout_cancels_the_task_and_reads_how_far_it_got() -> None:
    client = FakeClient()  # never completes by itself
    with pytest.raises(TaskTimedOut) as caught:
        run(client, timeout=5)
    timed_out = caught.value
    assert timed_out.cancelled and timed_out.seconds == 5
    assert timed_out.result is not None and timed_out.result.response["canceled"] == "by user"
    assert client.sent("cancel") == [TASK] and client.sent("delete") == [(".tasks", TASK)]


def test_a_task_cancelled_by_someone_else_is_not_taken_for_a_complete_one() -> None:
    """Elasticsearch ends a task another process cancelled (``POST _tasks/<id>/_cancel``)
    "completed", with ``canceled`` and no failure, after part of the documents."""
    cut = {"total": 5, "updated": 2, "noops": 1, "failures": [], "canceled": "by user request"}
    client = FakeClient(states=[completed(**cut)])
    with pytest.raises(TaskCancelled) as caught:
        run(client)
    cancelled = caught.value
    assert (cancelled.task, cancelled.reason, cancelled.result.response) == (
        TASK,
        "by user request",
        cut,
    )
    assert (cancelled.done, cancelled.total) == (3, 5)
    message = str(cancelled)
    assert "patch: its task node:7 was cancelled by someone else (by user request)" in message
    assert "3 of 5 documents (updated 2, noops 1); the rest was not processed" in message
    assert client.sent("cancel") == [] and client.sent("delete") == [(".tasks", TASK)]


def test_an_answer_without_a_task_that_says_canceled_is_a_cancelled_task() -> None:
    cut = {"total": 4, "deleted": 1, "failures": [], "canceled": "by user request"}
    with pytest.raises(TaskCancelled, match=r"1 of 4 documents \(deleted 1\)") as synchronous:
        run(FakeClient(lambda kw: cut))  # answered synchronously
    assert synchronous.value.task is None
    client = FakeClient(lambda kw: cut, root=_server_tasks._NOIDA_BUILD)  # keeps no tasks
    with pytest.raises(TaskCancelled):
        run(client)
    assert client.sent("start")[0]["wait_for_completion"] is True


def test_a_task_that_cannot_be_cancelled_is_said_to_still_run() -> None:
    client = FakeClient()
    client.cancel_error = error(AuthorizationException, 403, {"error": "security_exception"})
    with pytest.raises(TaskTimedOut, match="NOT cancelled and may still be running") as caught:
        run(client, timeout=2)
    assert caught.value.result is None and client.sent("delete") == []


def test_ctrl_c_while_following_cancels_the_task() -> None:
    client = FakeClient()
    waits: list[float] = []

    def ctrl_c(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(client, sleep=ctrl_c)
    assert client.sent("cancel") == [TASK]
    assert client.sent("delete") == [(".tasks", TASK)]  # its end was read after the cancel


def test_a_cancel_answered_200_with_node_failures_did_not_cancel() -> None:
    """Elasticsearch answers a cancel that could not reach the task's node with status 200
    and ``node_failures``: the task may still run, and the error says so."""
    client = FakeClient()
    client.cancel_answer = {
        "node_failures": [
            {
                "type": "failed_node_exception",
                "reason": "Failed node [n1]",
                "node_id": "n1",
                "caused_by": {"type": "node_not_connected_exception", "reason": "gone"},
            }
        ],
        "nodes": {},
    }
    with pytest.raises(TaskTimedOut, match="NOT cancelled and may still be running") as caught:
        run(client, timeout=2)
    assert not caught.value.cancelled and caught.value.result is None


def test_a_cancel_of_a_task_that_already_ended_reads_its_end() -> None:
    """A cancel that finds the task gone (``resource_not_found_exception``): it ended; its
    final state is read (and its result deleted)."""
    client = FakeClient()
    client.cancel_answer = {
        "node_failures": [
            {
                "type": "failed_node_exception",
                "caused_by": {"type": "resource_not_found_exception", "reason": "not found"},
            }
        ]
    }
    original = client.tasks.cancel

    def ended(task_id: str) -> Response:
        answer = original(task_id)
        client.states = [completed(**DONE)]
        return answer

    client.tasks.cancel = ended  # type: ignore[method-assign]
    with pytest.raises(TaskTimedOut) as caught:
        run(client, timeout=2)
    assert caught.value.cancelled and caught.value.result is not None
    assert client.sent("delete") == [(".tasks", TASK)]


def test_a_sliced_task_whose_finished_slices_do_not_move_is_not_stalled() -> None:
    """A sliced reindex's status counts only its finished slices: no movement for longer
    than ``stall`` is not a stall; it runs to its end."""
    sliced = {"completed": False, "task": {"status": {"total": 10, "slices": [None, None]}}}
    client = FakeClient(states=[sliced] * 40 + [completed(**DONE)])
    result = run(client, stall=5)
    assert result.response == DONE and client.sent("cancel") == []


# -- jitter and the log lines of failed polls ---------------------------------------------


def test_every_wait_is_jittered_so_followers_do_not_poll_in_lockstep() -> None:
    client = FakeClient(
        states=[ConnectionError("down"), ConnectionError("down"), completed(total=1)]
    )
    slept: list[float] = []
    seen: list[float] = []

    def jitter(seconds: float) -> float:
        seen.append(seconds)
        return seconds * 1.25

    run(client, sleep=slept.append, jitter=jitter)
    # the first poll after 0.1 s, then the back-off of the two failures: 1 s, 2 s
    assert seen == [0.1, 1.0, 2.0]
    assert slept == [pytest.approx(s * 1.25) for s in seen]


def test_the_default_jitter_stays_within_a_quarter_either_way() -> None:
    drawn = [_server_tasks.jittered(8.0) for _ in range(500)]
    assert all(6.0 <= d <= 10.0 for d in drawn)
    assert len({round(d, 6) for d in drawn}) > 1  # not one fixed value


def test_failed_polls_are_logged_and_giving_up_says_how_many_in_a_row(
    caplog: pytest.LogCaptureFixture,
) -> None:
    client = FakeClient(states=[ConnectionError("down")] * 6)
    client.cancel_error = ConnectionError("down")
    with caplog.at_level(logging.WARNING, logger="esmapper.tasks"), pytest.raises(TaskUnreachable):
        run(client)
    messages = [r.getMessage() for r in caplog.records]
    errors = [m for m in messages if m.startswith("error getting task status while running patch")]
    assert len(errors) == 6 and "6 in a row" in errors[-1]
    assert f"failed to get the status 6 times in a row for patch task {TASK}" in messages


# -- interrupting a task another thread follows ----------------------------------------


def _polled(client: FakeClient) -> threading.Event:
    """Set once ``client`` answered its first poll."""
    polled = threading.Event()
    get = client.tasks.get

    def first_poll(task_id: str) -> Response:
        answer = get(task_id)
        polled.set()
        return answer

    client.tasks.get = first_poll  # type: ignore[method-assign]
    return polled


def test_a_task_followed_inside_interruptible_is_cancelled_once_its_event_is_set() -> None:
    """Ctrl-C reaches the main thread only: the event is how it stops a task another thread
    follows, as Ctrl-C in that thread would (the task cancelled, its end read)."""
    client = FakeClient()
    es: Any = client
    polled = _polled(client)
    interrupt = threading.Event()
    raised: list[BaseException] = []

    def follow() -> None:
        try:
            with _server_tasks.interruptible(interrupt):
                run_task(es, "update_by_query", {"index": "x"}, what="patch", poll_interval=0.01)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=follow)
    thread.start()
    assert polled.wait(10)
    interrupt.set()
    thread.join(10)

    assert not thread.is_alive()
    assert [type(exc) for exc in raised] == [KeyboardInterrupt]
    assert client.sent("cancel") == [TASK]
    assert client.sent("delete") == [(".tasks", TASK)]  # its end was read after the cancel


def test_outside_interruptible_the_default_wait_is_time_sleep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    es: Any = FakeClient(states=[completed(**DONE)])

    run_task(es, "update_by_query", {"index": "x"}, what="patch", jitter=lambda s: s)

    assert slept == [0.1]


def test_a_caller_that_stops_following_cancels_the_task() -> None:
    """The progress callback raises (a reindex whose heartbeat found its lock lost: another
    run took over): the task would go on writing unseen, into an index the new holder now
    builds, so it is cancelled and its end read, as for Ctrl-C."""
    client = FakeClient()

    def progress(done: int, total: int) -> None:
        raise LockError("the lock reindex:items was lost")

    with pytest.raises(LockError):
        run(client, progress=progress)
    assert client.sent("cancel") == [TASK]
    assert client.sent("delete") == [(".tasks", TASK)]  # its end was read after the cancel
