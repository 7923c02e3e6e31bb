"""The job runner's loop and a snapshot's wait, without a server (fake jobs, fake client)."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from elastic_transport import ConnectionError as TransportConnectionError

from esmapper.jobs import JobResult, JobRunner, SnapshotJob, SnapshotProgress
from esmapper.jobs.base import Job, JobContext


class Scripted(Job):
    """A job whose runs return the scripted results (or raise the scripted exceptions)."""

    name = "scripted"

    def __init__(self, *outcomes: Any, during: Any = None) -> None:
        self.outcomes = list(outcomes)
        self.during = during
        self.runs = 0

    @property
    def lock_name(self) -> None:
        return None

    def execute(self, ctx: JobContext) -> JobResult:
        self.runs += 1
        if self.during is not None:
            self.during(self.runs, ctx)
        outcome = self.outcomes.pop(0) if len(self.outcomes) > 1 else self.outcomes[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome  # type: ignore[no-any-return]


OK = JobResult.success("scripted", "fine")
SECOND = dt.timedelta(seconds=0.01)


def test_a_stop_during_a_run_lets_the_run_finish_then_ends_the_loop() -> None:
    stop = threading.Event()
    after: list[str] = []

    def stop_during_second_run(run: int, ctx: JobContext) -> None:
        if run == 2:
            stop.set()  # like SIGTERM arriving while the job runs
            ctx.checkpoint()  # not a cancel: the job goes on
            after.append("finished")

    first = Scripted(OK, during=stop_during_second_run)
    second = Scripted(OK)
    runner = JobRunner([first, second], interval=SECOND)
    ended = runner.loop(stop)
    assert (ended.reason, ended.runs, ended.exit_code) == ("stopped", 2, 0)
    assert after == ["finished"] and second.runs == 2  # the run in progress was completed


def test_repeated_failures_give_up_with_a_non_zero_exit() -> None:
    job = Scripted(RuntimeError("boom"))
    ended = JobRunner([job], interval=SECOND, max_failures=3).loop(threading.Event())
    assert (ended.reason, ended.runs, ended.failures_in_a_row, ended.exit_code) == (
        "failed", 3, 3, 1,
    )  # fmt: skip
    assert ended.last is not None and ended.last.failed[0].message == "RuntimeError: boom"


def test_a_success_resets_the_failure_count_and_skips_are_not_failures() -> None:
    stop = threading.Event()
    skipped = JobResult("scripted", OK.status, "held", skipped=True)
    results = [ValueError("a"), ValueError("b"), OK, ValueError("c"), skipped, skipped]

    def stop_at_the_end(run: int, ctx: JobContext) -> None:
        if run == len(results):
            stop.set()

    job = Scripted(*results, during=stop_at_the_end)
    ended = JobRunner([job], interval=SECOND, max_failures=3).loop(stop)
    assert (ended.reason, ended.runs, ended.failures_in_a_row) == ("stopped", 6, 0)


def test_a_cancel_stops_the_job_in_progress_and_the_loop() -> None:
    cancel = threading.Event()

    def cancel_then_check(run: int, ctx: JobContext) -> None:
        cancel.set()
        ctx.checkpoint()

    later = Scripted(OK)
    ended = JobRunner([Scripted(OK, during=cancel_then_check), later], interval=SECOND).loop(
        threading.Event(), cancel
    )
    assert (ended.reason, ended.exit_code, later.runs) == ("cancelled", 3, 0)
    assert ended.last is not None and ended.last.results[0].is_cancelled


def test_runner_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="interval"):
        JobRunner([], interval=dt.timedelta(0))
    with pytest.raises(ValueError, match="max_failures"):
        JobRunner([], max_failures=0)


class FakeSnapshots:
    """The ``snapshot`` namespace of a client: ``states`` are returned by successive GETs."""

    def __init__(self, states: list[Any]) -> None:
        self.states = states
        self.created = 0

    def get_repository(self, name: str) -> Any:
        return Body({name: {"type": "fs"}})

    def create(self, **kwargs: Any) -> Any:
        self.created += 1
        return Body({"accepted": True})

    def get(self, repository: str, snapshot: str) -> Any:
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        if isinstance(state, BaseException):
            raise state
        body = {"snapshot": snapshot, "state": state, "indices": ["a"], "shards": {"total": 4}}
        return Body({"snapshots": [body]})

    def status(self, repository: str, snapshot: str) -> Any:
        return Body({"snapshots": [{"shards_stats": {"done": 1, "total": 4}}]})


class Body:
    def __init__(self, body: Any) -> None:
        self.body = body


class FakeClient:
    def __init__(self, states: list[Any]) -> None:
        self.snapshot = FakeSnapshots(states)

    def options(self, **kwargs: Any) -> FakeClient:
        return self


class FakeMapper:
    def __init__(self, states: list[Any]) -> None:
        self.client = FakeClient(states)
        self.models: list[type] = []
        self.index_prefix = "p-"

    def clock(self) -> dt.datetime:
        return dt.datetime(2026, 3, 10, tzinfo=dt.timezone.utc)


def _job(states: list[Any], **kwargs: Any) -> tuple[SnapshotJob, list[SnapshotProgress]]:
    seen: list[SnapshotProgress] = []
    mapper: Any = FakeMapper(states)
    job = SnapshotJob(mapper, "r", progress=seen.append, sleep=lambda s: None, **kwargs)
    job.__class__ = type("Unlocked", (SnapshotJob,), {"lock_name": None})
    return job, seen


def test_the_wait_polls_until_the_snapshot_ends_and_reports_progress() -> None:
    job, seen = _job(["IN_PROGRESS", "IN_PROGRESS", "SUCCESS"])
    result = job.run()
    assert result.is_success, result
    assert [(p.state, p.done, p.total) for p in seen] == [
        ("IN_PROGRESS", 1, 4), ("IN_PROGRESS", 1, 4), ("SUCCESS", 4, 4),
    ]  # fmt: skip
    assert result.details.indices == ("a",)
    assert job.targets() == ["p-esmapper-migrations"]  # no models: the state index only


def test_a_partial_snapshot_fails_the_run() -> None:
    job, _ = _job(["PARTIAL"])
    result = job.run()
    assert result.is_failed and "ended PARTIAL" in result.message


def test_polling_errors_are_retried_then_fail_the_run() -> None:
    lost = TransportConnectionError("down")
    job, _ = _job([lost, lost, "SUCCESS"])
    assert job.run().is_success
    job, _ = _job([lost])
    result = job.run()
    assert result.is_failed and "failed 6 times in a row" in result.message


def test_the_wait_stops_at_the_timeout_or_when_cancelled() -> None:
    job, _ = _job(["IN_PROGRESS"], timeout=dt.timedelta(seconds=0.5), poll_interval=1.0)
    result = job.run()
    assert result.is_failed and "still runs after 500ms" in result.message
    cancel = threading.Event()
    job, _ = _job(["IN_PROGRESS"])
    job._sleep = lambda s: cancel.set()
    result = job.run(cancel)
    assert result.is_cancelled and "goes on on the server" in result.message
