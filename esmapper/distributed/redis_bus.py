"""RedisMessageBus: ``entity_changed`` delivered to every process of the application.

``publish`` delivers the message in this process first (``signals.entity_changed``, sender
= the model class, ``message.origin == "local"``), then publishes it as JSON on the
namespace's ``ev`` channel (``PUBLISH``, no waiting). The link's listener thread delivers
what other processes published to ``signals.entity_changed`` in this one, with
``message.origin == "remote"`` and ``options=None``; a process never gets its own messages
twice (each carries the link's random token).

With ``delay=`` (``class Index: notification_delay``) both deliveries wait: the message is
held in this process (:class:`esmapper.bus.HeldMessages`: one delivery thread, or the bus's
``scheduler``) and delivered here and published to Redis once the delay passed;
:meth:`RedisMessageBus.close` (and ``Mapper.close()``) deliver what is held first, while the
link is open; a process that exits before that loses it (pub/sub keeps nothing).

A routed id (an :class:`~esmapper.ids.Id` with ``routing``: a join child's id, with its
parent id) travels with its routing (``"r"``; a batch's ``ids``: ``"sr"``, one routing or
``null`` per id) and is delivered as such an ``Id``: a listener reloading the document by
``message.id`` reads it on its shard in real time. A message without them (another
version's) gives plain ids.

Delivery is Redis pub/sub: at most once, to the processes subscribed at that moment. While
Redis is unreachable the messages of this process reach only this process (the failure is
logged once per outage by the link); the listener reconnects with back-off.
"""

from __future__ import annotations

import logging
from typing import Any

from esmapper import _json, signals
from esmapper.bus import HeldMessages, Scheduler, Subscription, subscribe
from esmapper.distributed.link import RedisLink, RedisUnavailable
from esmapper.ids import Id, routing_of

__all__ = ["RedisMessageBus"]

log = logging.getLogger("esmapper.redis")


class RedisMessageBus:
    """A :class:`~esmapper.bus.MessageBus` over Redis pub/sub (see the module docstring).

    ``link`` is a URL (a :class:`RedisLink` is made with ``namespace`` and
    ``link_options``) or a link shared with the cache. Remote messages name their model
    (``message.type``); the class is found among the models passed to :meth:`bind_model`
    (the :class:`~esmapper.Mapper` binds its models) or to :meth:`subscribe`; a message of
    an unknown model is sent with the model name as sender.
    """

    supports_delay = True

    def __init__(
        self,
        link: str | RedisLink,
        *,
        namespace: str = "esmapper",
        scheduler: Scheduler | None = None,
        **link_options: Any,
    ) -> None:
        self.held = HeldMessages(scheduler)
        self._owns_link = not isinstance(link, RedisLink)
        self.link = (
            link
            if isinstance(link, RedisLink)
            else RedisLink(link, namespace=namespace, **link_options)
        )
        self._models: dict[str, type] = {}
        self.link.on("ev", self._deliver)

    def bind_model(self, model: type) -> None:
        """Deliver remote messages of ``model`` with the class as sender."""
        info = getattr(model, "__esmapper__", None)
        self._models[getattr(info, "name", None) or model.__name__] = model

    def publish(
        self,
        model: type,
        message: signals.EntityChanged,
        *,
        delay: float | None = None,
        **context: Any,
    ) -> None:
        """Deliver to this process's receivers, then to the other processes (one
        ``PUBLISH``; skipped, with the outage's one warning, while Redis is unreachable),
        both once ``delay`` seconds passed when given. Raises ``TypeError`` when
        ``message.data`` does not serialize to JSON (after the local delivery; delayed,
        before anything is scheduled)."""
        self.bind_model(model)
        message.origin = "local"
        payload: dict[str, Any] = {
            "t": message.type,
            "i": message.id,
            "c": int(message.change_type),
            "d": message.data,
        }
        routing = routing_of(message.id) if message.id is not None else None
        if routing is not None:
            payload["r"] = routing
        if message.ids:
            payload["s"] = list(message.ids)
            routings = [routing_of(id) for id in message.ids]
            if any(r is not None for r in routings):
                payload["sr"] = routings

        def deliver() -> None:
            signals.send_safely(signals.entity_changed, model, message=message, **context)
            self._send(payload)

        if delay:
            _json.dumps(payload)  # refused now: it could not be sent when due
            self.held.hold(delay, deliver)
        else:
            deliver()

    def _send(self, payload: dict[str, Any]) -> None:
        """``PUBLISH`` ``payload`` on the ``ev`` channel (skipped while Redis is
        unreachable)."""
        try:
            self.link.publish("ev", payload)
        except RedisUnavailable as exc:
            log.debug(
                "entity_changed for %s %r not sent to other processes: %s",
                payload["t"],
                payload["i"],
                exc,
            )

    def subscribe(self, model: type, handler: Any) -> Subscription:
        """Call ``handler(message)`` for every change of ``model``, local or remote
        (``message.origin`` tells); ``.cancel()`` on the result stops it."""
        self.bind_model(model)
        return subscribe(model, handler)

    def _deliver(self, payload: dict[str, Any]) -> None:
        name = payload.get("t")
        ids = list(payload.get("s") or ())
        routings = payload.get("sr")
        if isinstance(routings, list) and len(routings) == len(ids):
            ids = [_routed(id, routing) for id, routing in zip(ids, routings, strict=True)]
        message = signals.EntityChanged(
            type=name or "",
            id=_routed(payload.get("i"), payload.get("r")),
            change_type=signals.ChangeType(payload.get("c", signals.ChangeType.SAVED)),
            data=payload.get("d") or {},
            ids=tuple(ids),
            origin="remote",
        )
        sender: Any = self._models.get(name or "", name)
        signals.send_safely(signals.entity_changed, sender, message=message, options=None)

    def flush(self) -> None:
        """Deliver every delayed message still held, now (here and to Redis)."""
        self.held.flush()

    def close(self) -> None:
        """Deliver what is still held (:meth:`flush`; later delayed messages go out at
        once), then close the link if this bus made it."""
        self.held.close()
        if self._owns_link:
            self.link.close()

    def __repr__(self) -> str:
        return f"RedisMessageBus({self.link!r})"


def _routed(id: Any, routing: Any) -> Any:
    """``id`` as an :class:`~esmapper.ids.Id` with ``routing`` when both are non-empty
    strings (a message's routed id), else as it came."""
    if isinstance(id, str) and isinstance(routing, str) and routing:
        return Id(id, routing=routing)
    return id
