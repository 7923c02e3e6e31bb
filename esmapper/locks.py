"""Distributed locks kept as documents in an Elasticsearch index.

A lock named ``migrations`` or ``reindex:employees`` is the document with that id in the
``<prefix>esmapper-locks`` index:

- **acquire** sends a create-only write (``op_type=create``) with ``expires_at``; a 409
  means someone holds it. An expired holder is taken over with a write conditioned on the
  expired document's ``if_seq_no``/``if_primary_term``, so two contenders cannot both win.
- **renew** moves ``expires_at`` forward, conditioned on the lock's own last version: a
  holder whose lock was taken over (it expired) gets :class:`~esmapper.errors.LockError`.
- **release** deletes the document, conditioned the same way.

Locks expire on their own, so a crashed holder blocks others for at most ``ttl``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

from elasticsearch import ConflictError, Elasticsearch, NotFoundError

from esmapper.errors import LockError
from esmapper.model.codec import format_datetime, parse_datetime

__all__ = ["Lock", "LockProvider"]

LOCK_INDEX = "esmapper-locks"


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
    ) -> None:
        self.provider = provider
        self.name = name
        self.owner = owner
        self.ttl = ttl
        self._seq_no = seq_no
        self._primary_term = primary_term
        self.released = False

    def renew(self, ttl: _dt.timedelta | None = None) -> None:
        """Extend the lock by ``ttl`` (default: its original ttl) from now.

        Sends a conditional index of the lock document; raises LockError if the lock was
        lost (it expired and another process took it) or released.
        """
        if self.released:
            raise LockError(f"lock {self.name!r} was released", ids=[self.name])
        self.ttl = ttl or self.ttl
        try:
            response = self.provider.client.index(
                index=self.provider.index,
                id=self.name,
                document=self.provider.body(self),
                if_seq_no=self._seq_no,
                if_primary_term=self._primary_term,
                refresh=True,
            )
        except (ConflictError, NotFoundError) as exc:
            raise LockError(
                f"lock {self.name!r} was lost (it expired and was taken over)",
                index=self.provider.index,
                ids=[self.name],
            ) from exc
        self._seq_no, self._primary_term = response["_seq_no"], response["_primary_term"]

    def release(self) -> None:
        """Delete the lock document (a no-op if it was already lost or released)."""
        if self.released:
            return
        self.released = True
        with contextlib.suppress(ConflictError, NotFoundError):
            self.provider.client.delete(
                index=self.provider.index,
                id=self.name,
                if_seq_no=self._seq_no,
                if_primary_term=self._primary_term,
                refresh=True,
            )

    def __enter__(self) -> Lock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


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
        now = self.clock()
        return {
            "owner": lock.owner,
            "acquired_at": format_datetime(now),
            "expires_at": format_datetime(now + lock.ttl),
        }

    def try_acquire(self, name: str, ttl: _dt.timedelta) -> Lock | None:
        """The lock, or ``None`` when another live holder has it (one attempt)."""
        owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        lock = Lock(self, name, owner, ttl, seq_no=-1, primary_term=-1)
        try:
            response = self.client.index(
                index=self.index,
                id=name,
                document=self.body(lock),
                op_type="create",
                refresh=True,
            )
        except ConflictError:
            return self._take_over_expired(lock)
        lock._seq_no, lock._primary_term = response["_seq_no"], response["_primary_term"]
        return lock

    def _take_over_expired(self, lock: Lock) -> Lock | None:
        try:
            current = self.client.get(index=self.index, id=lock.name)
        except NotFoundError:
            return None  # released meanwhile: the next attempt will create it
        expires = parse_datetime(current["_source"]["expires_at"])
        if expires > self.clock():
            return None
        try:
            response = self.client.index(
                index=self.index,
                id=lock.name,
                document=self.body(lock),
                if_seq_no=current["_seq_no"],
                if_primary_term=current["_primary_term"],
                refresh=True,
            )
        except ConflictError:
            return None
        lock._seq_no, lock._primary_term = response["_seq_no"], response["_primary_term"]
        return lock

    def acquire(
        self,
        name: str,
        ttl: _dt.timedelta,
        *,
        wait: _dt.timedelta = _dt.timedelta(0),
        poll: float = 0.5,
    ) -> Lock:
        """Acquire ``name``, waiting up to ``wait``; raises LockError when it stays held."""
        deadline = time.monotonic() + wait.total_seconds()
        while True:
            lock = self.try_acquire(name, ttl)
            if lock is not None:
                return lock
            if time.monotonic() >= deadline:
                raise LockError(
                    f"lock {name!r} is held by another process", index=self.index, ids=[name]
                )
            self.sleep(poll)
