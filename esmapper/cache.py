"""Caching: a small cache-client protocol, an in-process implementation, and the document
cache the repositories use.

:class:`CacheClient` is what a cache must offer (an in-process cache here; a shared one such
as Redis can implement the same protocol). :class:`InMemoryCache` is built on cachetools'
``TLRUCache`` (per-entry expiry, bounded size) behind a lock, with hit/miss counters.

:class:`DocumentCache` keys documents by index alias and id and stores the raw hit (so
each cache hit hydrates a fresh object nobody else can mutate). It closes the
read-after-write race with tombstones: every invalidation writes a unique tombstone, and a
read only stores what it fetched if the entry is still the one it saw before sending its
request (a compare-and-set), so a read that started before a write can never put the old
version back.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import attrs
import cachetools

__all__ = ["CacheClient", "CacheStats", "DocumentCache", "InMemoryCache", "Tombstone"]


@attrs.define(slots=True)
class CacheStats:
    """Counters of a cache client: ``hits``, ``misses``, ``sets``, ``removals``."""

    hits: int = 0
    misses: int = 0
    sets: int = 0
    removals: int = 0


class CacheClient(Protocol):
    """What a cache must offer. ``ttl`` is in seconds (``None``: the client's default)."""

    stats: CacheStats

    def get(self, key: str) -> Any: ...
    def set(self, key: str, value: Any, ttl: float | None = None) -> None: ...
    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl: float | None = None
    ) -> bool: ...
    def remove(self, key: str) -> None: ...
    def remove_many(self, keys: Iterable[str]) -> None: ...
    def remove_by_prefix(self, prefix: str) -> int: ...


class InMemoryCache:
    """A thread-safe, size-bounded, per-entry-expiring in-process cache (cachetools)."""

    def __init__(
        self,
        maxsize: int = 10_000,
        *,
        default_ttl: float = 300.0,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        self.default_ttl = default_ttl
        self._cache: cachetools.TLRUCache[str, tuple[Any, float]] = cachetools.TLRUCache(
            maxsize=maxsize, ttu=lambda _key, value, now: now + value[1], timer=timer
        )
        self._lock = threading.RLock()
        self.stats = CacheStats()

    def _ttl(self, ttl: float | None) -> float:
        return self.default_ttl if ttl is None else ttl

    def get(self, key: str) -> Any:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                self.stats.misses += 1
                return None
            self.stats.hits += 1
            return entry[0]

    def peek(self, key: str) -> Any:
        """The value without counting a hit or a miss."""
        with self._lock:
            entry = self._cache.get(key)
            return None if entry is None else entry[0]

    def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        with self._lock:
            self._cache[key] = (value, self._ttl(ttl))
            self.stats.sets += 1

    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl: float | None = None
    ) -> bool:
        """Store ``value`` only if the current value is ``expected`` (``None``: absent)."""
        with self._lock:
            entry = self._cache.get(key)
            current = None if entry is None else entry[0]
            if current is not expected:
                return False
            self._cache[key] = (value, self._ttl(ttl))
            self.stats.sets += 1
            return True

    def remove(self, key: str) -> None:
        with self._lock:
            if self._cache.pop(key, None) is not None:
                self.stats.removals += 1

    def remove_many(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self.remove(key)

    def remove_by_prefix(self, prefix: str) -> int:
        with self._lock:
            doomed = [key for key in list(self._cache.keys()) if key.startswith(prefix)]
            for key in doomed:
                self.remove(key)
            return len(doomed)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)


@attrs.frozen(slots=True)
class Tombstone:
    """Marks a key written since any read that saw another entry started."""

    serial: int


class DocumentCache:
    """Raw hits cached by ``<alias>:<id>``; tombstones guard the read-after-write race.

    ``tombstone_ttl`` bounds how long a just-invalidated key refuses stale fills: longer
    than any read request may take.
    """

    def __init__(self, client: CacheClient, *, tombstone_ttl: float = 60.0) -> None:
        self.client = client
        self.tombstone_ttl = tombstone_ttl
        self._serials = itertools.count(1)
        self._deleted: dict[str, dict[str, float]] = {}
        self._deleted_lock = threading.Lock()

    @staticmethod
    def key(alias: str, id: str) -> str:
        return f"{alias}:{id}"

    def lookup(self, alias: str, id: str) -> tuple[dict[str, Any] | None, Any]:
        """``(cached hit or None, token)``; pass the token to :meth:`fill` after a fetch."""
        entry = self.client.get(self.key(alias, id))
        if entry is None or isinstance(entry, Tombstone):
            return None, entry
        return entry, entry

    def fill(
        self,
        alias: str,
        id: str,
        hit: dict[str, Any],
        token: Any,
        ttl: _dt.timedelta | float | None,
    ) -> bool:
        """Store a fetched hit unless the key was written since :meth:`lookup`."""
        seconds = ttl.total_seconds() if isinstance(ttl, _dt.timedelta) else ttl
        return self.client.compare_and_set(self.key(alias, id), token, hit, seconds)

    def put(
        self, alias: str, id: str, hit: dict[str, Any], ttl: _dt.timedelta | float | None
    ) -> None:
        """Store a hit the store just confirmed (after a write)."""
        seconds = ttl.total_seconds() if isinstance(ttl, _dt.timedelta) else ttl
        self.client.set(self.key(alias, id), hit, seconds)

    def invalidate(self, alias: str, ids: Iterable[str]) -> None:
        """Replace the entries of ``ids`` with fresh tombstones."""
        for id in ids:
            self.client.set(self.key(alias, id), Tombstone(next(self._serials)), self.tombstone_ttl)

    def remember_deleted(self, alias: str, ids: Iterable[str], ttl: float = 30.0) -> None:
        """Keep soft-deleted ids for ``ttl`` seconds so searches can hide them before the
        next refresh (FEATURES SD-9). Kept in this process."""
        deadline = time.monotonic() + ttl
        with self._deleted_lock:
            bucket = self._deleted.setdefault(alias, {})
            for id in ids:
                bucket[id] = deadline

    def recently_deleted(self, alias: str) -> list[str]:
        """Ids soft-deleted in the last 30 seconds (still visible to unrefreshed searches)."""
        now = time.monotonic()
        with self._deleted_lock:
            bucket = self._deleted.get(alias, {})
            for id in [i for i, deadline in bucket.items() if deadline <= now]:
                del bucket[id]
            return sorted(bucket)

    def forget_deleted(self, alias: str, ids: Iterable[str]) -> None:
        """Drop ids from the soft-deleted list (they were restored or removed)."""
        with self._deleted_lock:
            bucket = self._deleted.get(alias, {})
            for id in ids:
                bucket.pop(id, None)
