"""One process's connection to Redis, shared by its RedisCache, HybridCache and
RedisMessageBus: fault handling, resynchronisation, the subscription and acknowledgements.

Rules owned here (docs/architecture.md, "Several processes"):

- **Bounded waits.** Every request has ``socket_timeout`` (and ``connect_timeout``); redis-py's
  own retries are off. The first failure opens a breaker for a back-off (``retry_min``
  doubling to ``retry_max``) during which no request is sent: callers get
  :class:`RedisUnavailable` at once. One warning is logged per outage, one info line when
  Redis answers again.
- **Nothing stale after an outage.** A removal that failed (:meth:`RedisLink.removal_failed`)
  or a Redis restart (a new ``run_id`` seen on any new connection) makes the link
  *unsynced*: reads serve nothing from Redis until :meth:`RedisLink.ready` has removed every
  cache entry of the namespace (``SCAN`` + ``UNLINK``) and told every process to drop its L1.
  A Redis instance the namespace was never synchronised with (``<ns>:run`` differs from its
  ``run_id``: a fresh server, or one restored from a snapshot) is flushed the same way.
- **The subscription and its lease.** A listener thread subscribes to the namespace's
  channels, reconnects with back-off, and pings through the subscription every
  ``lease / 5`` seconds; a pong proves every message published before that ping was
  handled. :meth:`RedisLink.lease_valid` holds while the last handled pong was sent less
  than ``lease`` seconds ago: an in-process L1 may serve only then. The listener handles
  what its socket holds before it judges the subscription, which is dead when a ping
  stayed unanswered for ``max(4 * lease, 1)`` seconds (a stalled process is not).
- **A lapse of the lease is a gap.** Once per lapse, before a pong renews the lease, the
  reset callbacks drop every in-process copy and the link is unsynced as after a failed
  removal: another process's write may have returned without reaching Redis, having
  waited for this lease to run out. An unsynced link flushes as soon as Redis answers (a
  thread retries :meth:`RedisLink.ready`), not at its next read.
- **Acknowledged broadcasts.** :meth:`RedisLink.broadcast` publishes a message and waits
  until every subscriber (``PUBLISH`` tells how many) acknowledged handling it, at most
  ``lease`` seconds: after that a silent subscriber's lease has run out, so it serves
  nothing it was told to drop.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import math
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from esmapper import _json
from esmapper.distributed._listener import FAILURES, Listener
from esmapper.errors import RedisUnavailable

__all__ = ["RedisLink", "RedisUnavailable"]

log = logging.getLogger("esmapper.redis")

T = TypeVar("T")

#: At most one "unreachable" warning in this many seconds (a flapping link logs once).
_WARN_EVERY = 60.0
#: Keys removed per UNLINK while flushing or removing by prefix.
_BATCH = 500


def _safe_url(url: str) -> str:
    """``url`` without its password (for log lines)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _run_id(info: bytes | str) -> str:
    text = info.decode() if isinstance(info, bytes) else info
    for line in text.splitlines():
        if line.startswith("run_id:"):
            return line.split(":", 1)[1].strip()
    return ""


class _Waiter:
    __slots__ = ("got", "needed")

    def __init__(self) -> None:
        self.got = 0
        self.needed: int | None = None


def _check_seconds(name: str, value: float) -> None:
    """``ValueError`` unless ``value`` is a finite number of seconds above zero (a timeout or
    lease of 0 or less would make every request fail, or every L1 read unsafe)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number of seconds above 0, not {value!r}")


class RedisLink(Listener):
    """The Redis connection of one process for one ``namespace`` (see the module docstring).

    ``url`` is a ``redis://`` (or ``rediss://``, ``unix://``) URL. Nothing is sent until
    first use; the listener thread starts with the first :meth:`on` or :meth:`start`.
    ``close()`` stops it and closes the connections. ``socket_timeout``,
    ``connect_timeout``, ``lease``, ``retry_min`` and ``retry_max`` are seconds: a value
    that is not a finite number above zero (or ``retry_max`` below ``retry_min``) raises
    ``ValueError`` (``TypeError`` for a non-number) before anything is sent; the cache and
    bus built on a link (``RedisCache``, ``HybridCache``, ``RedisMessageBus``,
    ``Mapper(redis_options=...)``) pass their options here.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "esmapper",
        socket_timeout: float = 0.25,
        connect_timeout: float | None = None,
        lease: float = 0.5,
        retry_min: float = 0.1,
        retry_max: float = 5.0,
    ) -> None:
        for name, value in (
            ("socket_timeout", socket_timeout),
            ("connect_timeout", connect_timeout),
            ("lease", lease),
            ("retry_min", retry_min),
            ("retry_max", retry_max),
        ):
            if value is not None:
                _check_seconds(name, value)
        if retry_max < retry_min:
            raise ValueError(f"retry_max ({retry_max}) is below retry_min ({retry_min})")
        self.url = url
        self.namespace = namespace
        self.socket_timeout = socket_timeout
        self.connect_timeout = socket_timeout if connect_timeout is None else connect_timeout
        self.lease = lease
        self.retry_min = retry_min
        self.retry_max = retry_max
        self.token = os.urandom(8).hex()
        self.client: redis.Redis = redis.Redis.from_url(
            url,
            socket_timeout=socket_timeout,
            socket_connect_timeout=self.connect_timeout,
            retry=Retry(NoBackoff(), 0),
            redis_connect_func=self._on_connection,
        )
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        # breaker
        self._down_until = 0.0
        self._outage_since: float | None = None
        self._backoff = retry_min
        self._warned_at = float("-inf")
        # synchronisation
        self._run_id: str | None = None
        self._synced = False
        self._dirty = 0  # events after which the namespace must be flushed, ever
        self._flushed_dirty = 0  # ... covered by the last flush
        self._resyncing = False  # a thread retries the flush until it is done
        # subscription
        self._handlers: dict[str, list[Callable[[dict[str, Any]], None]]] = {}
        self._resets: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._subscribed = False
        self._pong_sent = float("-inf")
        self._gap_lock = threading.RLock()  # a lapse is handled before the lease holds again
        self._lapsed = False  # the current lapse of the lease was handled
        self._subscriptions = 0
        # acknowledgements
        self._serials = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self._acked = threading.Condition(self._lock)
        _LINKS.add(self)

    # -- names -------------------------------------------------------------------------

    def key(self, key: str) -> str:
        """The Redis key of cache key ``key``: ``<namespace>:c:<key>``."""
        return f"{self.namespace}:c:{key}"

    def channel(self, name: str) -> str:
        return f"{self.namespace}:{name}"

    @property
    def _meta_key(self) -> str:
        return f"{self.namespace}:run"

    # -- requests and the breaker ------------------------------------------------------

    def available(self) -> bool:
        """Whether requests are sent (``False`` while backing off after a failure)."""
        return time.monotonic() >= self._down_until

    def call(self, request: Callable[[redis.Redis], T], *, force: bool = False) -> T:
        """Run ``request(client)``; raises :class:`RedisUnavailable` when it fails (the
        breaker then opens) or while the breaker is open (nothing is sent, unless
        ``force``: removals are always tried, so a process backing off never leaves an
        entry behind that others, already back, would serve)."""
        if not force and not self.available():
            raise RedisUnavailable(f"Redis at {_safe_url(self.url)} is unavailable (backing off)")
        started = time.monotonic()
        try:
            result = request(self.client)
        except FAILURES as exc:
            self._failed(exc, started)
            raise RedisUnavailable(f"Redis at {_safe_url(self.url)}: {exc}") from exc
        if self._outage_since is not None:
            self._recovered()
        return result

    def _failed(self, exc: BaseException, started: float) -> None:
        with self._lock:
            first = self._outage_since is None
            if first:
                self._outage_since = started
                self._backoff = self.retry_min
            else:
                self._backoff = min(self._backoff * 2, self.retry_max)
            self._down_until = time.monotonic() + self._backoff * random.uniform(0.8, 1.2)
            self._synced = False
        if first and time.monotonic() - self._warned_at > _WARN_EVERY:
            self._warned_at = time.monotonic()
            log.warning(
                "Redis at %s is unreachable (%s): the cache is bypassed and writes go on; "
                "retrying with back-off up to %g s",
                _safe_url(self.url),
                exc,
                self.retry_max,
            )

    def _recovered(self) -> None:
        with self._lock:
            if self._outage_since is None:
                return
            self._outage_since = None
            self._backoff = self.retry_min
            self._down_until = 0.0
        log.info("Redis at %s answers again", _safe_url(self.url))

    def outage_started(self) -> float | None:
        """``time.monotonic()`` at the start of the request that began the current outage."""
        return self._outage_since

    def _on_connection(self, connection: Any) -> None:
        """Every new connection: the usual handshake, then the server's ``run_id``. A
        changed one (Redis restarted, maybe from a snapshot) unsyncs the link and fails
        the request, so nothing is read from the new server before it was flushed."""
        connection.on_connect()
        connection.send_command("INFO", "server")
        run_id = _run_id(connection.read_response())
        with self._lock:
            changed = self._run_id is not None and run_id != self._run_id
            if changed and self._synced:
                self._synced = False
                raise redis.ConnectionError("Redis restarted (a new run_id): resynchronising")

    # -- synchronisation ---------------------------------------------------------------

    def removal_failed(self) -> None:
        """A removal may not have reached Redis: serve nothing until the namespace was
        flushed, and flush it as soon as Redis answers (a thread retries :meth:`ready`).
        The listener calls it too, after a lapse of its lease."""
        with self._lock:
            self._dirty += 1
            self._synced = False
        self._resync_soon()

    def _resync_soon(self) -> None:
        """Start the thread that retries :meth:`ready` (back-off: the breaker's) until the
        namespace is synchronised or the link closed; one at a time."""
        with self._lock:
            if self._resyncing or self._stop.is_set():
                return
            self._resyncing = True
        threading.Thread(target=self._resync, name="esmapper-redis-sync", daemon=True).start()

    def _resync(self) -> None:
        try:
            while not self._stop.is_set():
                with contextlib.suppress(Exception):  # closed meanwhile, or a redis-py bug
                    if self.ready():
                        return
                wait = max(self._down_until - time.monotonic(), 0.0) + self.retry_min / 2
                self._stop.wait(min(wait, self.retry_max))
        finally:
            with self._lock:
                self._resyncing = False
                # made dirty again after ready() answered (a removal failed, a lapse): its
                # _resync_soon found this thread still running, so this thread starts anew
                again = not self._synced and not self._stop.is_set()
            if again:
                self._resync_soon()

    def ready(self) -> bool:
        """Whether reads may be served from Redis now: the breaker is closed and the
        namespace is synchronised (flushing it first when needed; a thread that finds
        another one flushing gets ``False`` and reads through). A lapse of the subscription's
        lease not yet handled is handled first (:meth:`_note_lapse`)."""
        self._note_lapse(time.monotonic())
        if self._synced:
            return self.available()
        if not self.available() or not self._sync_lock.acquire(blocking=False):
            return False
        try:
            return self._synchronise()
        except RedisUnavailable:
            return False
        finally:
            self._sync_lock.release()

    def _synchronise(self) -> bool:
        with self._lock:
            dirty = self._dirty
        run_id = str(self.call(lambda c: c.info("server"))["run_id"])
        known = self.call(lambda c: c.get(self._meta_key))
        if dirty != self._flushed_dirty or known != run_id.encode():
            removed = self.flush()
            self.call(lambda c: c.set(self._meta_key, run_id))
            self._notify_reset()
            self.broadcast("inv", {"all": True})
            log.log(
                logging.WARNING if removed else logging.DEBUG,
                "esmapper cache %r flushed (%d entries): %s",
                self.namespace,
                removed,
                "Redis was out of reach (a removal failed, or the subscription lapsed)"
                if dirty != self._flushed_dirty
                else "first use of this Redis server (new, restarted or restored)",
            )
        with self._lock:
            self._flushed_dirty = dirty
            self._run_id = run_id
            self._synced = self._dirty == dirty
            return self._synced

    def flush(self) -> int:
        """Remove every cache entry of the namespace (``SCAN`` + ``UNLINK``); the count."""
        return self.remove_matching(self.key(""))

    def remove_matching(self, prefix: str) -> int:
        """Remove the Redis keys starting with ``prefix`` (``SCAN MATCH`` in batches of
        :data:`_BATCH`, ``UNLINK``); raises :class:`RedisUnavailable`."""
        pattern = _glob_escape(prefix) + "*"

        def run(client: redis.Redis) -> int:  # forced: a removal
            removed = 0
            batch: list[bytes] = []
            for key in client.scan_iter(match=pattern, count=_BATCH):
                batch.append(key)
                if len(batch) >= _BATCH:
                    removed += int(client.unlink(*batch))
                    batch = []
            if batch:
                removed += int(client.unlink(*batch))
            return removed

        return self.call(run, force=True)

    # -- acknowledged broadcasts -------------------------------------------------------

    def _acknowledge(self, origin: str, serial: int) -> None:
        if origin == self.token:
            self._acknowledged(serial)
            return
        with contextlib.suppress(RedisUnavailable):  # else the publisher's wait runs out
            self.call(lambda c: c.publish(self.channel(f"ack:{origin}"), serial))

    def _acknowledged(self, serial: int) -> None:
        with self._acked:
            waiter = self._waiters.get(serial)
            if waiter is not None:
                waiter.got += 1
                self._acked.notify_all()

    def broadcast(
        self,
        channel: str,
        message: dict[str, Any],
        before: Callable[[Any], None] | None = None,
    ) -> None:
        """Publish ``message`` on ``channel`` (after the requests ``before(pipeline)`` adds,
        in the same round trip) and wait until every subscriber handled it, at most
        ``lease`` seconds. Sent even while the breaker is open (it carries removals).
        Raises :class:`RedisUnavailable` (nothing is known to be sent)."""
        serial = next(self._serials)
        waiter = _Waiter()
        with self._lock:
            self._waiters[serial] = waiter
        payload = _json.dumps({**message, "o": self.token, "n": serial})

        def run(client: redis.Redis) -> Any:
            pipe = client.pipeline(transaction=False)
            if before is not None:
                before(pipe)
            pipe.publish(self.channel(channel), payload)
            return pipe.execute()

        try:
            results = self.call(run, force=True)
            deadline = time.monotonic() + self.lease
            with self._acked:
                waiter.needed = int(results[-1])
                self._acked.wait_for(
                    lambda: waiter.got >= (waiter.needed or 0),
                    timeout=max(0.0, deadline - time.monotonic()),
                )
        finally:
            with self._lock:
                self._waiters.pop(serial, None)

    def publish(self, channel: str, message: dict[str, Any]) -> None:
        """Publish ``message`` on ``channel`` without waiting for anyone (raises
        :class:`RedisUnavailable`)."""
        payload = _json.dumps({**message, "o": self.token})
        self.call(lambda c: c.publish(self.channel(channel), payload))

    # -- lifecycle ---------------------------------------------------------------------

    def close(self) -> None:
        """Stop the listener and close the connections (idempotent)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self._thread = None
        with contextlib.suppress(*FAILURES):
            self.client.close()

    def _after_fork(self) -> None:
        """In a forked child: new locks, no thread, no inherited connections."""
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()
        self._acked = threading.Condition(self._lock)
        self._waiters = {}
        self._subscribed = False
        self._synced = False
        self._gap_lock = threading.RLock()
        self._lapsed = False
        self._pong_sent = float("-inf")
        self._resyncing = False
        self._stop = threading.Event()
        self.token = os.urandom(8).hex()
        self.client.connection_pool.reset()
        had_thread, self._thread = self._thread is not None, None
        if had_thread:
            self.start()

    def __repr__(self) -> str:
        return f"RedisLink({_safe_url(self.url)!r}, namespace={self.namespace!r})"


_LINKS: weakref.WeakSet[RedisLink] = weakref.WeakSet()


def _reinit_after_fork() -> None:
    for link in list(_LINKS):
        link._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_after_fork)


def pipeline_unlink(keys: Iterable[str]) -> Callable[[Any], None]:
    """A ``before`` for :meth:`RedisLink.broadcast` that unlinks ``keys``."""
    names = list(keys)

    def add(pipe: Any) -> None:
        if names:
            pipe.unlink(*names)

    return add
