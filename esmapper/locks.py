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
it; kept by renewals) and ``expires_at``; :meth:`LockProvider.holder` reads it back as a
:class:`LockHolder` (``esmapper status`` shows who runs a migration, and since when).

Locks expire on their own, so a crashed holder (``kill -9``) blocks others for at most
``ttl``; there is no way to tell a dead holder from a live one on another machine. To break
a lock whose holder is known to be dead, delete its document
(``DELETE /<prefix>esmapper-locks/_doc/<name>``); a live holder then gets
:class:`~esmapper.errors.LockError` at its next renewal.

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
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
from elasticsearch import ConflictError, Elasticsearch, NotFoundError, TransportError

from esmapper._transport import is_unknown_outcome, once
from esmapper.errors import LockError
from esmapper.model.codec import format_datetime, parse_datetime

__all__ = ["Lock", "LockHolder", "LockProvider"]

LOCK_INDEX = "esmapper-locks"
_ATTEMPTS: Final = 2  # a write read back as not applied is sent once more


@attrs.frozen
class LockHolder:
    """Who holds a lock, as stored: ``owner`` (``host:pid:random``), ``acquired_at`` (when
    the holder took it) and ``expires_at`` (moved forward by every renewal)."""

    name: str
    owner: str
    acquired_at: _dt.datetime | None
    expires_at: _dt.datetime

    def live(self, now: _dt.datetime) -> bool:
        """Whether the lock is still held at ``now`` (not expired)."""
        return self.expires_at > now

    def __str__(self) -> str:
        since = "" if self.acquired_at is None else f" since {format_datetime(self.acquired_at)}"
        return f"{self.owner}{since}, expires {format_datetime(self.expires_at)}"


class Lock:
    """A held lock; use as a context manager or call :meth:`release`."""

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

    def _held(self, hit: Mapping[str, Any]) -> None:
        self._seq_no, self._primary_term = hit["_seq_no"], hit["_primary_term"]

    def renew(self, ttl: _dt.timedelta | None = None) -> None:
        """Extend the lock by ``ttl`` (default: its original ttl) from now.

        Sends a conditional index of the lock document; raises LockError if the lock was
        lost (it expired and another process took it) or released. A lost answer is read
        back: our owner with the ``expires_at`` just sent -> renewed; our owner at our last
        version -> not applied, sent once more; anything else -> lost.
        """
        if self.released:
            raise LockError(f"lock {self.name!r} was released", ids=[self.name])
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
                    refresh=True,
                )
            except (ConflictError, NotFoundError) as exc:
                if unknown is None:
                    raise lost from exc
                # a 409 after a lost answer: maybe our own first renewal was applied late
                current = provider.read(self.name)
                if _renewed_by(current, self.owner, body):
                    assert current is not None
                    self._held(current)
                    return
                raise lost from exc
            except TransportError as exc:
                if not is_unknown_outcome(exc):
                    raise
                unknown = exc
                current = provider.read(self.name)
                if _renewed_by(current, self.owner, body):
                    assert current is not None
                    self._held(current)
                    return
                if current is None or not self._is_ours_unchanged(current):
                    raise lost from exc
                continue  # not applied: still our last version, send it once more
            self._held(response.body)
            return
        raise LockError(
            f"renewing lock {self.name!r} had an unknown outcome twice ({unknown})",
            index=provider.index,
            ids=[self.name],
        ) from unknown

    def _is_ours_unchanged(self, hit: Mapping[str, Any]) -> bool:
        same = (hit["_seq_no"], hit["_primary_term"]) == (self._seq_no, self._primary_term)
        return same and _owner(hit) == self.owner

    def release(self) -> None:
        """Delete the lock document (a no-op if it was already lost or released). A lost
        answer is read back: gone or not ours -> released; still ours at our version ->
        sent once more (after that the lock is left to expire)."""
        if self.released:
            return
        self.released = True
        provider = self.provider
        for _ in range(_ATTEMPTS):
            try:
                once(provider.client).delete(
                    index=provider.index,
                    id=self.name,
                    if_seq_no=self._seq_no,
                    if_primary_term=self._primary_term,
                    refresh=True,
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


def _owner(hit: Mapping[str, Any] | None) -> str | None:
    if hit is None:
        return None
    owner = (hit.get("_source") or {}).get("owner")
    return None if owner is None else str(owner)


def _renewed_by(hit: Mapping[str, Any] | None, owner: str, body: Mapping[str, Any]) -> bool:
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
        return {
            "owner": lock.owner,
            "acquired_at": format_datetime(lock.acquired_at),
            "expires_at": format_datetime(self.clock() + lock.ttl),
        }

    def read(self, name: str) -> dict[str, Any] | None:
        """The lock document ``name`` (``GET``, with ``_seq_no``/``_primary_term``), or
        ``None`` when there is none."""
        try:
            return dict(self.client.get(index=self.index, id=name).body)
        except NotFoundError:
            return None

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
        )

    def try_acquire(self, name: str, ttl: _dt.timedelta) -> Lock | None:
        """The lock, or ``None`` when another live holder has it (one attempt).

        A lost answer to the create is read back: our owner -> we hold it; no document ->
        not applied, the create is sent once more; another owner -> as a 409.
        """
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        lock = Lock(self, name, owner, ttl, seq_no=-1, primary_term=-1)
        body = self.body(lock)
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                response = once(self.client).index(
                    index=self.index, id=name, document=body, op_type="create", refresh=True
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
            lock._held(response.body)
            return lock
        raise AssertionError("unreachable")  # pragma: no cover

    def _take_over_expired(
        self, lock: Lock, current: Mapping[str, Any] | None = None, *, resend: bool = True
    ) -> Lock | None:
        """After a 409 (or a lost answer) on the create: ``lock`` if the document is ours
        (our own create was applied), taken over if it expired, else ``None``. A lost answer
        to the take-over is read back: ours -> held; the expired holder's version still
        there -> not applied, sent once more."""
        if current is None:
            current = self.read(lock.name)
            if current is None:
                return None  # released meanwhile: the next attempt will create it
        if _owner(current) == lock.owner:
            lock._held(current)
            return lock
        expires = parse_datetime(current["_source"]["expires_at"])
        if expires > self.clock():
            return None
        body = self.body(lock)
        try:
            response = once(self.client).index(
                index=self.index,
                id=lock.name,
                document=body,
                if_seq_no=current["_seq_no"],
                if_primary_term=current["_primary_term"],
                refresh=True,
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
                lock._held(now)
                return lock
            unchanged = (now["_seq_no"], now["_primary_term"]) == (
                current["_seq_no"],
                current["_primary_term"],
            )
            return (
                self._take_over_expired(lock, now, resend=False) if resend and unchanged else None
            )
        lock._held(response.body)
        return lock

    def acquire(
        self,
        name: str,
        ttl: _dt.timedelta,
        *,
        wait: _dt.timedelta = _dt.timedelta(0),
        poll: float = 0.5,
    ) -> Lock:
        """Acquire ``name``, waiting up to ``wait`` (polling every ``poll`` seconds; an
        expired holder is taken over). Raises LockError, naming the holder, when it stays
        held."""
        deadline = time.monotonic() + wait.total_seconds()
        while True:
            lock = self.try_acquire(name, ttl)
            if lock is not None:
                return lock
            if time.monotonic() >= deadline:
                holder = self.holder(name)
                by = "" if holder is None else f" ({holder})"
                raise LockError(
                    f"lock {name!r} is held by another process{by}", index=self.index, ids=[name]
                )
            self.sleep(poll)
