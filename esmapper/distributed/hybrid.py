"""HybridCache: an in-process L1 (an InMemoryCache) in front of a RedisCache.

A hit in L1 costs what :class:`~esmapper.cache.InMemoryCache` costs; a miss reads Redis
(``GET`` + ``PTTL``) and keeps what it read in L1 for at most ``l1_ttl`` seconds and never
longer than the Redis entry lives. What keeps L1 right across processes:

- every change of this process goes to Redis first and is announced on the namespace's
  ``inv`` channel in the same round trip; the write returns after every subscribed process
  acknowledged dropping its copy (at most the link's ``lease``), then this process drops its
  own copy (:mod:`esmapper.distributed.redis_cache`);
- L1 is read and filled only while the link's lease holds (every message published more
  than ``lease`` seconds ago was handled), so a process whose subscription stalled or broke
  serves nothing from L1; everything in L1 is dropped when the subscription breaks, when it
  is made again, when its lease lapses (before it holds again: the link's
  ``_note_lapse``) and when the namespace is flushed;
- a value read from Redis is kept only if no drop happened in this process since the read
  began (a generation counter), so a read racing a change cannot put the old value back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from esmapper.cache import CacheStats, InMemoryCache, ReadMarker
from esmapper.distributed.link import RedisLink
from esmapper.distributed.redis_cache import RedisCache

__all__ = ["HybridCache"]


class HybridCache:
    """A :class:`~esmapper.cache.CacheClient`: L1 in process, L2 in Redis (module docstring).

    ``redis`` is a URL, a :class:`RedisLink` or a :class:`RedisCache` (made to announce its
    changes); ``namespace``, ``default_ttl`` and ``link_options`` are used when a
    :class:`RedisCache` is made here. ``l1_maxsize`` bounds the entries kept in process.
    ``stats`` counts every read (an L1 or a Redis hit is a hit), ``l1_stats`` the L1 alone.
    """

    #: an L1 hit is the object kept in process (the document cache copies its hits)
    _keeps_objects = True

    def __init__(
        self,
        redis: str | RedisLink | RedisCache,
        *,
        namespace: str = "esmapper",
        l1_maxsize: int = 10_000,
        l1_ttl: float = 60.0,
        default_ttl: float = 300.0,
        **link_options: Any,
    ) -> None:
        if isinstance(redis, RedisCache):
            self.redis = redis
            redis.announce = True
        else:
            self.redis = RedisCache(
                redis, namespace=namespace, default_ttl=default_ttl, announce=True, **link_options
            )
        self.link = self.redis.link
        self.l1_ttl = l1_ttl
        #: L1: an InMemoryCache (cachetools' LRUCache of ``(value, deadline)``, its own
        #: lock, its stats are ``l1_stats``); changed only under ``_lock`` (the generation)
        self._l1 = InMemoryCache(l1_maxsize, default_ttl=l1_ttl)
        self._lock = threading.RLock()
        self._generation = 0
        self.stats = CacheStats()
        self.l1_stats = self._l1.stats
        self.link.on_reset(self.drop_local)
        self.link.on("inv", self._on_message)

    # -- L1 ----------------------------------------------------------------------------

    def _keep(self, key: str, value: Any, ttl: float | None, generation: int) -> None:
        if isinstance(value, ReadMarker) or not self.link.lease_valid():
            return
        seconds = self.l1_ttl if ttl is None else min(ttl, self.l1_ttl)
        with self._lock:
            if self._generation == generation:
                self._l1.set(key, value, seconds)  # (not positive: dropped, as expired)

    def _drop(self, keys: Iterable[str] = (), prefixes: Iterable[str] = ()) -> None:
        with self._lock:
            self._generation += 1
            self._l1.remove_many(keys)
            for prefix in prefixes:
                self._l1.remove_by_prefix(prefix)

    def drop_local(self) -> None:
        """Forget everything kept in process (Redis is untouched)."""
        with self._lock:
            self._generation += 1
            self._l1.clear()

    def _on_message(self, message: dict[str, Any]) -> None:
        if message.get("all"):
            self.drop_local()
        else:
            self._drop(message.get("k") or (), message.get("p") or ())

    def __len__(self) -> int:
        """Entries kept in process."""
        with self._lock:
            return len(self._l1)

    # -- CacheClient -------------------------------------------------------------------

    def get(self, key: str) -> Any:
        """From L1 while the lease holds, else from Redis (kept in L1); ``None`` if absent
        or when Redis is not usable."""
        if self.link.lease_valid():
            value = self._l1.get(key)  # (counts the L1 hit or miss)
            if value is not None:
                self.stats.hits += 1
                return value
        generation = self._generation
        value, left = self.redis.get_with_ttl(key)
        if value is None:
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        self._keep(key, value, left, generation)
        return value

    def hits(self) -> Callable[[str], Any] | None:
        """The L1 hit path of :meth:`get` (see :meth:`InMemoryCache.hits
        <esmapper.cache.InMemoryCache.hits>`): a function of a key giving the value L1
        keeps under it while the lease holds, counted as :meth:`get` counts an L1 hit;
        ``None``, nothing counted, otherwise (the caller then calls :meth:`get`: the L1
        miss is counted there, and Redis read). ``None`` when a subclass overrides
        :meth:`get`."""
        if type(self).get is not HybridCache.get:
            return None
        l1_hit = self._l1.hits()
        if l1_hit is None:
            return None
        lease_valid = self.link.lease_valid

        def hit(key: str) -> Any:
            if not lease_valid():
                return None
            value = l1_hit(key)
            if value is not None:
                self.stats.hits += 1
            return value

        return hit

    def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Set in Redis (announced: other processes drop their copy), then drop ours."""
        self.redis.set(key, value, ttl)
        self.stats.sets += 1
        self._drop([key])

    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl: float | None = None
    ) -> bool:
        """Compare-and-set in Redis (atomic there); a stored read result is kept in L1."""
        generation = self._generation
        stored = self.redis.compare_and_set(key, expected, value, ttl)
        if stored:
            self.stats.sets += 1
            if expected is None or isinstance(expected, ReadMarker):
                self._keep(key, value, self.redis.default_ttl if ttl is None else ttl, generation)
            else:
                self._drop([key])
        return stored

    def remove(self, key: str) -> None:
        """Remove ``key`` everywhere (see :meth:`remove_many`)."""
        self.remove_many([key])

    def remove_many(self, keys: Iterable[str]) -> None:
        """Remove from Redis and every process's L1 (acknowledged), then from ours."""
        wanted = list(keys)
        self.redis.remove_many(wanted)
        self.stats.removals += len(wanted)
        self._drop(wanted)

    def remove_by_prefix(self, prefix: str) -> int:
        """Remove every key starting with ``prefix`` from Redis and every process's L1."""
        removed = self.redis.remove_by_prefix(prefix)
        self.stats.removals += removed
        self._drop(prefixes=[prefix])
        return removed

    def clear(self) -> None:
        """Remove every entry of the namespace, everywhere."""
        self.remove_by_prefix("")

    def usable(self) -> bool:
        """Whether Redis is reachable and synchronised now (else reads miss, and a
        compare-and-set fails without contention)."""
        return self.link.ready()

    def close(self) -> None:
        """Close the Redis cache (and its link if it made it)."""
        self.redis.close()

    def __repr__(self) -> str:
        return f"HybridCache({self.link!r})"
