"""The queue path of reindexing: enqueue outdated models, run the items.

**Enqueue.** ``Mapper.configure_indexes(begin_reindexing_outdated=True)`` (and
:func:`esmapper.bootstrap`) hands the states it found to :func:`enqueue_outdated`, which
enqueues one :class:`~esmapper.jobs.ReindexWorkItem` per ``outdated`` model on
the mapper's ``work_queue`` and starts no reindex. It runs inside configure's
``configure-indexes`` lock (once per fleet), and the queue deduplicates on the item's key
(alias and target version), so an item is never enqueued twice while one is pending or
running. No queue and an outdated model: :class:`~esmapper.errors.IndexConfigurationError`
("Must specify a work queue ... in order to migrate index versions"), raised before the
configuration is marked done (the next start tries again).

Time-series models (``daily``/``monthly``): the reference's item names the unversioned
base index and is a no-op for them. esmapper enqueues one item per time-series model, from
the lowest live version's pattern (``<alias>-vK-*``) to the current one
(``<alias>-vN-*``), and the worker runs the same per-partition loop as a direct reindex
(:mod:`esmapper.indexes.partition_reindex`: oldest partition first, one at a time, under
the one ``reindex:<alias>`` lock). Not one item per partition: the partitions of a model
must move in order under one lock, which several items would only fight over.

**Run.** :func:`handle_reindex_work_item` checks the item against the worker's own model
(the alias is a registered model's, the target and the script and the timestamp field
are the ones this worker's code composes; a worker of another release refuses the item
with :class:`~esmapper.errors.WorkItemError`). An item for a newer release, or for
another application sharing the queue (no model has its alias), is ``foreign``: the
worker releases it (:meth:`~esmapper.jobs.WorkQueue.release`: to the back of the queue,
its attempt not counted) and its loop waits before the next poll, so old workers still
running in a rolling deploy cannot use up the attempts of the new release's item. An
item whose ``reindex:<alias>`` lock stays held past ``lock_wait`` by a reindex running
elsewhere (a direct ``esmapper migrate`` started first) is released too, not failed: the
lock holder is read after the ``LockError``. Any other refusal (an older release's item,
another script) counts as a failed attempt: such an item ends in the failed items. A
checked item runs :func:`esmapper.indexes.reindex.reindex`: the same run, the same
``reindex:<alias>`` lock as a direct reindex (its heartbeat renews it, every progress
report checks it), so the direct path and the queue path never overlap. A worker that
gets the lock after another finished the same reindex finds the alias on the target and
returns ``up_to_date`` at once.

**Workers.** :class:`ReindexWorker` dequeues one item at a time with a lease, renews the
lease from a heartbeat thread while the reindex runs (every third of the lease), then
completes the item (done, or ``up_to_date``) or abandons it with the error (retried after
the queue's delay, failed after its last attempt). A worker killed or stopped stops
renewing: its lease runs out and another worker takes the item; that worker waits for the
dead one's reindex lock to lapse (at once on the same machine) and resumes the reindex
(its fencing refuses the stopped one if it ever resumes). A ``complete``, ``abandon`` or
``release`` that gets no answer (a dropped connection: applied or not, unknown) is sent
again a few times: the queue applies it only under the lease's token, so a second send
after the first applied changes nothing. ``esmapper jobs reindex-worker
--once|--loop`` is this worker in a command.
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs

from esmapper._context import context_of
from esmapper._server_tasks import interruptible
from esmapper.errors import IndexConfigurationError, JobCancelled, LockError, WorkItemError
from esmapper.indexes._reindex_pass import Throttle
from esmapper.indexes.configure import IndexState
from esmapper.indexes.reindex import (
    LOCK_TTL,
    LOCK_WAIT,
    ReindexProgress,
    ReindexResult,
    check_lock_options,
    reindex,
)
from esmapper.indexes.spec import IndexSpec, index_owners
from esmapper.jobs._work_items import ReindexWorkItem
from esmapper.jobs._work_queue import DEFAULT_LEASE, Lease, WorkQueue
from esmapper.jobs.base import JobResult, JobStatus, describe_error
from esmapper.locks import LockHolder, LockProvider, check_duration
from esmapper.reindex_scripts import compose

if TYPE_CHECKING:
    from esmapper._context import Context, HasContext

__all__ = [
    "NO_QUEUE",
    "ReindexWorker",
    "enqueue_outdated",
    "handle_reindex_work_item",
    "work_item_for",
]

log = logging.getLogger("esmapper.jobs")

#: The start of the error raised when an outdated model is found and there is no queue.
NO_QUEUE: Final = (
    "Must specify a work queue (Mapper(work_queue=...)) in order to migrate index versions"
)
_JOB: Final = "reindex-worker"
#: Waits before sending ``complete``/``abandon``/``release`` again after no answer.
_RESEND_WAITS: Final = (0.2, 1.0, 3.0)


def _target(spec: IndexSpec) -> str:
    """The index (time-series: the partition pattern) of the model's current version."""
    return spec.index_pattern if spec.is_time_series else spec.physical_name()


def _version_in(spec: IndexSpec, index: str) -> int | None:
    """``K`` of ``<alias>-vK`` (time-series: ``<alias>-vK-*``), else ``None``."""
    tail = r"-\*" if spec.is_time_series else ""
    match = re.fullmatch(rf"{re.escape(spec.alias)}-v(\d+){tail}", index)
    return None if match is None else int(match.group(1))


def work_item_for(
    spec: IndexSpec,
    current: str,
    *,
    delete_old: bool = True,
    batch_size: int | None = None,
    requests_per_second: float | None = None,
) -> ReindexWorkItem:
    """The item that moves ``spec``'s alias from ``current`` (the index it points at; a
    time-series model's lowest version's pattern) to the model's version: the scripts of
    the versions in between composed as a reindex sends them. Sends nothing;
    ``IndexConfigurationError`` when ``current`` is none of the model's versions."""
    old_version = _version_in(spec, current)
    if old_version is None:
        raise IndexConfigurationError(
            f"{spec.info.name}: alias {spec.alias!r} points at {current!r}, which is not one "
            f"of its versioned indexes",
            index=spec.alias,
        )
    return ReindexWorkItem(
        old_index=current,
        new_index=_target(spec),
        alias=spec.alias,
        script=compose(spec.options.reindex_scripts, old_version, spec.version),
        delete_old=delete_old,
        timestamp_field=spec.info.updated_field,
        batch_size=batch_size,
        requests_per_second=requests_per_second,
    )


def enqueue_outdated(
    mapper: Context | HasContext, queue: WorkQueue | None, states: Iterable[IndexState]
) -> list[ReindexWorkItem]:
    """Enqueue an item for every ``outdated`` state (see the module docstring); the items
    added (an item already pending or running is not added again). Sends nothing to
    Elasticsearch; one ``enqueue`` per outdated model. ``IndexConfigurationError`` when
    one is outdated and ``queue`` is ``None``."""
    ctx = context_of(mapper)
    # one index, one model: the first registered of those sharing it (a join's parent and
    # children), the one a worker checks the item against (_model_of) and plans take
    by_alias = {spec.alias: spec for _, spec in index_owners(map(ctx.spec, ctx.models))}
    outdated = [s for s in states if s.action == "outdated" and s.current_index is not None]
    if outdated and queue is None:
        names = ", ".join(f"{s.alias} ({s.current_index} -> {s.expected_index})" for s in outdated)
        raise IndexConfigurationError(
            f"{NO_QUEUE}: outdated {names}; give the mapper a work queue and run a worker "
            "(esmapper jobs reindex-worker), or reindex directly (esmapper reindex, "
            "esmapper migrate)",
            index=outdated[0].alias,
        )
    added = []
    for state in outdated:
        assert queue is not None and state.current_index is not None
        item = work_item_for(by_alias[state.alias], state.current_index)
        if queue.enqueue(item):
            log.info("enqueued %s: %s -> %s", item.key, item.old_index, item.new_index)
            added.append(item)
        else:
            log.info("%s is already queued or running; not enqueued again", item.key)
    return added


def _model_of(ctx: Context, item: ReindexWorkItem) -> type:
    """The registered model of ``item`` once the item is checked against it."""
    for model in ctx.models:
        spec = ctx.spec(model)
        if spec.alias != item.alias:
            continue
        if spec.kind == "plain":
            raise WorkItemError(f"{item.key}: {spec.info.name} is a plain model, never reindexed")
        target = _target(spec)
        old_version = _version_in(spec, item.old_index)
        if item.new_index != target or old_version is None:
            item_version = _version_in(spec, item.new_index)
            raise WorkItemError(
                f"{item.key}: this worker's {spec.info.name} is at {target!r}, the item moves "
                f"{item.old_index!r} to {item.new_index!r} (a worker of another release)",
                foreign=item_version is not None and item_version > spec.version,
            )
        script = compose(spec.options.reindex_scripts, old_version, spec.version)
        if item.script != script:
            raise WorkItemError(
                f"{item.key}: the item's reindex script is not the one this worker's "
                f"{spec.info.name} composes (a worker of another release)"
            )
        if item.timestamp_field != spec.info.updated_field:
            raise WorkItemError(
                f"{item.key}: the item's timestamp field {item.timestamp_field!r} is not "
                f"{spec.info.name}'s {spec.info.updated_field!r}"
            )
        return model
    raise WorkItemError(
        f"{item.key}: no model of this mapper has the alias {item.alias!r}", foreign=True
    )


def handle_reindex_work_item(
    mapper: Context | HasContext,
    item: ReindexWorkItem,
    *,
    progress: Callable[[ReindexProgress], None] | None = None,
    lock_wait: _dt.timedelta = LOCK_WAIT,
    lock_ttl: _dt.timedelta = LOCK_TTL,
    stall_timeout: _dt.timedelta | None = None,
) -> ReindexResult:
    """Run ``item``'s reindex (see the module docstring): checks it, then
    :func:`esmapper.indexes.reindex.reindex` of its model with its ``delete_old`` and
    throttle, under the ``reindex:<alias>`` lock (waiting up to ``lock_wait``). Returns
    the reindex's result (``up_to_date`` when the alias is already on the target).

    Raises ``TypeError``/``ValueError`` (a bad item or option) and
    :class:`~esmapper.errors.WorkItemError` (the item is not this worker's model) before
    anything is sent, then what :func:`~esmapper.indexes.reindex.reindex` raises."""
    if not isinstance(item, ReindexWorkItem):
        raise TypeError(f"handle_reindex_work_item takes a ReindexWorkItem, not {item!r}")
    check_lock_options(lock_wait, lock_ttl)
    Throttle(item.batch_size, item.requests_per_second, stall_timeout)
    ctx = context_of(mapper)
    model = _model_of(ctx, item)
    log.info("reindex work item %s: %s -> %s", item.key, item.old_index, item.new_index)
    return reindex(
        ctx,
        model,
        progress=progress,
        lock_wait=lock_wait,
        lock_ttl=lock_ttl,
        delete_old=item.delete_old,
        batch_size=item.batch_size,
        requests_per_second=item.requests_per_second,
        stall_timeout=stall_timeout,
    )


class _LeaseKeeper:
    """Renews a lease every third of it from a daemon thread until stopped."""

    def __init__(self, queue: WorkQueue, lease: Lease, duration: _dt.timedelta) -> None:
        self.queue, self.lease, self.duration = queue, lease, duration
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"esmapper-lease-{lease.item.key}", daemon=True
        )

    def _beat(self) -> None:
        interval = self.duration.total_seconds() / 3
        while not self._stop.wait(interval):
            try:
                if not self.queue.renew(self.lease, self.duration):
                    self.lost = True
                    log.warning("%s: the item's lease was taken over", self.lease.item.key)
                    return
            except Exception as exc:  # the queue did not answer: try again next beat
                log.warning("%s: lease not renewed: %s", self.lease.item.key, exc)

    def __enter__(self) -> _LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _settle(what: str, call: Callable[[], bool], key: str) -> bool:
    """``call`` (a queue's ``complete``/``abandon``/``release``), sent again after each of
    :data:`_RESEND_WAITS` while it raises (no answer: a dropped connection, a failover).
    Safe: the queue applies it only while the lease's token is the item's, so a call sent
    again after the first applied answers ``False`` and changes nothing. The last error is
    raised (the lease then runs out and another worker takes the item)."""
    for wait in (*_RESEND_WAITS, None):
        try:
            return call()
        except Exception as exc:
            if wait is None:
                raise
            log.warning("%s: no answer to %s (%s); asking again", key, what, describe_error(exc))
            time.sleep(wait)
    raise AssertionError("unreachable")


class ReindexWorker:
    """Dequeues reindex items and runs them (see the module docstring).

    ``queue`` defaults to the mapper's ``work_queue``; ``lease`` is how long an item is
    held between renewals (a worker dead that long loses it); ``progress``, ``lock_wait``,
    ``lock_ttl`` and ``stall_timeout`` go to every :func:`handle_reindex_work_item`.
    ``TypeError``/``ValueError`` for a bad option, before anything is sent."""

    def __init__(
        self,
        mapper: Any,
        queue: WorkQueue | None = None,
        *,
        lease: _dt.timedelta = DEFAULT_LEASE,
        progress: Callable[[ReindexProgress], None] | None = None,
        lock_wait: _dt.timedelta = LOCK_WAIT,
        lock_ttl: _dt.timedelta = LOCK_TTL,
        stall_timeout: _dt.timedelta | None = None,
    ) -> None:
        queue = queue if queue is not None else getattr(mapper, "work_queue", None)
        if queue is None:
            raise ValueError("ReindexWorker needs a work queue: Mapper(work_queue=...) or queue=")
        if not isinstance(queue, WorkQueue):
            raise TypeError(f"queue must be a WorkQueue, not {queue!r}")
        check_duration("lease", lease)
        check_lock_options(lock_wait, lock_ttl)
        Throttle(None, None, stall_timeout)
        self.mapper, self.queue, self.lease = mapper, queue, lease
        self.progress = progress
        self.options: dict[str, Any] = {
            "lock_wait": lock_wait,
            "lock_ttl": lock_ttl,
            "stall_timeout": stall_timeout,
        }

    def run_once(self, cancel: threading.Event | None = None) -> JobResult | None:
        """Dequeue one item and run it: its :class:`~esmapper.jobs.JobResult` (``details``
        the :class:`ReindexResult`; ``failed`` with the error, the item abandoned;
        ``skipped`` when the item is for another worker, a :attr:`WorkItemError.foreign
        <esmapper.errors.WorkItemError>` one, or when its reindex lock stayed held past
        ``lock_wait`` by a reindex running elsewhere (a ``GET`` of the lock after the
        ``LockError``): released, its attempt not counted), or ``None`` when no item is
        pending. ``cancel`` set: the reindex stops at its next progress report or task
        poll (rolled back) and the item is abandoned (a ``cancelled`` result). Raises
        the queue's errors (Redis unreachable), and a ``KeyboardInterrupt`` that is not
        ``cancel``'s once the item is abandoned."""
        lease = self.queue.dequeue(self.lease)
        if lease is None:
            return None
        item = lease.item
        started = time.monotonic()
        cancel = cancel or threading.Event()

        def progress(report: ReindexProgress) -> None:
            if cancel.is_set():  # raised from a report: the reindex rolls back
                raise JobCancelled("cancelled before it finished")
            if self.progress is not None:
                self.progress(report)

        try:
            with _LeaseKeeper(self.queue, lease, self.lease), interruptible(cancel):
                result = handle_reindex_work_item(
                    self.mapper, item, progress=progress, **self.options
                )
        except WorkItemError as exc:
            if not exc.foreign:
                return self._abandoned(lease, exc, cancel, started)
            why = f"left for another worker: {describe_error(exc)}"
            return self._released(lease, why, started)
        except LockError as exc:
            holder = None if cancel.is_set() else self._reindex_holder(item)
            if holder is None:
                return self._abandoned(lease, exc, cancel, started)
            why = f"its reindex is running elsewhere ({holder}); left in the queue"
            return self._released(lease, why, started)
        except (Exception, KeyboardInterrupt) as exc:
            return self._abandoned(lease, exc, cancel, started)
        if not _settle("complete", lambda: self.queue.complete(lease), item.key):
            log.warning("%s done, but its lease had been taken over", item.key)
        message = f"{item.key}: {result.status} ({result.old_index} -> {result.new_index})"
        return _timed(JobResult.success(_JOB, message, details=result), started)

    def _released(self, lease: Lease, why: str, started: float) -> JobResult:
        """Release ``lease`` (not an attempt): a ``skipped`` result saying ``why``."""
        key = lease.item.key
        if not _settle("release", lambda: self.queue.release(lease), key):
            log.warning("%s: its lease was taken over; another worker has it", key)
        log.info("%s: %s", key, why)
        released = JobResult(_JOB, JobStatus.SUCCESS, f"{key}: {why}", skipped=True)
        return _timed(released, started)

    def _reindex_holder(self, item: ReindexWorkItem) -> LockHolder | None:
        """Who holds ``reindex:<alias>`` now (a ``GET`` of the lock), ``None`` when nobody
        does or the read failed."""
        try:
            ctx = context_of(self.mapper)
            locks = LockProvider(ctx.client, index_prefix=ctx.index_prefix, clock=ctx.clock)
            return locks.live_holder(f"reindex:{item.alias}")
        except Exception as exc:
            log.warning("%s: its reindex lock not read: %s", item.key, describe_error(exc))
            return None

    def _abandoned(
        self, lease: Lease, exc: BaseException, cancel: threading.Event, started: float
    ) -> JobResult:
        """Abandon ``lease`` for ``exc``: its failed (or cancelled) result; a Ctrl-C that
        is not ``cancel``'s raised again once the item is back."""
        item = lease.item
        why = describe_error(exc)
        if not isinstance(exc, KeyboardInterrupt | JobCancelled | WorkItemError):
            log.warning("%s (attempt %d) failed: %s", item.key, lease.attempt, why)
        if not _settle("abandon", lambda: self.queue.abandon(lease, why), item.key):
            log.warning("%s: its lease was taken over; another worker has it", item.key)
        if isinstance(exc, KeyboardInterrupt) and not cancel.is_set():
            raise exc  # a Ctrl-C, not this worker's cancel: the item is back, the caller stops
        failed = JobResult.from_exception(_JOB, exc, f"{item.key}: {why}")
        if cancel.is_set():
            failed = JobResult.cancelled(_JOB, f"{item.key}: cancelled; back in the queue")
        return _timed(failed, started)

    def loop(
        self,
        stop: threading.Event,
        cancel: threading.Event | None = None,
        *,
        idle: _dt.timedelta = _dt.timedelta(seconds=5),
        on_result: Callable[[JobResult], None] | None = None,
    ) -> int:
        """Run items until ``stop`` is set (the item in progress finishes first; ``cancel``
        stops it), waiting ``idle`` when the queue is empty or did not answer or the item
        was for another worker; the number of items run (not those left for another)."""
        check_duration("idle", idle)
        runs = 0
        while not stop.is_set():
            try:
                result = self.run_once(cancel)
            except Exception as exc:  # the queue did not answer: wait, then ask again
                log.warning("the work queue did not answer: %s", describe_error(exc))
                result = None
            if result is None:
                stop.wait(idle.total_seconds())
                continue
            runs += 0 if result.skipped else 1
            if on_result is not None:
                on_result(result)
            if cancel is not None and cancel.is_set():
                break
            if result.skipped:  # an item for another worker, back in the queue: no spin
                stop.wait(idle.total_seconds())
        return runs


def _timed(result: JobResult, started: float) -> JobResult:
    return attrs.evolve(result, seconds=time.monotonic() - started)
