"""Reindex script composition and the pass runner against a fake client (no server)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from elastic_transport import ApiResponseMeta, HttpHeaders, NodeConfig
from elasticsearch import BadRequestError, NotFoundError

from esmapper import _server_tasks
from esmapper.indexes import ReindexError, ReindexResult, compose_reindex_script
from esmapper.indexes._reindex_pass import PassStalled, Throttle, run_pass
from tests.unit.tasks_api import answer_tasks_request


def test_compose_reindex_script() -> None:
    scripts = {2: "A;", 3: "B;", 5: "C;"}
    assert compose_reindex_script(scripts, 1, 1) is None
    assert compose_reindex_script({}, 1, 2) is None
    assert compose_reindex_script(scripts, 1, 2) == "A;"  # one script: sent as is
    assert compose_reindex_script(scripts, 2, 3) == "B;"  # at or below current: skipped
    assert compose_reindex_script(scripts, 1, 5) == (
        "void f000(def ctx) { A; }\nvoid f001(def ctx) { B; }\nvoid f002(def ctx) { C; }\n"
        "f000(ctx); f001(ctx); f002(ctx); "
    )
    assert compose_reindex_script(scripts, 3, 5) == "C;"


def _meta(status: int) -> ApiResponseMeta:
    return ApiResponseMeta(
        status=status,
        http_version="1.1",
        headers=HttpHeaders(),
        duration=0.0,
        node=NodeConfig("http", "localhost", 9200),
    )


class Response(dict[str, Any]):
    @property
    def body(self) -> dict[str, Any]:
        return self


class FakeTasks:
    def __init__(self, statuses: list[dict[str, Any]] | None) -> None:
        self.statuses = statuses

    def list(self, **_: Any) -> Response:
        return Response(nodes={})

    def get(self, task_id: str) -> Response:
        if self.statuses is None:
            raise NotFoundError("no task", _meta(404), {"error": {"type": "resource_not_found"}})
        return Response(self.statuses.pop(0))


class FakeClient:
    """Answers _reindex with a task (or synchronously) and _tasks with ``statuses``;
    ``statuses=None``: a server that keeps no tasks (noida-db's root answer)."""

    def __init__(self, statuses: list[dict[str, Any]] | None, sync: Any = None) -> None:
        self.tasks = FakeTasks(statuses)
        self.sync = sync
        self.calls: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str]] = []

    def options(self, **_: Any) -> FakeClient:
        return self

    def perform_request(
        self, method: str, path: str, *, params: Any = None, headers: Any = None
    ) -> Response:
        return answer_tasks_request(self.tasks, method, path, params)  # type: ignore[no-any-return]

    def info(self) -> Response:
        build = "noida" if self.tasks.statuses is None else "0" * 40
        return Response(version={"build_hash": build})

    def delete(self, index: str, id: str) -> Response:
        self.deleted.append((index, id))
        return Response(result="deleted")

    def reindex(self, **kwargs: Any) -> Response:
        self.calls.append(kwargs)
        if kwargs["wait_for_completion"]:
            if isinstance(self.sync, Exception):
                raise self.sync
            return Response(self.sync)
        return Response(task="node:1")


DONE = {"total": 3, "created": 2, "updated": 0, "version_conflicts": 1, "failures": []}


def test_a_pass_polls_its_task_and_reports_progress() -> None:
    statuses = [
        {"completed": False, "task": {"status": {"total": 3, "created": 1}}},
        {
            "completed": True,
            "task": {"status": {"total": 3, "created": 2, "version_conflicts": 1}},
            "response": DONE,
        },
    ]
    client = FakeClient(statuses)
    seen: list[tuple[int, int]] = []
    outcome = run_pass(
        client,  # type: ignore[arg-type]
        {"source": {"index": "a"}, "dest": {"index": "b"}},  # type: ignore[arg-type]
        progress=lambda d, t: seen.append((d, t)),
        sleep=lambda _: None,
    )
    assert (outcome.total, outcome.copied, outcome.version_conflicts) == (3, 2, 1)
    assert seen == [(1, 3), (3, 3)]
    assert client.calls[-1]["conflicts"] == "proceed"


def test_a_completed_task_leaves_no_result_in_dot_tasks() -> None:
    done = {"completed": True, "task": {"status": {"total": 3}}, "response": DONE}
    client = FakeClient([done])
    run_pass(client, {"source": {"index": "a"}, "dest": {"index": "b"}}, progress=lambda d, t: None)  # type: ignore[arg-type]
    assert client.deleted == [(".tasks", "node:1")]


def test_without_tasks_a_pass_runs_synchronously() -> None:
    client = FakeClient(None, sync=DONE)
    seen: list[tuple[int, int]] = []
    body = {"source": {"index": "a"}, "dest": {"index": "b"}}
    outcome = run_pass(client, body, progress=lambda d, t: seen.append((d, t)))  # type: ignore[arg-type]
    assert outcome.copied == 2 and seen == [(0, 0), (3, 3)]
    assert outcome.exact  # one attempt: its figures are the pass's
    # the probe is read-only: the only _reindex sent is the pass, synchronously
    assert [c["wait_for_completion"] for c in client.calls] == [True]
    run_pass(client, body, progress=lambda d, t: None)  # type: ignore[arg-type]
    assert [c["wait_for_completion"] for c in client.calls] == [True, True]
    assert client.deleted == []  # no task, no result


def test_request_errors_and_task_errors_become_failures() -> None:
    error = BadRequestError(
        "illegal_argument_exception",
        _meta(400),
        {
            "error": {
                "type": "illegal_argument_exception",
                "reason": "failed to execute script",
                "caused_by": {
                    "type": "script_exception",
                    "reason": "runtime error",
                    "caused_by": {"type": "npe", "reason": "x is null"},
                },
            }
        },
    )
    client = FakeClient(None, sync=error)
    outcome = run_pass(
        client,  # type: ignore[arg-type]
        {"source": {"index": "a"}, "dest": {"index": "b"}},  # type: ignore[arg-type]
        progress=lambda d, t: None,
    )
    assert outcome.failures == (
        {
            "status": 400,
            "type": "illegal_argument_exception",
            "reason": "failed to execute script: x is null",
        },
    )
    statuses = [{"completed": True, "error": {"type": "script_exception", "reason": "boom"}}]
    outcome = run_pass(
        FakeClient(statuses),  # type: ignore[arg-type]
        {"source": {"index": "a"}, "dest": {"index": "b"}},  # type: ignore[arg-type]
        progress=lambda d, t: None,
    )
    assert outcome.failures[0]["type"] == "script_exception"


def test_reindex_error_carries_the_result() -> None:
    failure = {
        "index": "x-v2",
        "id": "7",
        "status": 400,
        "cause": {"type": "document_parsing_exception", "reason": "bad n"},
    }
    result = ReindexResult("Item", "x", "x-v1", "x-v2", "failed", failures=(failure,))
    error = ReindexError("reindex failed", result=result)
    assert (error.index, error.ids, error.error_type, error.reason) == (
        "x-v2",
        ("7",),
        "document_parsing_exception",
        "bad n",
    )
    assert error.result is result and error.failures == [failure]


@pytest.fixture(autouse=True)
def _forget_task_support() -> None:
    _server_tasks._HAS_TASKS.clear()


class Clock:
    """A monotonic clock the fake sleep moves forward."""

    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


class CancellingTasks(FakeTasks):
    def __init__(self, statuses: list[dict[str, Any]]) -> None:
        super().__init__(statuses)
        self.cancelled: list[str] = []

    def cancel(self, task_id: str) -> Response:
        self.cancelled.append(task_id)
        self.statuses = [{"completed": True, "task": {}, "response": {"canceled": "by user"}}]
        return Response()


def test_throttle_goes_into_every_pass_request() -> None:
    client = FakeClient(None, sync=DONE)
    body = {"source": {"index": "a", "query": {"match_all": {}}}, "dest": {"index": "b"}}
    throttle = Throttle(batch_size=50, requests_per_second=2.5)
    run_pass(client, body, progress=lambda d, t: None, throttle=throttle)  # type: ignore[arg-type]
    sent = client.calls[-1]
    assert sent["source"] == {"index": "a", "query": {"match_all": {}}, "size": 50}
    assert sent["requests_per_second"] == 2.5
    assert body["source"] == {"index": "a", "query": {"match_all": {}}}  # not changed
    run_pass(client, body, progress=lambda d, t: None)  # type: ignore[arg-type]
    assert "size" not in client.calls[-1]["source"]
    assert "requests_per_second" not in client.calls[-1]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"batch_size": 0}, ValueError),
        ({"batch_size": -5}, ValueError),
        ({"batch_size": 1.5}, TypeError),
        ({"batch_size": True}, TypeError),
        ({"requests_per_second": 0}, ValueError),
        ({"requests_per_second": -1.0}, ValueError),
        ({"requests_per_second": float("nan")}, ValueError),
        ({"requests_per_second": float("inf")}, ValueError),
        ({"requests_per_second": "10"}, TypeError),
        ({"stall_timeout": timedelta(0)}, ValueError),
    ],
)
def test_bad_throttle_values_are_refused_when_built(options: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        Throttle(**options)


def test_the_stall_limit_follows_im16() -> None:
    assert Throttle().stall_seconds == 600
    assert Throttle(requests_per_second=10).stall_seconds == 600  # 3 * 1000 / 10 = 300
    assert Throttle(requests_per_second=1).stall_seconds == 3000  # 3 * 1000 / 1
    assert Throttle(batch_size=500, requests_per_second=0.5).stall_seconds == 3000
    assert Throttle(stall_timeout=timedelta(seconds=5)).stall_seconds == 5


def test_a_pass_without_progress_is_cancelled_and_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    moving = {"completed": False, "task": {"status": {"total": 100, "created": 40}}}
    stuck = [{"completed": False, "task": {"status": {"total": 100, "created": 42}}}] * 30
    client = FakeClient([moving, *stuck])
    client.tasks = tasks = CancellingTasks([moving, *stuck])
    clock = Clock()
    with pytest.raises(PassStalled) as caught:
        run_pass(
            client,  # type: ignore[arg-type]
            {"source": {"index": "a"}, "dest": {"index": "b"}},
            progress=lambda d, t: None,
            throttle=Throttle(stall_timeout=timedelta(seconds=10)),
            sleep=clock.sleep,
            monotonic=clock,
            jitter=lambda seconds: seconds,  # the waits as computed
        )
    stalled = caught.value
    assert (stalled.task, stalled.done, stalled.total) == ("node:1", 42, 100)
    assert stalled.cancelled
    assert str(stalled) == (
        'reindex "a" -> "b" task node:1 made no progress for 10s at 42 of 100 documents (cancelled)'
    )
    assert tasks.cancelled == ["node:1"]
    # 40 -> 42 after the first poll (0.1 s), then polls 0.2, 0.4, 0.8, 1, 1 ... s apart
    # until 10 s at 42
    assert clock.now == pytest.approx(0.1 + 1.4 + 9)
    warned = [r.getMessage() for r in caplog.records if "made no progress" in r.getMessage()]
    assert warned == [
        'reindex "a" -> "b" task node:1 made no progress for 5s at 42 of 100 documents; it '
        "counts as stalled after 10s"
    ]


def test_a_slow_pass_that_progresses_is_not_stalled() -> None:
    statuses = [
        {"completed": False, "task": {"status": {"total": 9, "created": i}}} for i in range(9)
    ]
    statuses.append({"completed": True, "task": {"status": {"total": 9}}, "response": DONE})
    clock = Clock()
    outcome = run_pass(
        FakeClient(statuses),  # type: ignore[arg-type]
        {"source": {"index": "a"}, "dest": {"index": "b"}},
        progress=lambda d, t: None,
        throttle=Throttle(stall_timeout=timedelta(seconds=1.5)),
        poll_interval=1.0,
        sleep=clock.sleep,
        monotonic=clock,
    )
    assert outcome.copied == 2


def test_a_pass_whose_task_someone_else_cancelled_is_a_failed_pass() -> None:
    """The rule is the task runner's (TaskCancelled); the pass keeps what the task copied
    and adds a ``task_cancelled`` failure, which fails the run."""
    cut = {**DONE, "total": 10, "canceled": "by user request"}
    client = FakeClient([{"completed": True, "task": {"status": cut}, "response": cut}])
    body = {"source": {"index": "a"}, "dest": {"index": "b"}}
    outcome = run_pass(client, body, progress=lambda d, t: None, sleep=lambda s: None)  # type: ignore[arg-type]
    assert (outcome.total, outcome.created, outcome.version_conflicts) == (10, 2, 1)
    assert outcome.failures == (
        {
            "status": None,
            "type": "task_cancelled",
            "reason": "its task was cancelled (by user request) before it copied every document",
        },
    )
