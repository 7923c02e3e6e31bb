"""Distributed locks kept as documents in an Elasticsearch index.

A lock named ``migrations`` or ``reindex:employees`` is the document with that id in the
``<prefix>esmapper-locks`` index:

- **acquire** sends a create-only write (``op_type=create``) with ``expires_at``; a 409
  means someone holds it. An expired holder is taken over with a write conditioned on the
  expired document's ``if_seq_no``/``if_primary_term``, so two contenders cannot both win.
- **renew** moves ``expires_at`` forward, conditioned on the lock's own last version: a
  holder whose lock was taken over (it expired) gets :class:`~esmapper.errors.LockError`.
- **release** deletes the document, conditioned the same way.

The document holds ``owner`` (``host:pid:random``), ``acquired_at`` (when this holder took
it; kept by renewals), ``expires_at`` and, on Linux, ``process`` (the holder's identity,
:mod:`esmapper._liveness`); :meth:`LockProvider.holder` reads it back as a
:class:`LockHolder` (``esmapper status`` shows who runs a migration, and since when).

Expiry and the heartbeat. A lock is a lease: :data:`DEFAULT_TTL` (90 s) unless the caller
says otherwise, and a lock taken with :meth:`LockProvider.acquire` (or ``try_acquire``) is
renewed by a daemon heartbeat thread every third of its ttl (30 s by default) for as long
as the holder keeps the :class:`Lock` and has not released it. Long work that makes no
callbacks (a user migration, a synchronous ``_reindex`` pass) therefore keeps its lock,
and a holder that dies (``kill -9``, OOM, a deploy) stops renewing: its lock lapses within
one ttl of its last renewal. A holder that hangs while alive keeps its lock; kill it. The
holder's own code calls :meth:`Lock.check` (no request: raises
:class:`~esmapper.errors.LockError` when the heartbeat found the lock taken over, or could
not renew it for a whole ttl) or :meth:`Lock.renew` (a conditional write: proves the lock
is still ours right now, e.g. just before an irreversible step).

A dead holder on this machine. When the stored ``process`` ran on this machine (same boot,
same pid namespace, same user) and is certainly gone, the lock is taken over at once,
without waiting for it to expire (:func:`esmapper._liveness.gone`); a holder on another
machine can only be waited for. To break a lock whose holder is known to be dead
elsewhere, delete its document (``DELETE /<prefix>esmapper-locks/_doc/<name>``); a live
holder then gets :class:`~esmapper.errors.LockError` at its next renewal.

Every write is sent once, without the transport's retries (:mod:`esmapper._transport`): a
blind resend of a create whose answer was lost got 409 from our own document and locked the
process out of its own lock. A lost answer (a dropped connection, a timeout, an unreadable
response) is settled by reading the lock document back (``GET``); the owner string is unique
per attempt, so "the owner is ours" means our write was applied (its ``_seq_no`` /
``_primary_term`` are taken from the GET):

- acquire (create, and the take-over): ours -> held; no document -> not applied, the create
  is sent once more; another owner -> held by someone else (or taken over if expired);
- renew: ours with the ``expires_at`` just sent -> renewed; ours at our last version -> not
  applied, sent once more; anything else -> :class:`~esmapper.errors.LockError`;
- release: gone or not ours -> released; ours at our version -> sent once more.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeGuard

import attrs
from elasticsearch import ConflictError, Elasticsearch, NotFoundError, TransportError

from esmapper import _liveness
from esmapper._transport import is_unknown_outcome, once
from esmapper.errors import LockError
from esmapper.model.codec import format_datetime, parse_datetime

__all__ = ["DEFAULT_TTL", "Lock", "LockHolder", "LockProvider", "check_duration"]

log = logging.getLogger("esmapper.locks")

LOCK_INDEX = "esmapper-locks"
#: The expiry of esmapper's locks unless told otherwise: renewed every ttl/3 (30 s) by the
#: heartbeat, a dead holder's lock lapses within 90 s of its last renewal.
DEFAULT_TTL: Final = _dt.timedelta(seconds=90)
HEARTBEATS_PER_TTL: Final = 3
_ATTEMPTS: Final = 2  # a write read back as not applied is sent once more
_RETRY_AFTER: Final = 1.0  # seconds before the heartbeat retries a renewal that failed


def check_duration(name: str, value: _dt.timedelta, *, zero: bool = False) -> _dt.timedelta:
    """``value`` if it is a usable duration for ``name``: a ``timedelta`` above zero (at
    least zero with ``zero``). Raises ``TypeError`` for another type, ``ValueError`` for a
    duration out of range; callers check before anything is sent."""
    if not isinstance(value, _dt.timedelta):
        raise TypeError(f"{name} must be a datetime.timedelta, not {type(value).__name__}")
    if value < _dt.timedelta(0) or (value == _dt.timedelta(0) and not zero):
        bound = "at least 0" if zero else "more than 0"
        raise ValueError(f"{name} must be {bound} seconds, not {value.total_seconds():g}")
    return value


@attrs.frozen
class LockHolder:
    """Who holds a lock, as stored: ``owner`` (``host:pid:random``), ``acquired_at`` (when
    the holder took it) and ``expires_at`` (moved forward by every renewal)."""

    name: str
    owner: str
    acquired_at: _dt.datetime | None
    expires_at: _dt.datetime
    gone: bool = False
    """The holder ran on this machine and its process is gone (:mod:`esmapper._liveness`)."""

    def live(self, now: _dt.datetime) -> bool:
        """Whether the lock is still held at ``now``: not expired, and its holder not known
        to be gone."""
        return self.expires_at > now and not self.gone

    def __str__(self) -> str:
        since = "" if self.acquired_at is None else f" since {format_datetime(self.acquired_at)}"
        dead = " (its process is gone)" if self.gone else ""
        return f"{self.owner}{since}, expires {format_datetime(self.expires_at)}{dead}"


class Lock:
    """A held lock; use as a context manager or call :meth:`release`.

    Thread-safe: the heartbeat thread (:meth:`start_heartbeat`) and the holder's own
    :meth:`renew` / :meth:`release` calls are serialized, so they never race on the lock
    document's version.
    """

    def __init__(
        self,
        provider: LockProvider,
        name: str,
        owner: str,
        ttl: _dt.timedelta,
        *,
        seq_no: int,
        primary_term: int,
        acquired_at: _dt.datetime | None = None,
    ) -> None:
        self.provider = provider
        self.name = name
        self.owner = owner
        self.ttl = ttl
        self.acquired_at = acquired_at or provider.clock()
        self._seq_no = seq_no
        self._primary_term = primary_term
        self.released = False
        self._mutex = threading.RLock()
        self._renewed_at = time.monotonic()  # of the last write known to be applied
        self._lost: LockError | None = None
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def _held(self, hit: Mapping[str, Any]) -> Lock:
        """This lock, now at the version of ``hit`` (a write of ours known to be applied)."""
        self._seq_no, self._primary_term = hit["_seq_no"], hit["_primary_term"]
        self._renewed_at = time.monotonic()
        return self

    def _check_held(self) -> None:
        if self.released:
            raise LockError(f"lock {self.name!r} was released", ids=[self.name])
        if self._lost is not None:
            raise self._lost

    @property
    def renewed_ago(self) -> float:
        """Seconds since the lock document was last written by us (acquired or renewed)."""
        return time.monotonic() - self._renewed_at

    def check(self) -> None:
        """Raise :class:`~esmapper.errors.LockError` when the lock is known to be lost:
        released, taken over (found by a renewal, the heartbeat's included), or not renewed
        for a whole ttl (it may have expired and been taken over). Sends nothing."""
        self._check_held()
        stale = self.renewed_ago
        if stale >= self.ttl.total_seconds():
            raise LockError(
                f"lock {self.name!r} was not renewed for {stale:.0f}s (ttl "
                f"{self.ttl.total_seconds():.0f}s): it may have expired and been taken over",
                index=self.provider.index,
                ids=[self.name],
            )

    def renew(self, ttl: _dt.timedelta | None = None) -> None:
        """Extend the lock by ``ttl`` (default: its current ttl, which ``ttl`` replaces)
        from now.

        Sends a conditional index of the lock document; raises LockError if the lock was
        lost (it expired and another process took it) or released. A lost answer is read
        back: our owner with the ``expires_at`` just sent -> renewed; our owner at our last
        version -> not applied, sent once more; anything else -> lost.
        """
        if ttl is not None:
            check_duration("ttl", ttl)
        with self._mutex:
            self._check_held()
            self._renew(ttl)

    def _lose(self, lost: LockError) -> LockError:
        self._lost = lost
        return lost

    def _renew(self, ttl: _dt.timedelta | None) -> None:
        self.ttl = ttl or self.ttl
        provider = self.provider
        body = provider.body(self)
        lost = LockError(
            f"lock {self.name!r} was lost (it expired and was taken over)",
            index=provider.index,
            ids=[self.name],
        )
        unknown: TransportError | None = None
        for _ in range(_ATTEMPTS):
            try:
                response = once(provider.client).index(
                    index=provider.index,
                    id=self.name,
                    document=body,
                    if_seq_no=self._seq_no,
                    if_primary_term=self._primary_term,
                )
            except (ConflictError, NotFoundError) as exc:
                if unknown is None:
                    raise self._lose(lost) from exc
                failure: Exception = exc  # after a lost answer: maybe ours applied late
            except TransportError as exc:
                if not is_unknown_outcome(exc):
                    raise
                unknown = failure = exc
            else:
                self._held(response.body)
                return
            current = provider.read(self.name)
            if _renewed_by(current, self.owner, body):
                self._held(current)
                return
            if failure is not unknown or current is None or not self._is_ours_unchanged(current):
                raise self._lose(lost) from failure
            # not applied: still our last version, send it once more
        raise LockError(
            f"renewing lock {self.name!r} had an unknown outcome twice ({unknown})",
            index=provider.index,
            ids=[self.name],
        ) from unknown

    def _is_ours_unchanged(self, hit: Mapping[str, Any]) -> bool:
        same = (hit["_seq_no"], hit["_primary_term"]) == (self._seq_no, self._primary_term)
        return same and _owner(hit) == self.owner

    def start_heartbeat(self) -> Lock:
        """Renew the lock every ttl/3 from a daemon thread until it is released (or this
        object is garbage-collected, or the lock is found lost); see the module docstring.
        A renewal that fails without losing the lock (the server unreachable) is retried
        after a second. Idempotent; returns the lock."""
        with self._mutex:
            if self._heartbeat is None and not self.released:
                self._heartbeat = threading.Thread(
                    target=_beat,
                    args=(weakref.ref(self), self._stop),
                    name=f"esmapper-lock:{self.name}",
                    daemon=True,
                )
                self._heartbeat.start()
        return self

    def release(self) -> None:
        """Stop the heartbeat and delete the lock document (a no-op if it was already lost
        or released). A lost answer is read back: gone or not ours -> released; still ours
        at our version -> sent once more (after that the lock is left to expire)."""
        self._stop.set()
        with self._mutex:
            if self.released:
                return
            self.released = True
            if self._lost is None:
                self._delete()
        beat = self._heartbeat
        if beat is not None and beat is not threading.current_thread():
            beat.join(timeout=5)

    def _delete(self) -> None:
        provider = self.provider
        for _ in range(_ATTEMPTS):
            try:
                once(provider.client).delete(
                    index=provider.index,
                    id=self.name,
                    if_seq_no=self._seq_no,
                    if_primary_term=self._primary_term,
                )
                return
            except (ConflictError, NotFoundError):
                return
            except TransportError as exc:
                if not is_unknown_outcome(exc):
                    raise
                current = provider.read(self.name)
                if current is None or not self._is_ours_unchanged(current):
                    return  # released (or no longer ours)

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _beat(ref: weakref.ref[Lock], stop: threading.Event) -> None:
    """The heartbeat thread of the lock ``ref`` (held weakly: a lock dropped without a
    release stops being renewed and expires)."""
    wait = _beat_interval(ref)
    while wait is not None and not stop.wait(wait):
        lock = ref()
        if lock is None:
            return
        try:
            lock.renew()
        except LockError as exc:
            if lock._lost is not None or lock.released:
                log.error("the heartbeat of lock %r stopped: %s", lock.name, exc)
                return
            log.warning("the heartbeat could not renew lock %r: %s; retrying", lock.name, exc)
            wait = _RETRY_AFTER
        except Exception as exc:  # the server unreachable, a closed client: retry
            log.warning("the heartbeat could not renew lock %r: %s; retrying", lock.name, exc)
            wait = _RETRY_AFTER
        else:
            wait = _beat_interval(ref)
        del lock


def _beat_interval(ref: weakref.ref[Lock]) -> float | None:
    lock = ref()
    return None if lock is None else lock.ttl.total_seconds() / HEARTBEATS_PER_TTL


def _owner(hit: Mapping[str, Any] | None) -> str | None:
    if hit is None:
        return None
    owner = (hit.get("_source") or {}).get("owner")
    return None if owner is None else str(owner)


def _renewed_by(
    hit: Mapping[str, Any] | None, owner: str, body: Mapping[str, Any]
) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``hit`` is the lock document ``owner`` wrote with ``body``."""
    if hit is None or _owner(hit) != owner:
        return False
    return bool((hit.get("_source") or {}).get("expires_at") == body["expires_at"])


class LockProvider:
    """Acquires named locks in ``<index_prefix>esmapper-locks``."""

    def __init__(
        self,
        client: Elasticsearch,
        *,
        index_prefix: str = "",
        clock: Callable[[], _dt.datetime] | None = None,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.client = client
        self.index = f"{index_prefix}{LOCK_INDEX}"
        self.clock = clock or (lambda: _dt.datetime.now(_dt.timezone.utc))
        self.sleep = sleep

    def body(self, lock: Lock) -> dict[str, Any]:
        """The lock document: ``owner``, ``acquired_at`` (the lock's, kept by renewals) and
        ``expires_at`` (now plus the ttl)."""
        body: dict[str, Any] = {
            "owner": lock.owner,
            "acquired_at": format_datetime(lock.acquired_at),
            "expires_at": format_datetime(self.clock() + lock.ttl),
        }
        process = _liveness.identity()
        if process is not None:
            body["process"] = process
        return body

    def read(self, name: str) -> dict[str, Any] | None:
        """The lock document ``name`` (``GET``, with ``_seq_no``/``_primary_term``), or
        ``None`` when there is none."""
        try:
            return dict(self.client.get(index=self.index, id=name).body)
        except NotFoundError:
            return None

    def live_holder(self, name: str) -> LockHolder | None:
        """The :meth:`holder` of ``name`` while its lease is live (:meth:`LockHolder.live` by
        this provider's clock), else ``None``."""
        holder = self.holder(name)
        return holder if holder is not None and holder.live(self.clock()) else None

    def holder(self, name: str) -> LockHolder | None:
        """Who holds ``name`` (``GET`` of the lock document; a missing document or index is
        ``None``), expired or not: see :meth:`LockHolder.live`."""
        current = self.read(name)
        if current is None:
            return None
        source = current.get("_source") or {}
        acquired = source.get("acquired_at")
        return LockHolder(
            name=name,
            owner=str(source.get("owner")),
            acquired_at=None if acquired is None else parse_datetime(acquired),
            expires_at=parse_datetime(source["expires_at"]),
            gone=_liveness.gone(source.get("process")),
        )

    def try_acquire(
        self, name: str, ttl: _dt.timedelta = DEFAULT_TTL, *, heartbeat: bool = True
    ) -> Lock | None:
        """The lock, or ``None`` when another live holder has it (one attempt); with
        ``heartbeat`` it is renewed every ttl/3 until released (:meth:`Lock.start_heartbeat`).

        A lost answer to the create is read back: our owner -> we hold it; no document ->
        not applied, the create is sent once more; another owner -> as a 409. A ``ttl``
        that is not a ``timedelta`` above zero raises ``ValueError`` (``TypeError``) before
        anything is sent.
        """
        check_duration("ttl", ttl)
        lock = self._try_acquire(name, ttl)
        return lock.start_heartbeat() if lock is not None and heartbeat else lock

    def _try_acquire(self, name: str, ttl: _dt.timedelta) -> Lock | None:
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        lock = Lock(self, name, owner, ttl, seq_no=-1, primary_term=-1)
        body = self.body(lock)
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                response = once(self.client).index(
                    index=self.index, id=name, document=body, op_type="create"
                )
            except ConflictError:
                return self._take_over_expired(lock)  # reads the document: ours is held
            except TransportError as exc:
                if not is_unknown_outcome(exc):
                    raise
                current = self.read(name)
                if current is None and attempt < _ATTEMPTS:
                    continue  # not applied: a create is safe to send again
                if current is None:
                    raise
                return self._take_over_expired(lock, current)
            return lock._held(response.body)
        raise AssertionError("unreachable")  # pragma: no cover

    def _take_over_expired(
        self, lock: Lock, current: Mapping[str, Any] | None = None, *, resend: bool = True
    ) -> Lock | None:
        """After a 409 (or a lost answer) on the create: ``lock`` if the document is ours
        (our own create was applied), taken over if it expired or its holder's process is
        gone (:func:`esmapper._liveness.gone`), else ``None``. A lost answer to the take-over
        is read back: ours -> held; the previous holder's version still there -> not
        applied, sent once more."""
        if current is None:
            current = self.read(lock.name)
            if current is None:
                return None  # released meanwhile: the next attempt will create it
        if _owner(current) == lock.owner:
            return lock._held(current)
        expires = parse_datetime(current["_source"]["expires_at"])
        if expires > self.clock():
            if not _liveness.gone(current["_source"].get("process")):
                return None
            log.warning(
                "taking over lock %r before it expires: its holder %s is gone",
                lock.name,
                _owner(current),
            )
        body = self.body(lock)
        try:
            response = once(self.client).index(
                index=self.index,
                id=lock.name,
                document=body,
                if_seq_no=current["_seq_no"],
                if_primary_term=current["_primary_term"],
            )
        except ConflictError:
            return None
        except TransportError as exc:
            if not is_unknown_outcome(exc):
                raise
            now = self.read(lock.name)  # taken over by us, or not
            if now is None:
                return None  # released meanwhile: the next attempt will create it
            if _owner(now) == lock.owner:
                return lock._held(now)
            unchanged = (now["_seq_no"], now["_primary_term"]) == (
                current["_seq_no"],
                current["_primary_term"],
            )
            return (
                self._take_over_expired(lock, now, resend=False) if resend and unchanged else None
            )
        return lock._held(response.body)

    def acquire(
        self,
        name: str,
        ttl: _dt.timedelta = DEFAULT_TTL,
        *,
        wait: _dt.timedelta = _dt.timedelta(0),
        poll: float = 0.5,
        heartbeat: bool = True,
    ) -> Lock:
        """Acquire ``name``, waiting up to ``wait`` (polling every ``poll`` seconds; an
        expired holder, or one whose process is gone, is taken over); renewed by a
        heartbeat unless ``heartbeat=False``. Raises LockError, naming the holder, when it
        stays held; ``ValueError`` before anything is sent for a ``ttl`` not above zero, a
        negative ``wait`` or a ``poll`` not above zero."""
        check_duration("ttl", ttl)
        check_duration("wait", wait, zero=True)
        if isinstance(poll, bool) or not isinstance(poll, int | float) or not poll > 0:
            raise ValueError(f"poll must be a number of seconds above 0, not {poll!r}")
        deadline = time.monotonic() + wait.total_seconds()
        while True:
            lock = self.try_acquire(name, ttl, heartbeat=heartbeat)
            if lock is not None:
                return lock
            if time.monotonic() >= deadline:
                holder = self.holder(name)
                by = "" if holder is None else f" ({holder})"
                raise LockError(
                    f"lock {name!r} is held by another process{by}", index=self.index, ids=[name]
                )
            self.sleep(poll)
