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
``delay=`` (seconds) in ``publish``; it holds the message in this process (its
:data:`Scheduler`, a timer thread by default) and delivers it, locally and to the other
processes, once the delay passed. A message still waiting when the process exits is lost,
as with the reference's in-memory bus. A bus without the support gets the message at
once, with one warning per model (:meth:`esmapper._services.Services.publish`), never
dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import attrs

from esmapper import signals

__all__ = [
    "BlinkerMessageBus",
    "MessageBus",
    "Scheduler",
    "Subscription",
    "subscribe",
    "timer_scheduler",
]

#: ``schedule(seconds, deliver)``: call ``deliver()`` once ``seconds`` have passed (on any
#: thread). Buses take one (``scheduler=``) so that tests can run what is due themselves.
Scheduler: TypeAlias = Callable[[float, Callable[[], None]], object]


def timer_scheduler(seconds: float, deliver: Callable[[], None]) -> threading.Timer:
    """The default :data:`Scheduler`: a daemon ``threading.Timer`` (a process exiting
    does not wait for it)."""
    timer = threading.Timer(seconds, deliver)
    timer.daemon = True
    timer.start()
    return timer


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
    ``publish(..., delay=seconds)`` delivers once the delay passed, through ``scheduler``
    (:func:`timer_scheduler` by default).
    """

    supports_delay = True

    def __init__(self, *, scheduler: Scheduler | None = None) -> None:
        self.scheduler: Scheduler = scheduler or timer_scheduler

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
            self.scheduler(delay, deliver)
        else:
            deliver()

    def subscribe(
        self, model: type, handler: Callable[[signals.EntityChanged], object]
    ) -> Subscription:
        """Call ``handler(message)`` for every change of ``model`` (see :func:`subscribe`)."""
        return subscribe(model, handler)
