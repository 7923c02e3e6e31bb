"""Change notifications: the message-bus protocol and the in-process implementation.

The mapper publishes one :class:`~esmapper.signals.EntityChanged` per changed document
(``id=None`` for a change by query) after the write was confirmed and the
``before_publish_entity_changed`` receivers did not cancel it. :class:`BlinkerMessageBus`,
the default, delivers it in-process through the ``entity_changed`` blinker signal; a
distributed bus (Redis, Kafka, ...) implements :class:`MessageBus` and is passed as
``Mapper(bus=...)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs

from esmapper import signals

__all__ = ["BlinkerMessageBus", "MessageBus", "Subscription", "subscribe"]


class MessageBus(Protocol):
    """Something that delivers change notifications (``model`` is the model class).

    ``subscribe(model, handler)`` calls ``handler(message)`` for every change of ``model``
    (from this process, or from others on a distributed bus: ``message.origin`` is
    ``"local"`` or ``"remote"``) and returns a :class:`Subscription`.
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
    """

    def publish(self, model: type, message: signals.EntityChanged, **context: Any) -> None:
        signals.send_safely(signals.entity_changed, model, message=message, **context)

    def subscribe(
        self, model: type, handler: Callable[[signals.EntityChanged], object]
    ) -> Subscription:
        """Call ``handler(message)`` for every change of ``model`` (see :func:`subscribe`)."""
        return subscribe(model, handler)
