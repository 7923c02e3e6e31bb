"""The subscription of a :class:`~esmapper.distributed.link.RedisLink`: the listener
thread, its lease and the gaps (the rules are in the ``link`` module docstring)."""

from __future__ import annotations

import collections
import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from esmapper import _json

__all__ = ["FAILURES", "Listener"]

log = logging.getLogger("esmapper.redis")

#: What a failing request raises (redis-py's errors and socket errors).
FAILURES: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
#: Messages handled in a row before the listener looks at its pings again.
_DRAIN = 1000


class Listener:
    """The subscription part of :class:`~esmapper.distributed.link.RedisLink` (a mixin:
    the state is the link's, made in its ``__init__``)."""

    namespace: str
    token: str
    lease: float
    socket_timeout: float
    retry_min: float
    retry_max: float
    client: redis.Redis
    _lock: threading.Lock
    _gap_lock: threading.RLock
    _stop: threading.Event
    _thread: threading.Thread | None
    _handlers: dict[str, list[Callable[[dict[str, Any]], None]]]
    _resets: list[Callable[[], None]]
    _subscribed: bool
    _subscriptions: int
    _pong_sent: float
    _lapsed: bool
    _synced: bool
    _outage_since: float | None

    def channel(self, name: str) -> str:
        raise NotImplementedError

    def removal_failed(self) -> None:
        raise NotImplementedError

    def _resync_soon(self) -> None:
        raise NotImplementedError

    def _acknowledge(self, origin: str, serial: int) -> None:
        raise NotImplementedError

    def _acknowledged(self, serial: int) -> None:
        raise NotImplementedError

    def on(self, channel: str, handler: Callable[[dict[str, Any]], None]) -> None:
        """Call ``handler(message)`` (a decoded JSON object) for each message published on
        channel ``channel`` of the namespace by another process; starts the listener."""
        with self._lock:
            self._handlers.setdefault(channel, []).append(handler)
        self.start(restart=True)

    def on_reset(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever messages may have been missed (the subscription
        broke or was made again) or the namespace was flushed."""
        with self._lock:
            self._resets.append(callback)

    def lease_valid(self) -> bool:
        """Whether every message published more than ``lease`` seconds ago was handled."""
        return self._subscribed and time.monotonic() - self._pong_sent < self.lease

    def _note_lapse(self, now: float) -> None:
        """A gap: the lease ran out (Redis stopped answering, was out of reach, or this
        process stalled), so this process may have missed invalidations, and another
        process's write may have returned without reaching Redis (it waited for this
        lease to run out). Once per lapse, before the lease can hold again: drop every
        in-process copy (the reset callbacks) and serve nothing from Redis until the
        namespace was flushed (flushed as soon as Redis answers)."""
        pong = self._pong_sent
        if self._lapsed or pong == float("-inf") or now - pong < self.lease:
            return  # (the usual case, without the lock; checked again under it)
        with self._gap_lock:
            pong = self._pong_sent
            if self._lapsed or pong == float("-inf") or now - pong < self.lease:
                return
            self._lapsed = True
            log.debug("the Redis subscription lost its lease: dropping the local copies")
            self._notify_reset()
            self.removal_failed()

    def _leased(self, sent: float) -> None:
        """A pong for a ping (or the answer to SUBSCRIBE) sent at ``sent``: the lease holds
        until ``sent + lease``, once a lapse before it was handled."""
        with self._gap_lock:
            now = time.monotonic()
            self._note_lapse(now)
            self._pong_sent = max(self._pong_sent, sent)
            if now - self._pong_sent < self.lease:
                self._lapsed = False

    def start(self, *, restart: bool = False) -> None:
        """Start the listener thread (idempotent; ``restart`` re-subscribes a running one
        to the current channels)."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                if restart:
                    self._subscriptions += 1
                return
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._listen, name=f"esmapper-redis-{self.namespace}", daemon=True
            )
            self._thread.start()

    def _channels(self) -> list[str]:
        with self._lock:
            names = [*self._handlers, f"ack:{self.token}"]
        return [self.channel(n) for n in names]

    def _listen(self) -> None:
        delay = self.retry_min
        while not self._stop.is_set():
            pubsub = None
            try:
                with self._lock:
                    generation = self._subscriptions
                pubsub = self.client.pubsub()  # type: ignore[no-untyped-call]
                self._subscribe(pubsub)
                delay = self.retry_min
                self._pump(pubsub, generation)
            except FAILURES as exc:
                if self._subscribed or self._outage_since is None:
                    log.debug("the Redis subscription broke: %s", exc)
            finally:
                if self._subscribed:
                    self._subscribed = False
                    self._notify_reset()
                if pubsub is not None:
                    with contextlib.suppress(*FAILURES):
                        pubsub.close()
            if self._stop.wait(delay * random.uniform(0.8, 1.2)):
                break
            delay = min(delay * 2, self.retry_max)

    def _subscribe(self, pubsub: Any) -> None:
        channels = self._channels()
        sent = time.monotonic()
        pubsub.subscribe(*channels)
        pending = set(channels)
        deadline = sent + max(1.0, 4 * self.socket_timeout)
        while pending:
            message = pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))
            if message is None:
                if time.monotonic() >= deadline:
                    raise redis.TimeoutError("no answer to SUBSCRIBE")
                continue
            if message["type"] == "subscribe":
                pending.discard(message["channel"].decode())
        self._notify_reset()  # what was published before SUBSCRIBE may have been missed
        self._leased(sent)
        self._subscribed = True
        if not self._synced:  # flush now, not at the next read (not on this thread: acks)
            self._resync_soon()

    def _pump(self, pubsub: Any, generation: int) -> None:
        """Handle what the subscription delivers, ping every ``lease / 5``; raises when a
        ping went unanswered for ``max(4 * lease, 1)`` seconds. What Redis already
        delivered is handled before anything is judged: after this process stalled, its
        socket holds the messages (and pongs) of the stall."""
        interval = self.lease / 5
        limit = max(4 * self.lease, 1.0)
        unanswered: collections.deque[float] = collections.deque()
        next_ping = time.monotonic()
        while not self._stop.is_set():
            with self._lock:
                if self._subscriptions != generation:
                    return  # new channels: subscribe again
            message = pubsub.get_message(timeout=max(0.0, next_ping - time.monotonic()))
            handled = 0
            while message is not None:
                self._dispatch(message)
                handled += 1
                message = pubsub.get_message(timeout=0) if handled < _DRAIN else None
            now = time.monotonic()
            self._note_lapse(now)
            while unanswered and unanswered[0] <= self._pong_sent:
                unanswered.popleft()
            if unanswered and now - unanswered[0] > limit:
                raise redis.TimeoutError("the subscription stopped answering pings")
            if now >= next_ping:
                pubsub.ping(repr(now))
                unanswered.append(now)
                next_ping = now + interval

    def _dispatch(self, message: dict[str, Any]) -> None:
        if message["type"] == "pong":
            with contextlib.suppress(TypeError, ValueError):
                self._leased(float(message["data"]))
            return
        if message["type"] != "message":
            return
        channel = message["channel"].decode()[len(self.namespace) + 1 :]
        if channel == f"ack:{self.token}":
            self._acknowledged(int(message["data"]))
            return
        try:
            payload = _json.loads(message["data"])
        except ValueError:
            log.warning("ignored an unreadable message on %s", channel)
            return
        origin, serial = payload.get("o"), payload.get("n")
        if origin != self.token:
            for handler in list(self._handlers.get(channel, ())):
                try:
                    handler(payload)
                except Exception:
                    log.exception("a handler of Redis channel %s failed", channel)
        if serial is not None and origin is not None:
            self._acknowledge(origin, serial)

    def _notify_reset(self) -> None:
        for callback in list(self._resets):
            try:
                callback()
            except Exception:
                log.exception("a reset callback failed")
