"""Change notifications: the message-bus protocol and the in-process implementation.

The mapper publishes one :class:`~esmapper.signals.EntityChanged` per changed document
(``id=None`` for a change by query; with ``class Index: batch_notifications = True`` one
per call and change type, ``id=None`` and ``ids`` the documents) after the write was
confirmed and the ``before_publish_entity_changed`` receivers did not cancel it.
:class:`BlinkerMessageBus`, the default, delivers it in-process through the
``entity_changed`` blinker signal; a distributed bus (Redis, Kafka, ...) implements
:class:`MessageBus` and is passed as ``Mapper(bus=...)``.

Delayed delivery (``class Index: notification_delay``, to let Elasticsearch refresh before
subscribers read): a bus that supports it says so with ``supports_delay = True`` and takes
``delay=`` (seconds) in ``publish``; it holds the message in this process
(:class:`HeldMessages`: one delivery thread per bus, however many messages wait, started
when the first one is held and ended when none is left; or the bus's injected
:data:`Scheduler`) and delivers it, locally and to the other processes, once the delay
passed. ``flush()`` delivers every message still held at once (``Mapper.close()`` calls
it, and so does ``RedisMessageBus.close()`` before it closes its link): nothing is
delivered after the mapper is closed, nothing it published is dropped by closing it. A
message still waiting when the process exits without closing is lost, as with the
reference's in-memory bus. A bus without the support gets the message at once, with one
warning per model (:meth:`esmapper._services.Services.publish`), never dropped.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import attrs

from esmapper import signals

__all__ = [
    "BlinkerMessageBus",
    "HeldMessages",
    "MessageBus",
    "Scheduler",
    "Subscription",
    "subscribe",
]

log = logging.getLogger("esmapper.bus")

#: ``schedule(seconds, deliver)``: call ``deliver()`` once ``seconds`` have passed (on any
#: thread). Buses take one (``scheduler=``) so that tests can run what is due themselves;
#: without one, :class:`HeldMessages` runs its own delivery thread.
Scheduler: TypeAlias = Callable[[float, Callable[[], None]], object]


class HeldMessages:
    """The delayed deliveries of one bus, held in this process until they are due.

    Without a ``scheduler``, one daemon thread delivers them in due order (started when a
    message is held and none runs, ending when nothing is left: never a thread per
    message); with one, each is handed to it. :meth:`flush` delivers everything still held
    at once, in the order held; a delivery the scheduler runs after that is a no-op (each
    is delivered exactly once). After :meth:`close` (a flush) a message is delivered at
    once: nothing is held past the close. A delivery that raises is logged."""

    def __init__(self, scheduler: Scheduler | None = None) -> None:
        self._scheduler = scheduler
        self._lock = threading.Condition()
        self._waiting: dict[int, Callable[[], None]] = {}
        self._due: list[tuple[float, int]] = []  # (monotonic due time, key): a heap
        self._keys = itertools.count()
        self._thread: threading.Thread | None = None
        self._closed = False

    def __len__(self) -> int:
        """How many messages are held."""
        with self._lock:
            return len(self._waiting)

    def hold(self, seconds: float, deliver: Callable[[], None]) -> None:
        """Call ``deliver()`` once ``seconds`` passed (at once when closed)."""
        with self._lock:
            key = None if self._closed else next(self._keys)
            if key is not None:
                self._waiting[key] = deliver
                if self._scheduler is None:
                    heapq.heappush(self._due, (time.monotonic() + seconds, key))
                    if self._thread is None:
                        self._thread = threading.Thread(
                            target=self._run, name="esmapper-delayed-notifications", daemon=True
                        )
                        self._thread.start()
                    self._lock.notify()
        if key is None:
            _run_one(deliver)
        elif self._scheduler is not None:
            self._scheduler(seconds, lambda: self._deliver(key))

    def flush(self) -> None:
        """Deliver every held message now, in the order they were held."""
        with self._lock:
            waiting = [self._waiting[k] for k in sorted(self._waiting)]
            self._waiting.clear()
            self._due.clear()
            self._lock.notify()
        for deliver in waiting:
            _run_one(deliver)

    def close(self) -> None:
        """:meth:`flush`; what is held afterwards is delivered at once."""
        with self._lock:
            self._closed = True
        self.flush()

    def _deliver(self, key: int) -> None:
        with self._lock:
            deliver = self._waiting.pop(key, None)
        if deliver is not None:
            _run_one(deliver)

    def _run(self) -> None:
        """The delivery thread: the earliest due message at a time, until none is held."""
        while True:
            with self._lock:
                while True:
                    if not self._due:
                        self._thread = None
                        return
                    due, key = self._due[0]
                    wait = due - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._due)
                        deliver = self._waiting.pop(key, None)
                        break
                    self._lock.wait(wait)
            if deliver is not None:
                _run_one(deliver)


def _run_one(deliver: Callable[[], None]) -> None:
    try:
        deliver()
    except Exception:
        log.exception("delivering a delayed entity_changed failed")


class MessageBus(Protocol):
    """Something that delivers change notifications (``model`` is the model class).

    ``subscribe(model, handler)`` calls ``handler(message)`` for every change of ``model``
    (from this process, or from others on a distributed bus: ``message.origin`` is
    ``"local"`` or ``"remote"``) and returns a :class:`Subscription`. A bus that can deliver
    later sets ``supports_delay = True`` and takes ``publish(..., delay=seconds)`` (see the
    module docstring).
    """

    def publish(self, model: type, message: signals.EntityChanged, **context: Any) -> None: ...
    def subscribe(
        self, model: type, handler: Callable[[signals.EntityChanged], object]
    ) -> Subscription: ...


@attrs.define(eq=False)
class Subscription:
    """A handler connected by :meth:`MessageBus.subscribe`; :meth:`cancel` disconnects it."""

    model: type
    receiver: Callable[..., None]

    def cancel(self) -> None:
        """Stop calling the handler (idempotent)."""
        signals.entity_changed.disconnect(self.receiver, sender=self.model)


def subscribe(model: type, handler: Callable[[signals.EntityChanged], object]) -> Subscription:
    """Connect ``handler(message)`` to ``signals.entity_changed`` for ``model`` (every bus
    delivers there; a handler that raises is logged, the others still run)."""

    def receiver(sender: Any, message: signals.EntityChanged, **_context: Any) -> None:
        handler(message)

    signals.entity_changed.connect(receiver, sender=model)
    return Subscription(model, receiver)


class BlinkerMessageBus:
    """In-process delivery: sends ``signals.entity_changed`` (sender = the model class).

    A subscriber that raises is logged with the model and id; the others still run.
    ``publish(..., delay=seconds)`` delivers once the delay passed (:class:`HeldMessages`,
    through ``scheduler`` when given); :meth:`flush` delivers what is held at once.
    """

    supports_delay = True

    def __init__(self, *, scheduler: Scheduler | None = None) -> None:
        self.held = HeldMessages(scheduler)

    def publish(
        self,
        model: type,
        message: signals.EntityChanged,
        *,
        delay: float | None = None,
        **context: Any,
    ) -> None:
        def deliver() -> None:
            signals.send_safely(signals.entity_changed, model, message=message, **context)

        if delay:
            self.held.hold(delay, deliver)
        else:
            deliver()

    def flush(self) -> None:
        """Deliver every delayed message still held, now."""
        self.held.flush()

    def subscribe(
        self, model: type, handler: Callable[[signals.EntityChanged], object]
    ) -> Subscription:
        """Call ``handler(message)`` for every change of ``model`` (see :func:`subscribe`)."""
        return subscribe(model, handler)
