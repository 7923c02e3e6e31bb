"""Change notifications: the message-bus protocol and the in-process implementation.

The mapper publishes one :class:`~esmapper.signals.EntityChanged` per changed document
(``id=None`` for a change by query) after the write was confirmed and the
``before_publish_entity_changed`` receivers did not cancel it. :class:`BlinkerMessageBus`,
the default, delivers it in-process through the ``entity_changed`` blinker signal; a
distributed bus (Redis, Kafka, ...) implements :class:`MessageBus` and is passed as
``Mapper(bus=...)``.
"""

from __future__ import annotations

from typing import Any, Protocol

from esmapper import signals

__all__ = ["BlinkerMessageBus", "MessageBus"]


class MessageBus(Protocol):
    """Something that delivers change notifications (``model`` is the model class)."""

    def publish(self, model: type, message: signals.EntityChanged, **context: Any) -> None: ...


class BlinkerMessageBus:
    """In-process delivery: sends ``signals.entity_changed`` (sender = the model class).

    A subscriber that raises is logged with the model and id; the others still run.
    """

    def publish(self, model: type, message: signals.EntityChanged, **context: Any) -> None:
        signals.send_safely(signals.entity_changed, model, message=message, **context)
