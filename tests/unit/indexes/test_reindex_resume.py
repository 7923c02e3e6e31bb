"""The decision of a rerun (:mod:`esmapper.indexes._reindex_resume`): reuse the new index an
interrupted reindex left (and from where) or copy everything; the record and the
fingerprint it rests on; stopping a killed run's pass. No server."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import unquote

import pytest
from elastic_transport import ConnectionError, ConnectionTimeout

import esmapper as em
from esmapper.errors import IndexConfigurationError
from esmapper.indexes._reindex_resume import (
    Record,
    Resume,
    decide,
    fingerprint,
    stop_leftover_passes,
)
from esmapper.indexes.spec import IndexSpec

START = dt.datetime(2026, 12, 5, 3, 0, tzinfo=dt.timezone.utc)
SOURCE, UUID, PRINT = "p-items-v1", "uuid-1", "f" * 32


def _record(**changes: Any) -> Record:
    values: dict[str, Any] = {
        "source": SOURCE,
        "source_uuid": UUID,
        "fingerprint": PRINT,
        "started": START,
        "seq_nos": {"0": 41},
        "completed": True,
    }
    return Record(**{**values, **changes})


def _decide(record: Record | None, *, dated: bool = True, **now: Any) -> Resume | str:
    current: dict[str, Any] = {"source": SOURCE, "source_uuid": UUID, "fingerprint": PRINT}
    return decide(record, dated=dated, **{**current, **now})


def test_a_completed_copy_of_a_dated_model_resumes_from_its_start() -> None:
    resume = _decide(_record())
    assert isinstance(resume, Resume) and resume.mode == "since" and resume.started == START
    assert resume.describe() == "documents changed since 2026-12-05T03:00:00Z"


def test_an_interrupted_copy_or_a_model_without_dates_compares_every_document() -> None:
    # the interrupted pass wrote in ``_doc`` order: no date floor is safe
    interrupted = _decide(_record(completed=False))
    assert isinstance(interrupted, Resume) and interrupted.mode == "compare"
    assert "the copy interrupted at its start" in interrupted.describe()
    undated = _decide(_record(), dated=False)
    assert isinstance(undated, Resume) and undated.mode == "compare"
    assert "the copy completed at its start" in undated.describe()


@pytest.mark.parametrize(
    ("record", "now", "reason"),
    [
        (None, {}, "carries no record"),
        (_record(source="p-items-v0"), {}, "copied from p-items-v0, not p-items-v1"),
        (_record(), {"source_uuid": "uuid-2"}, "deleted and created again"),
        (_record(), {"source_uuid": None}, "uuid of p-items-v1 is unknown"),
        (_record(source_uuid=None), {}, "uuid of p-items-v1 is unknown"),
        (_record(), {"fingerprint": "0" * 32}, "script, pipeline, mapping or settings changed"),
    ],
)
def test_anything_else_is_a_full_copy_with_its_reason(
    record: Record | None, now: dict[str, Any], reason: str
) -> None:
    decided = _decide(record, **now)
    assert isinstance(decided, str) and reason in decided


def test_the_record_round_trips_through_meta_and_garbage_is_no_record() -> None:
    record = _record(completed=False, seq_nos=None)
    assert Record.from_meta(record.to_meta()) == record
    assert Record.from_meta(_record().to_meta()) == _record()
    assert Record.from_meta(None) is None
    assert Record.from_meta({"source": SOURCE}) is None  # a format this version cannot read
    assert Record.from_meta({**_record().to_meta(), "started": "yesterday"}) is None
    assert Record.from_meta({**_record().to_meta(), "completed": "yes"}).completed is False  # type: ignore[union-attr]


class ItemV2(em.Document):
    class Index:
        name = "unit-resume"
        version = 2

    n: int = em.field(em.Long(), default=0)


class ItemV2Text(em.Document):
    class Index:
        name = "unit-resume"
        version = 2

    n: str = em.field(em.Text(), default="")


class ItemV2Sharded(em.Document):
    class Index:
        name = "unit-resume"
        version = 2
        settings = {"number_of_shards": 3}  # noqa: RUF012

    n: int = em.field(em.Long(), default=0)


class ItemV2Piped(em.Document):
    class Index:
        name = "unit-resume"
        version = 2
        pipeline = {"processors": [{"set": {"field": "tag", "value": "a"}}]}  # noqa: RUF012

    n: int = em.field(em.Long(), default=0)


class ItemV2PipedOther(em.Document):
    class Index:
        name = "unit-resume"
        version = 2
        pipeline = {"processors": [{"set": {"field": "tag", "value": "b"}}]}  # noqa: RUF012

    n: int = em.field(em.Long(), default=0)


def _print(model: type, script: str | None = None) -> str:
    spec = IndexSpec(model.__esmapper__, "p-")  # type: ignore[attr-defined]
    dest: dict[str, Any] = {"index": "p-unit-resume-v2"}
    if spec.pipeline is not None:
        dest["pipeline"] = spec.pipeline.name
    return fingerprint(spec, script, dest)


def test_the_fingerprint_changes_with_the_script_mapping_settings_and_pipeline() -> None:
    base = _print(ItemV2)
    assert base == _print(ItemV2)  # stable across calls (and processes: no hash seed)
    others = [
        _print(ItemV2, "ctx._source.n += 1"),
        _print(ItemV2Text),
        _print(ItemV2Sharded),
        _print(ItemV2Piped),
        _print(ItemV2PipedOther),
    ]
    assert len({base, *others}) == 6


class _Tasks:
    """``client.tasks`` of a cluster where one killed run's pass writes into ``p-items-v2``
    and stops ``stops_after`` listings after its cancel (``None``: never)."""

    def __init__(self, stops_after: int | None) -> None:
        self.stops_after, self.listings = stops_after, 0
        self.cancelled: list[str] = []

    def list(self, **params: Any) -> Any:
        if params.get("detailed") is False:  # the client's probe: the server keeps tasks
            return _Body({"nodes": {}})
        assert params == {"actions": "indices:data/write/reindex", "detailed": True}
        self.listings += 1
        running = not self.cancelled or self.stops_after is None or self.stops_after > 0
        if self.cancelled and self.stops_after is not None:
            self.stops_after -= 1
        tasks = {
            "n:7": {"description": "reindex from [p-items-v1] to [p-items-v2]"},
            "n:8": {"description": "reindex from [p-items-v1] to [p-items-v2]",
                    "parent_task_id": "n:7"},  # a slice: cancelled with its parent
            "n:9": {"description": "reindex from [p-other-v1] to [p-other-v2]"},
        }  # fmt: skip
        return _Body({"nodes": {"n": {"tasks": tasks if running else {"n:9": tasks["n:9"]}}}})

    def cancel(self, *, task_id: str) -> Any:
        self.cancelled.append(task_id)
        return _Body({"nodes": {}})


class _Body:
    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body


class _Client:
    """The client's generic ``perform_request``, which the tasks API goes through."""

    def __init__(self, tasks: _Tasks) -> None:
        self.tasks = tasks

    def options(self, **_: Any) -> _Client:
        return self

    def perform_request(self, method: str, path: str, **kwargs: Any) -> Any:
        if (method, path) == ("GET", "/_tasks"):
            return self.tasks.list(**(kwargs.get("params") or {}))
        assert method == "POST" and path.startswith("/_tasks/") and path.endswith("/_cancel")
        task = unquote(path.removeprefix("/_tasks/").removesuffix("/_cancel"))
        return self.tasks.cancel(task_id=task)

    def info(self) -> Any:
        return _Body({"version": {"number": "8.19.0", "build_hash": "8b0b1f2"}})


def test_a_killed_runs_pass_is_cancelled_and_waited_for() -> None:
    tasks, naps = _Tasks(stops_after=2), list[float]()
    found = stop_leftover_passes(_Client(tasks), "p-items-v2", sleep=naps.append)  # type: ignore[arg-type]
    assert found == 1 and tasks.cancelled == ["n:7"]  # not the slice, not another index's
    assert naps == [0.5, 0.5]


def test_a_pass_that_does_not_stop_refuses_the_run() -> None:
    clock = iter(range(0, 1000, 10))
    with pytest.raises(IndexConfigurationError, match=r"n:7 of an interrupted run still write"):
        stop_leftover_passes(
            _Client(_Tasks(stops_after=None)),  # type: ignore[arg-type]
            "p-items-v2",
            wait=60,
            sleep=lambda _: None,
            monotonic=lambda: float(next(clock)),
        )


def test_nothing_to_stop_sends_only_the_listing() -> None:
    tasks = _Tasks(stops_after=0)
    assert stop_leftover_passes(_Client(tasks), "p-nothing-v2") == 0  # type: ignore[arg-type]
    assert (tasks.listings, tasks.cancelled) == (1, [])


class _Partial(_Tasks):
    """A cluster where the node running the killed run's pass does not answer the listing
    (status 200 with ``node_failures``: Elasticsearch lists the nodes that answered) for
    ``silent`` listings, or the listing fails outright (``error``)."""

    def __init__(self, silent: int, error: Exception | None = None) -> None:
        super().__init__(stops_after=0)
        self.silent, self.error = silent, error

    def list(self, **params: Any) -> Any:
        if params.get("detailed") is False:
            return super().list(**params)
        if self.error is not None:
            self.listings += 1
            raise self.error
        if self.silent > 0:
            self.silent -= 1
            self.listings += 1
            failure = {"type": "failed_node_exception", "reason": "Failed node [n]"}
            return _Body({"node_failures": [failure], "nodes": {}})
        return super().list(**params)


def test_a_listing_a_node_did_not_answer_proves_nothing() -> None:
    """The killed run's pass may run on the node that did not answer: not "nothing runs"."""
    tasks, naps = _Partial(silent=2), list[float]()
    found = stop_leftover_passes(_Client(tasks), "p-items-v2", sleep=naps.append)  # type: ignore[arg-type]
    assert (found, tasks.cancelled) == (1, ["n:7"])  # seen once the node answered
    clock = iter(range(0, 1000, 10))
    with pytest.raises(IndexConfigurationError, match=r"did not answer"):
        stop_leftover_passes(
            _Client(_Partial(silent=1000)),  # type: ignore[arg-type]
            "p-items-v2",
            wait=60,
            sleep=lambda _: None,
            monotonic=lambda: float(next(clock)),
        )


def test_a_listing_that_fails_refuses_the_run() -> None:
    """A server that keeps tasks and cannot list them now (a timeout, 503): a killed run's
    pass may be writing, the run must not go on as if none were."""
    clock = iter(range(0, 1000, 10))
    with pytest.raises(IndexConfigurationError, match=r"could not be listed"):
        stop_leftover_passes(
            _Client(_Partial(0, error=ConnectionTimeout("timed out"))),  # type: ignore[arg-type]
            "p-items-v2",
            wait=60,
            sleep=lambda _: None,
            monotonic=lambda: float(next(clock)),
        )


class _LostCancel(_Tasks):
    """The first cancel's answer is lost before it reached the server: the task runs on."""

    def __init__(self) -> None:
        super().__init__(stops_after=0)
        self.lost = 1

    def cancel(self, *, task_id: str) -> Any:
        if self.lost:
            self.lost -= 1
            raise ConnectionError("connection reset")
        return super().cancel(task_id=task_id)


def test_a_cancel_that_did_not_go_through_is_sent_again() -> None:
    """Cancelling is idempotent: a task still listed whose cancel was not accepted (a
    dropped connection, ``node_failures``) is cancelled again rather than waited on."""
    tasks, clock = _LostCancel(), iter(range(0, 1000, 10))
    found = stop_leftover_passes(
        _Client(tasks),  # type: ignore[arg-type]
        "p-items-v2",
        sleep=lambda _: None,
        monotonic=lambda: float(next(clock)),
    )
    assert (found, tasks.cancelled) == (1, ["n:7"])
