"""Running ``_reindex``, ``_update_by_query`` and ``_delete_by_query`` as server tasks: the
one place that starts such a request, polls it, cancels it, reads its result and deletes
that result (the reindex passes and the by-query writes of ``patch_all``/``remove_all``
all go through :func:`run_task`).

Elasticsearch does not cancel these requests when the client gives up (a request timeout,
a dropped connection, Ctrl-C): sent with ``wait_for_completion=true`` they keep running on
the server after the client saw a timeout. So, where the server keeps tasks
(:func:`has_tasks`), a request is started with ``wait_for_completion=false`` and the task
it answers with is followed:

- ``GET /_tasks/<id>`` after 0.1 s, then at intervals doubling up to ``poll_interval``
  (1 s); ``progress(done, total)`` is called with the task's status each time. Transport
  errors while polling are retried with back-off (1 s doubling, capped at 30 s), up to 6
  in a row, then the task is cancelled (best effort) and :class:`TaskUnreachable` raised
  (it may still run: it is never started again). Each failed poll logs ``error getting
  task status while running <what> ...`` (WARNING), giving up logs ``failed to get the
  status N times in a row for <what> task <id>`` (ERROR). Every wait is jittered by
  ±25% (``jitter``): many processes following tasks of one cluster (a fleet's
  reindexes, by-query writes failing for the same reason) do not poll in lockstep.
- When the call's ``timeout`` passes, or the task's processed count does not move for
  ``stall`` seconds, or the caller is interrupted (``KeyboardInterrupt``, e.g. Ctrl-C), or
  its ``progress`` callback raises (a reindex whose lock was found lost: another run took
  over, the task must not write on into what that run builds), the
  task is cancelled (``POST /_tasks/<id>/_cancel``), its final state is read (up to 30 s)
  and :class:`TaskTimedOut` / :class:`TaskStalled` is raised, or the
  ``KeyboardInterrupt`` (the callback's exception) re-raised.
- A task that completed with ``canceled`` in its answer, which this call did not cancel
  (someone else did: an operator's or another process's ``POST /_tasks/<id>/_cancel``),
  raises :class:`TaskCancelled` with how far it got: Elasticsearch ends it "completed",
  with no failure, after processing part of the documents, and taking it for a complete
  run would report success for a partial write. So does such an answer of a synchronous
  run. This is the one place that rule lives: every caller gets it.
- Once the task completed, its result document is deleted from the ``.tasks`` system index
  (``DELETE /.tasks/_doc/<id>``), best effort: a user without access to system indices gets
  403 (or 404): logged at DEBUG, nothing else.
- The start request is sent once (no transport retries) with an ``X-Opaque-Id`` of its own.
  When its answer is lost (an unknown outcome) the running tasks of that action are listed
  (``GET /_tasks?actions=<action>&detailed=true``) and the one carrying that id is followed;
  none there raises :class:`TaskStartUnknown` (``listed=True``): it never started, or it
  already ended. Nothing is resent blindly: the caller decides (a delete by query or a
  reindex pass may run again, a script update may not). Ctrl-C during the start cancels
  the task found that way.
- A start answered without a ``task`` (a server that ran the request synchronously, as
  noida-db does for ``_update_by_query``/``_delete_by_query``) is the result. A task the
  server has no record of at the first poll raises :class:`TaskLost`, and the client is
  remembered as keeping no tasks.

Where the server keeps no tasks (or this user may not read them) the request is sent with
``wait_for_completion=true`` under ``sync_timeout`` (else the client's request timeout); an
unknown outcome then raises :class:`TaskStartUnknown` with ``listed=False`` (nothing could
tell whether it still runs).

A by-query or reindex answer with a failure status (Elasticsearch answers 400/409/... when
it stopped on failures) carries the counts and ``failures``: it is returned as the result.
Any other error status of the start is raised as the client's :class:`~elasticsearch.ApiError`.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Final, Literal
from urllib.parse import quote

import attrs
from elastic_transport import TransportError
from elasticsearch import ApiError, Elasticsearch, NotFoundError

from esmapper._transport import is_unknown_outcome, once, unwarned

__all__ = [
    "ACTIONS",
    "Kind",
    "Listing",
    "TaskCancelled",
    "TaskError",
    "TaskLost",
    "TaskResult",
    "TaskStalled",
    "TaskStartUnknown",
    "TaskTimedOut",
    "TaskUnreachable",
    "cancel_task",
    "forget",
    "has_tasks",
    "interruptible",
    "interruptible_sleep",
    "jittered",
    "run_task",
    "running_tasks",
]

log = logging.getLogger("esmapper.tasks")

Kind = Literal["reindex", "update_by_query", "delete_by_query"]

#: The task action of each request (what ``GET /_tasks?actions=`` filters on).
ACTIONS: Final[dict[Kind, str]] = {
    "reindex": "indices:data/write/reindex",
    "update_by_query": "indices:data/write/update/byquery",
    "delete_by_query": "indices:data/write/delete/byquery",
}
_COUNTS: Final = ("created", "updated", "deleted", "noops", "version_conflicts")
_MAX_POLL_ERRORS: Final = 6
_FIRST_POLL: Final = 0.1  # seconds before the first poll, doubled up to poll_interval
_FINAL_WAIT: Final = 30.0  # seconds to read the final state of a cancelled task
_JITTER: Final = 0.25  # each poll's wait is drawn from +/- this share of it


def jittered(seconds: float) -> float:
    """``seconds`` moved by a random share within +/-25%: a poll's wait."""
    return seconds * random.uniform(1 - _JITTER, 1 + _JITTER)


#: ``version.build_hash`` of noida-db, esmapper's local server: it answers
#: ``_reindex?wait_for_completion=false`` with a task id only after copying, and keeps no
#: record of it (the copy's counts and failures are lost). No read-only request tells it
#: apart from a cluster that keeps tasks, so it is recognised by its root answer.
_NOIDA_BUILD: Final = "noida"

#: Whether a client's server keeps tasks this client can read, per transport (the views
#: ``client.options(...)`` makes share it).
_HAS_TASKS: Final[weakref.WeakKeyDictionary[Any, bool]] = weakref.WeakKeyDictionary()


@attrs.frozen(slots=True)
class TaskResult:
    """How a request ended: ``response`` is its answer (``total``, ``created``,
    ``updated``, ``deleted``, ``noops``, ``version_conflicts``, ``failures``, and
    ``canceled`` for a cancelled task; empty when it failed as a whole), ``error`` the
    server's error object when it failed as a whole, ``task`` the task id (``None`` when
    the server answered synchronously)."""

    response: dict[str, Any] = attrs.field(factory=dict)
    error: dict[str, Any] | None = None
    task: str | None = None

    def count(self, key: str) -> int:
        """One figure of the answer (0 when absent)."""
        return int(self.response.get(key) or 0)

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The answer's ``failures`` (documents refused, shards that failed)."""
        return [f for f in self.response.get("failures") or () if isinstance(f, dict)]


class TaskError(Exception):
    """Base of the runner's own outcomes; ``task`` is the task id (``None`` if unknown)."""

    def __init__(self, message: str, *, task: str | None = None) -> None:
        super().__init__(message)
        self.task = task


class TaskStartUnknown(TaskError):
    """The start request's answer was lost (``cause``). ``listed``: the running tasks were
    listed and none is this request's (it never started or already ended; nothing runs);
    ``False``: nothing could tell (no tasks API), it may still be running."""

    def __init__(self, message: str, *, cause: TransportError, listed: bool) -> None:
        super().__init__(message)
        self.cause, self.listed = cause, listed


class TaskCancelled(TaskError):
    """The task was cancelled by someone else: an operator's or another process's ``POST
    /_tasks/<id>/_cancel`` (a reindex rerun stopping a lapsed run's pass), never this
    call's own cancels (its timeout, a stall, Ctrl-C raise the other errors). Elasticsearch
    ends such a task "completed", with ``canceled`` (``reason``) in its answer and no
    failure, having processed only part of the documents: ``result`` is that answer,
    ``done`` of ``total`` how far it got (which documents is not known). The rest was
    not processed: the call must be run again to finish it (its caller says whether that
    is safe)."""

    def __init__(self, what: str, result: TaskResult, reason: str) -> None:
        done, total = _done(result.response), result.count("total")
        counts = ", ".join(f"{k} {result.count(k):,}" for k in _COUNTS if result.count(k))
        super().__init__(
            f"{what}: its task {result.task} was cancelled by someone else ({reason}) after "
            f"{done:,} of {total:,} documents" + (f" ({counts})" if counts else "") + "; the "
            "rest was not processed",
            task=result.task,
        )
        self.result, self.reason = result, reason
        self.done, self.total = done, total


def _ended(result: TaskResult, what: str) -> TaskResult:
    """``result``, the end of a task this call did not cancel; one whose answer says
    ``canceled`` (someone else cancelled it) raises :class:`TaskCancelled`."""
    reason = result.response.get("canceled")
    if reason:
        log.warning("%s: its task %s was cancelled by someone else (%s)", what, result.task, reason)
        raise TaskCancelled(what, result, str(reason))
    return result


class TaskLost(TaskError):
    """The server answered with a task it has no record of: it may have run, may run."""


class TaskUnreachable(TaskError):
    """Polling the task failed too often in a row (``cause``); it may still be running."""

    def __init__(self, message: str, *, task: str, cause: BaseException) -> None:
        super().__init__(message, task=task)
        self.cause = cause


class TaskTimedOut(TaskError):
    """The call's ``timeout`` (``seconds``) passed: the task was cancelled (``cancelled``:
    whether the server accepted it); ``result`` is its final state when it was read."""

    def __init__(
        self, message: str, *, task: str, seconds: float, cancelled: bool, result: TaskResult | None
    ) -> None:
        super().__init__(message, task=task)
        self.seconds, self.cancelled, self.result = seconds, cancelled, result


class TaskStalled(TaskError):
    """A task made no progress for ``seconds``: it had processed ``done`` of ``total``
    documents; it was cancelled (``cancelled``: whether the server said so)."""

    def __init__(
        self, what: str, task: str, *, done: int, total: int, seconds: float, cancelled: bool
    ) -> None:
        state = "cancelled" if cancelled else "cancelling it failed; it may still run"
        super().__init__(
            f"{what} task {task} made no progress for {seconds:.0f}s at {done:,} of "
            f"{total:,} documents ({state})",
            task=task,
        )
        self.done, self.total = done, total
        self.seconds, self.cancelled = seconds, cancelled


_INTERRUPT = threading.local()  # ``event``: set when this thread's task is to be interrupted


@contextlib.contextmanager
def interruptible(event: threading.Event) -> Iterator[None]:
    """Within it, the current thread's task waits (the default ``sleep`` of
    :func:`run_task`) end in ``KeyboardInterrupt`` once ``event`` is set: the task is
    cancelled and its final state read, as when Ctrl-C reaches the thread following it.
    Ctrl-C reaches only the main thread: this is how it stops the tasks other threads
    follow (``reindex_outdated(max_parallel=)``). Sends nothing."""
    outer = getattr(_INTERRUPT, "event", None)
    _INTERRUPT.event = event
    try:
        yield
    finally:
        _INTERRUPT.event = outer


def interruptible_sleep(seconds: float) -> None:
    """:func:`time.sleep` (looked up when called), or, inside :func:`interruptible`, a
    wait on its event that raises ``KeyboardInterrupt`` once it is set (also the lock waits
    of a reindex: a cancelled worker does not wait out ``lock_wait``)."""
    event: threading.Event | None = getattr(_INTERRUPT, "event", None)
    if event is None:
        time.sleep(seconds)
    elif event.wait(seconds):
        raise KeyboardInterrupt(f"interrupted while waiting {seconds:.2f}s")


def _tasks_api(client: Elasticsearch, method: str, path: str, **params: Any) -> dict[str, Any]:
    """One request of the tasks API (``GET /_tasks``, ``GET /_tasks/<id>``, ``POST
    /_tasks/<id>/_cancel``), its JSON answer. The API is "technical preview" and its
    answers may warn about the ``.tasks`` system index: none of that is the caller's
    business, and the process's ``warnings`` filters are not ours to switch, so it is sent
    with the client's generic ``perform_request`` (``client.tasks.*`` warn on every call,
    client-side) through :func:`~esmapper._transport.unwarned` (the server's ``Warning``
    headers dropped). Raises what the client raises."""
    answer = unwarned(client).perform_request(
        method, path, params=params or None, headers={"accept": "application/json"}
    )
    return dict(answer.body)


def _key(client: Elasticsearch) -> Any:
    return getattr(client, "transport", client)


def forget(client: Elasticsearch) -> None:
    """Forget what :func:`has_tasks` learned about ``client``'s server."""
    _HAS_TASKS.pop(_key(client), None)


def has_tasks(client: Elasticsearch) -> bool:
    """Whether ``client``'s server keeps tasks this client can read; learned once per
    client with read-only requests: ``GET /_tasks?actions=<the three actions>`` (an error
    status: a user without the ``monitor`` privilege, or a server without the tasks API,
    so no) and ``GET /`` (noida-db keeps none, see ``_NOIDA_BUILD``). A transport error
    propagates (nothing learned). Later set to ``False`` when a task turns out unknown to
    its server (:class:`TaskLost`)."""
    key = _key(client)
    known = _HAS_TASKS.get(key)
    if known is None:
        known = _probe(client)
        _HAS_TASKS[key] = known
    return known


def _probe(client: Elasticsearch) -> bool:
    try:
        _tasks_api(client, "GET", "/_tasks", actions=",".join(ACTIONS.values()), detailed=False)
    except ApiError as exc:
        log.info(
            "the tasks of the server cannot be read (%s); by-query writes and reindex passes "
            "run synchronously, bounded by their request timeout",
            exc,
        )
        return False
    try:
        root = client.info().body
    except ApiError:
        return True  # not noida-db: it answers everyone
    version = root.get("version") if isinstance(root, dict) else None
    if isinstance(version, dict) and version.get("build_hash") == _NOIDA_BUILD:
        log.info("the server (noida-db) keeps no tasks; by-query and reindex run synchronously")
        return False
    return True


@attrs.define(slots=True)
class _Stall:
    """Watches a task's processed count: ``seen`` returns whether it stalled."""

    what: str
    limit: float
    monotonic: Callable[[], float]
    done: int = -1
    since: float = 0.0
    warned: bool = False

    def seen(self, task: str, done: int, total: int) -> bool:
        now = self.monotonic()
        if done != self.done:
            self.done, self.since, self.warned = done, now, False
            return False
        idle = now - self.since
        if idle >= self.limit:
            return True
        if idle >= self.limit / 2 and not self.warned:
            self.warned = True
            log.warning(
                "%s task %s made no progress for %.0fs at %d of %d documents; it counts "
                "as stalled after %.0fs",
                self.what, task, idle, done, total, self.limit,
            )  # fmt: skip
        return False


def _done(status: dict[str, Any]) -> int:
    return sum(int(status.get(k) or 0) for k in _COUNTS)


def _start_body(exc: ApiError) -> dict[str, Any] | None:
    """The by-query/reindex answer an error status carries (failures, counts), if any."""
    info = exc.info if isinstance(exc.info, dict) else None
    if info is not None and "failures" in info and "error" not in info:
        return info
    return None


def run_task(
    client: Elasticsearch,
    kind: Kind,
    params: dict[str, Any],
    *,
    what: str,
    progress: Callable[[int, int], None] | None = None,
    timeout: float | None = None,
    stall: float | None = None,
    sync_timeout: float | None = None,
    poll_interval: float = 1.0,
    sleep: Callable[[float], object] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    jitter: Callable[[float], float] = jittered,
) -> TaskResult:
    """Send ``POST .../_<kind>`` with ``params`` (the client method's keyword arguments,
    without ``wait_for_completion``) and return how it ended (see the module docstring).
    ``what`` names the request in logs and errors; ``progress(done, total)`` is called at
    each poll (and with ``(0, 0)`` before and the totals after a synchronous send);
    ``timeout``: seconds after which the task is cancelled (:class:`TaskTimedOut`);
    ``stall``: seconds without progress after which it is cancelled
    (:class:`TaskStalled`). ``sleep`` defaults to :func:`time.sleep`, looked up when
    called (inside :func:`interruptible`: a wait that its event interrupts); ``jitter``
    turns each poll's wait into the one slept (default :func:`jittered`, +/-25%). Raises
    the client's ``ApiError`` for a start refused with an error status (not a
    by-query/reindex answer), and the runner's :class:`TaskError` subclasses
    (:class:`TaskCancelled` for a task someone else cancelled)."""
    pause = sleep if sleep is not None else interruptible_sleep
    report = progress if progress is not None else (lambda done, total: None)
    started_at = monotonic()
    if not has_tasks(client):
        return _run_synchronously(
            client, kind, params, what=what, timeout=sync_timeout, report=report
        )
    opaque = f"esmapper-{uuid.uuid4().hex}"
    sender = getattr(once(client).options(opaque_id=opaque), kind)
    try:
        answer = sender(**params, wait_for_completion=False).body
    except ApiError as exc:
        body = _start_body(exc)
        if body is None:
            raise
        return _ended(TaskResult(response=body), what)
    except TransportError as exc:
        if not is_unknown_outcome(exc):
            raise
        try:
            task = _find(client, kind, opaque)
        except (ApiError, TransportError) as unlisted:
            raise TaskStartUnknown(
                f"{what}: the request was sent but no answer came back ({exc}), and the "
                f"running tasks could not be listed ({unlisted}): it may still be running",
                cause=exc,
                listed=False,
            ) from exc
        if task is None:
            raise TaskStartUnknown(
                f"{what}: the request was sent but no answer came back ({exc}), and no task "
                "of it runs: it never started, or it already ended",
                cause=exc,
                listed=True,
            ) from exc
        log.warning("%s: the start's answer was lost (%s); following its task %s", what, exc, task)
        answer = {"task": task}
    except KeyboardInterrupt:
        with contextlib.suppress(ApiError, TransportError):  # _cancel catches its own
            found = _find(client, kind, opaque)
            if found is not None:
                _cancel(client, found, what)
        raise
    if "task" not in answer:  # the server ran it synchronously (noida-db's by-query)
        return _ended(TaskResult(response=dict(answer)), what)
    poller = _Poller(
        client,
        str(answer["task"]),
        what=what,
        report=report,
        sleep=pause,
        monotonic=monotonic,
        poll_interval=poll_interval,
        jitter=jitter,
        deadline=None if timeout is None else started_at + timeout,
        timeout=timeout,
        stall=None if stall is None else _Stall(what, stall, monotonic),
    )
    try:
        return poller.run()
    except KeyboardInterrupt:
        log.warning("%s: interrupted; cancelling its task %s", what, poller.task)
        if _cancel(client, poller.task, what):
            poller.final()
        raise
    except TaskError:
        raise  # the poller's own outcomes: it cancelled what it had to (or someone else did)
    except Exception as exc:  # the caller's progress callback: it no longer follows
        log.warning("%s: no longer followed (%s); cancelling its task %s", what, exc, poller.task)
        if _cancel(client, poller.task, what):
            poller.final()
        raise


def _run_synchronously(
    client: Elasticsearch,
    kind: Kind,
    params: dict[str, Any],
    *,
    what: str,
    timeout: float | None,
    report: Callable[[int, int], None],
) -> TaskResult:
    single = once(client)
    if timeout is not None:
        single = single.options(request_timeout=timeout)
    report(0, 0)
    try:
        answer = getattr(single, kind)(**params, wait_for_completion=True).body
    except ApiError as exc:
        body = _start_body(exc)
        if body is None:
            raise
        answer = body
    except TransportError as exc:
        if not is_unknown_outcome(exc):
            raise
        raise TaskStartUnknown(
            f"{what}: the request was sent but no answer came back ({exc}); it may have run, "
            "partly or fully, and may still be running",
            cause=exc,
            listed=False,
        ) from exc
    result = TaskResult(response=dict(answer))
    report(result.count("total"), result.count("total"))
    return _ended(result, what)


def _find(client: Elasticsearch, kind: Kind, opaque: str) -> str | None:
    """The running task of ``kind`` started with ``X-Opaque-Id: opaque`` (not a slice of
    it), from ``GET /_tasks?actions=<action>&detailed=true``; ``None`` when none runs."""
    listing = _tasks_api(client, "GET", "/_tasks", actions=ACTIONS[kind], detailed=True)
    for task_id, info in _listed(listing):
        headers = info.get("headers") or {}
        ours = any(k.lower() == "x-opaque-id" and v == opaque for k, v in headers.items())
        if ours and not info.get("parent_task_id"):
            return task_id
    return None


@attrs.frozen(slots=True)
class Listing:
    """A ``GET /_tasks`` answer: ``tasks`` (``(task id, info)``, slices included: their
    info has a ``parent_task_id``) and ``failures``, its ``node_failures`` and
    ``task_failures`` (Elasticsearch answers 200 with the tasks of the nodes that
    answered: a task on a node that failed is missing)."""

    tasks: list[tuple[str, dict[str, Any]]]
    failures: list[Any]


def running_tasks(client: Elasticsearch, kind: Kind) -> Listing:
    """Every running task of ``kind``: ``GET /_tasks?actions=<action>&detailed=true``.
    Raises the client's errors."""
    listing = _tasks_api(client, "GET", "/_tasks", actions=ACTIONS[kind], detailed=True)
    failures: list[Any] = []
    if isinstance(listing, dict):
        failures = [*(listing.get("node_failures") or ()), *(listing.get("task_failures") or ())]
    return Listing(list(_listed(listing)), failures)


def cancel_task(client: Elasticsearch, task: str, what: str) -> bool:
    """``POST /_tasks/<task>/_cancel`` (sent once); whether the server accepted it (see
    :func:`_cancel`: a refusal or error is logged, the task may still run)."""
    return _cancel(client, task, what)


def _listed(listing: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(task id, info)`` of a ``GET /_tasks`` answer, grouped by node or not."""
    if not isinstance(listing, dict):
        return
    groups: list[Any] = [node.get("tasks") for node in (listing.get("nodes") or {}).values()]
    groups.append(listing.get("tasks"))
    for group in groups:
        items = group.items() if isinstance(group, dict) else ((None, t) for t in group or ())
        for key, info in items:
            if isinstance(info, dict):
                yield str(key or f"{info.get('node')}:{info.get('id')}"), info


def _cancel(client: Elasticsearch, task: str, what: str) -> bool:
    """``POST /_tasks/<task>/_cancel`` (sent once); whether the server accepted it (an
    error is logged: the task may still run). Elasticsearch answers a cancel that did not
    reach the task with status 200 and ``node_failures``/``task_failures``: not accepted,
    unless every failure says the task is no longer running
    (``resource_not_found_exception``: it ended, its final state is read next)."""
    try:
        answer = _tasks_api(once(client), "POST", f"/_tasks/{quote(task, ',*')}/_cancel")
    except (ApiError, TransportError) as exc:
        log.error("%s: cancelling its task %s failed (it may still run): %s", what, task, exc)
        return False
    failures = (
        [*(answer.get("node_failures") or []), *(answer.get("task_failures") or [])]
        if isinstance(answer, dict)
        else []
    )
    if any(_failure_type(f) != "resource_not_found_exception" for f in failures):
        log.error("%s: cancelling its task %s failed (it may still run): %s", what, task, failures)
        return False
    return True


def _failure_type(failure: Any) -> str | None:
    """The innermost error type of a cancel's node or task failure."""
    if not isinstance(failure, dict):
        return None
    cause = failure.get("caused_by") or failure.get("reason")
    if isinstance(cause, dict):
        inner = _failure_type(cause)
        if inner is not None:
            return inner
    kind = failure.get("type")
    return str(kind) if kind is not None else None


def _delete_result(client: Elasticsearch, task: str) -> None:
    """``DELETE /.tasks/_doc/<task>``, best effort (logged at DEBUG when refused)."""
    try:
        once(unwarned(client)).delete(index=".tasks", id=task)
    except (ApiError, TransportError) as exc:
        log.debug("the result of task %s was not deleted from .tasks: %s", task, exc)


@attrs.define(slots=True)
class _Poller:
    """Follows one task until it completes (see :func:`run_task`)."""

    client: Elasticsearch
    task: str
    what: str
    report: Callable[[int, int], None]
    sleep: Callable[[float], object]
    monotonic: Callable[[], float]
    poll_interval: float
    jitter: Callable[[float], float]
    deadline: float | None
    timeout: float | None
    stall: _Stall | None
    polled: bool = False

    def get(self) -> dict[str, Any]:
        """One ``GET /_tasks/<id>``."""
        return _tasks_api(self.client, "GET", f"/_tasks/{quote(self.task, ',*')}")

    def run(self) -> TaskResult:
        errors = 0
        wait = min(self.poll_interval, _FIRST_POLL)
        while True:
            self._pause(self.jitter(wait))
            wait = min(self.poll_interval, wait * 2)
            try:
                state = self.get()
            except NotFoundError as exc:
                if not self.polled:
                    _HAS_TASKS[_key(self.client)] = False
                    log.warning("%s: the server has no record of its task %s", self.what, self.task)
                raise TaskLost(
                    f"{self.what}: the server has no record of its task {self.task} ({exc}); "
                    "it may have run, partly or fully",
                    task=self.task,
                ) from exc
            except (ApiError, TransportError) as exc:
                errors += 1
                log.warning(
                    "error getting task status while running %s (task %s, %d in a row): %s",
                    self.what, self.task, errors, exc,
                )  # fmt: skip
                if errors >= _MAX_POLL_ERRORS:
                    log.error(
                        "failed to get the status %d times in a row for %s task %s",
                        errors, self.what, self.task,
                    )  # fmt: skip
                    # no longer followed: it must not go on unseen (best effort, the server
                    # may be unreachable)
                    cancelled = _cancel(self.client, self.task, self.what)
                    then = "cancelling it was accepted" if cancelled else "it may still be running"
                    raise TaskUnreachable(
                        f"{self.what}: the status of task {self.task} could not be read "
                        f"({exc}); {then}",
                        task=self.task,
                        cause=exc,
                    ) from exc
                wait = min(30.0, 2.0 ** (errors - 1))
                continue
            self.polled, errors = True, 0
            status = (state.get("task") or {}).get("status") or {}
            done, total = _done(status), int(status.get("total") or 0)
            self.report(done, total)
            if state.get("completed"):  # not cancelled by this call: see final()
                return _ended(self._completed(state), self.what)
            if self.deadline is not None and self.monotonic() >= self.deadline:
                cancelled = _cancel(self.client, self.task, self.what)
                result = self.final() if cancelled else None
                raise TaskTimedOut(
                    f"{self.what}: the call's timeout ({self.timeout:g}s) passed; its task "
                    f"{self.task} was "
                    + ("cancelled" if cancelled else "NOT cancelled and may still be running"),
                    task=self.task,
                    seconds=float(self.timeout or 0),
                    cancelled=cancelled,
                    result=result,
                )
            # a sliced task's status counts only the slices that finished: its progress
            # does not move while they run, so it cannot be judged stalled by it
            sliced = bool(status.get("slices"))
            if self.stall is not None and not sliced and self.stall.seen(self.task, done, total):
                cancelled = _cancel(self.client, self.task, self.what)
                if cancelled:
                    self.final()
                raise TaskStalled(
                    self.what,
                    self.task,
                    done=done,
                    total=total,
                    seconds=self.stall.limit,
                    cancelled=cancelled,
                )

    def _pause(self, seconds: float) -> None:
        if self.deadline is not None:
            seconds = max(0.0, min(seconds, self.deadline - self.monotonic()))
        if seconds > 0:
            self.sleep(seconds)

    def _completed(self, state: dict[str, Any]) -> TaskResult:
        _delete_result(self.client, self.task)
        error = state.get("error")
        if isinstance(error, dict):
            return TaskResult(error=error, task=self.task)
        return TaskResult(response=dict(state.get("response") or {}), task=self.task)

    def final(self) -> TaskResult | None:
        """After a cancel: poll until the task completes (up to 30 s) and return how it
        ended (its result deleted), ``None`` if it did not complete in that time."""
        end = self.monotonic() + _FINAL_WAIT
        wait = _FIRST_POLL
        while self.monotonic() < end:
            try:
                state = self.get()
            except (ApiError, TransportError) as exc:
                log.warning("%s: reading the end of task %s failed: %s", self.what, self.task, exc)
                return None
            if state.get("completed"):
                return self._completed(state)
            self.sleep(wait)
            wait = min(1.0, wait * 2)
        log.warning(
            "%s: task %s was cancelled but had not ended after %.0fs",
            self.what,
            self.task,
            _FINAL_WAIT,
        )
        return None
