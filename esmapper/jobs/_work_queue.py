"""Work queues of reindex items: the :class:`WorkQueue` protocol and the in-process queue.

A queue holds :class:`~esmapper.jobs.ReindexWorkItem`\\ s, each under its
``key`` (one per alias and target version), in one of three states:

- **pending**: waiting for a worker, oldest first;
- **leased**: handed to a worker by :meth:`WorkQueue.dequeue` for a lease (a duration),
  under a token only that dequeue knows; the worker renews the lease while it works
  (:meth:`WorkQueue.renew`), then :meth:`WorkQueue.complete`\\ s it (gone) or
  :meth:`WorkQueue.abandon`\\ s it (pending again after ``retry_delay``, or *failed* once
  it was dequeued ``max_attempts`` times). A lease that runs out (a worker killed, or
  stopped) makes the item pending again at the next dequeue (failed once it ran out
  ``max_attempts`` times): another worker takes it. A worker whose lease was taken over
  gets ``False`` from ``renew``/``complete``/``abandon``/``release`` and changes nothing.
  A worker that cannot run the item (one of a newer release, or of another application
  sharing the queue) :meth:`WorkQueue.release`\\ s it: pending again at the back of the
  queue, the attempt not counted, so a worker that can run it still gets its attempts
  (such an item waits until one comes);
- **failed**: kept with the last error (:meth:`failed`) until the same item is enqueued
  again.

:meth:`WorkQueue.enqueue` adds an item unless one with its key is pending or leased
(``False`` then): enqueuing the same outdated index from every starting process adds it
once.

Implementations: :class:`InMemoryWorkQueue` (one process: tests, a single-process
application whose worker is a thread) and :class:`~esmapper.jobs.RedisWorkQueue` (every
process of a fleet, on Redis). Both take ``max_attempts`` (default 3) and
``retry_delay`` (default 30 s).
"""

from __future__ import annotations

import datetime as _dt
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Protocol, runtime_checkable

import attrs

from esmapper.jobs._work_items import ReindexWorkItem
from esmapper.locks import check_duration

__all__ = [
    "DEFAULT_LEASE",
    "InMemoryWorkQueue",
    "Lease",
    "QueueCounts",
    "WorkQueue",
    "check_queue_options",
]

#: How long a worker holds an item before another may take it, unless renewed.
DEFAULT_LEASE: Final = _dt.timedelta(minutes=1)
_MAX_ATTEMPTS: Final = 3
_RETRY_DELAY: Final = _dt.timedelta(seconds=30)


@attrs.frozen
class Lease:
    """An item handed to one worker: the ``item``, the ``token`` of this dequeue and
    ``attempt`` (1 for the first dequeue of the item)."""

    item: ReindexWorkItem
    token: str
    attempt: int


@attrs.frozen
class QueueCounts:
    """How many items are ``pending``, ``leased`` and ``failed``."""

    pending: int
    leased: int
    failed: int


@runtime_checkable
class WorkQueue(Protocol):
    """A queue of reindex work items with leases (see the module docstring)."""

    def enqueue(self, item: ReindexWorkItem) -> bool:
        """Add ``item`` unless an item with its key is pending or leased; ``True`` if
        added."""

    def dequeue(self, lease: _dt.timedelta = DEFAULT_LEASE) -> Lease | None:
        """The oldest pending item, leased for ``lease``; ``None`` when none is pending."""

    def renew(self, lease: Lease, duration: _dt.timedelta = DEFAULT_LEASE) -> bool:
        """Extend ``lease`` to ``duration`` from now; ``False`` when it was taken over."""

    def complete(self, lease: Lease) -> bool:
        """The leased item is done: remove it; ``False`` when the lease was taken over."""

    def abandon(self, lease: Lease, error: str = "") -> bool:
        """The leased item failed: pending again after the retry delay, or failed (with
        ``error``) after its last attempt; ``False`` when the lease was taken over."""

    def release(self, lease: Lease) -> bool:
        """This worker cannot run the leased item: pending again at once, at the back of
        the queue (the items behind it go first), the dequeue not counted as an attempt;
        ``False`` when the lease was taken over."""

    def counts(self) -> QueueCounts:
        """How many items are in each state."""

    def failed(self) -> list[tuple[ReindexWorkItem, str]]:
        """The failed items and their last error."""


def check_queue_options(max_attempts: int, retry_delay: _dt.timedelta) -> None:
    """``TypeError``/``ValueError`` unless ``max_attempts`` is an ``int`` >= 1 and
    ``retry_delay`` a ``timedelta`` >= 0."""
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
        raise TypeError(f"max_attempts must be an int, not {max_attempts!r}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
    check_duration("retry_delay", retry_delay, zero=True)


@attrs.define
class _Entry:
    item: ReindexWorkItem
    attempts: int = 0
    token: str | None = None
    until: float = 0.0  # leased (token set) or waiting to retry (token None) until then


class InMemoryWorkQueue:
    """A :class:`WorkQueue` in this process (thread-safe): for tests and single-process
    applications. ``clock`` is a monotonic clock in seconds (inject one in tests)."""

    def __init__(
        self,
        *,
        max_attempts: int = _MAX_ATTEMPTS,
        retry_delay: _dt.timedelta = _RETRY_DELAY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_queue_options(max_attempts, retry_delay)
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self.clock = clock
        self._lock = threading.Lock()
        self._pending: OrderedDict[str, _Entry] = OrderedDict()
        self._waiting: dict[str, _Entry] = {}  # leased, or abandoned until its retry
        self._failed: dict[str, tuple[ReindexWorkItem, str]] = {}

    def enqueue(self, item: ReindexWorkItem) -> bool:
        if not isinstance(item, ReindexWorkItem):
            raise TypeError(f"enqueue takes a ReindexWorkItem, not {item!r}")
        with self._lock:
            if item.key in self._pending or item.key in self._waiting:
                return False
            self._failed.pop(item.key, None)
            self._pending[item.key] = _Entry(item)
            return True

    def _reclaim(self, now: float) -> None:
        # latest first: each goes to the front, so the earliest due ends up first (as on Redis)
        by_due = sorted(self._waiting.items(), key=lambda kv: kv[1].until, reverse=True)
        for key, entry in by_due:
            if entry.until > now:
                continue
            del self._waiting[key]
            if entry.token is not None and entry.attempts >= self.max_attempts:
                why = f"its lease ran out {entry.attempts} times (a worker died or stalled)"
                self._failed[key] = (entry.item, why)
                continue
            entry.token = None
            self._pending[key] = entry
            self._pending.move_to_end(key, last=False)  # it was first

    def dequeue(self, lease: _dt.timedelta = DEFAULT_LEASE) -> Lease | None:
        check_duration("lease", lease)
        with self._lock:
            now = self.clock()
            self._reclaim(now)
            if not self._pending:
                return None
            key, entry = self._pending.popitem(last=False)
            entry.attempts += 1
            entry.token = uuid.uuid4().hex
            entry.until = now + lease.total_seconds()
            self._waiting[key] = entry
            return Lease(entry.item, entry.token, entry.attempts)

    def _held(self, lease: Lease) -> _Entry | None:
        entry = self._waiting.get(lease.item.key)
        return entry if entry is not None and entry.token == lease.token else None

    def renew(self, lease: Lease, duration: _dt.timedelta = DEFAULT_LEASE) -> bool:
        check_duration("duration", duration)
        with self._lock:
            entry = self._held(lease)
            if entry is None:
                return False
            entry.until = self.clock() + duration.total_seconds()
            return True

    def complete(self, lease: Lease) -> bool:
        with self._lock:
            if self._held(lease) is None:
                return False
            del self._waiting[lease.item.key]
            return True

    def abandon(self, lease: Lease, error: str = "") -> bool:
        with self._lock:
            entry = self._held(lease)
            if entry is None:
                return False
            if entry.attempts >= self.max_attempts:
                del self._waiting[lease.item.key]
                self._failed[lease.item.key] = (entry.item, error)
                return True
            entry.token = None
            entry.until = self.clock() + self.retry_delay.total_seconds()
            return True

    def release(self, lease: Lease) -> bool:
        with self._lock:
            entry = self._held(lease)
            if entry is None:
                return False
            del self._waiting[lease.item.key]
            entry.attempts -= 1
            entry.token = None
            self._pending[lease.item.key] = entry  # at the back
            return True

    def counts(self) -> QueueCounts:
        with self._lock:
            leased = sum(1 for e in self._waiting.values() if e.token is not None)
            pending = len(self._pending) + len(self._waiting) - leased
            return QueueCounts(pending, leased, len(self._failed))

    def failed(self) -> list[tuple[ReindexWorkItem, str]]:
        with self._lock:
            return list(self._failed.values())
