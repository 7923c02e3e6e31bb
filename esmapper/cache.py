"""Caching: a small cache-client protocol, an in-process implementation, and the document
cache the repositories use.

:class:`CacheClient` is what a cache must offer (an in-process cache here; a shared one such
as Redis can implement the same protocol). :class:`InMemoryCache` keeps its entries and
their deadlines in cachetools' ``LRUCache`` (per-entry expiry, bounded size) behind a lock,
with hit/miss counters.

:class:`DocumentCache` keys documents by index alias and id and stores the raw hit; every
cache hit is a fresh object nobody else can mutate: hydrated, or a compiled copy of the
document hydrated from that same in-process entry (``DocumentCache.copies``, see
``esmapper.model._copying``). A cached ``get`` reads a hit kept in process through
:meth:`DocumentCache.reader`, worked out once per read's options over the client's own hit
path (:meth:`InMemoryCache.hits`, ``HybridCache.hits``); everything else takes
:meth:`DocumentCache.read`. It owns the cache rules of every write path (see the
``esmapper._writes`` docstring):

- **A read fills only what it reserved.** A read that misses puts a unique
  :class:`ReadMarker` under the key (compare-and-set on "absent") before it sends its
  request, and stores what it fetched only if its marker is still there (compare-and-set on
  the marker). Every write *removes* the keys it touched, so a read that started before a
  write can never put the old version back, and neither can one whose marker was evicted
  under cache pressure: a missing marker refuses the fill like a removed one.
- **Writes remove every key they touched**, confirmed, failed or of unknown outcome; by-query
  writes that cannot name their ids remove the whole model (:meth:`invalidate_all`).
- The recently soft-deleted ids live *in the cache client* under their own
  key, so every mapper and process sharing the client sees them; expired ids are dropped
  whenever the list is written or read.
"""

from __future__ import annotations

import collections
import datetime as _dt
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import attrs
import cachetools

from esmapper.model._copying import HydratedCopies

__all__ = [
    "NOT_KEPT",
    "CacheClient",
    "CacheStats",
    "DocumentCache",
    "InMemoryCache",
    "ReadMarker",
]


@attrs.define(slots=True)
class CacheStats:
    """Counters of a cache client: ``hits``, ``misses``, ``sets``, ``removals``."""

    hits: int = 0
    misses: int = 0
    sets: int = 0
    removals: int = 0


class CacheClient(Protocol):
    """What a cache must offer. ``ttl`` is in seconds (``None``: the client's default; not
    positive: the value is not kept, the key removed)."""

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
    """A thread-safe, size-bounded, per-entry-expiring in-process cache.

    Entries live in a cachetools ``LRUCache`` (bounded size, the least recently used
    evicted first) as ``(value, deadline)`` (``timer()`` seconds), behind one lock: a read
    is one lookup and one deadline check, an expired entry is dropped when it is read (or
    evicted as the least recently used), and a compare-and-set is atomic against every
    other change. (cachetools' ``TLRUCache`` keeps the same per-entry deadlines, with a
    second ordered structure and a timer wrapper that doubled the cost of a hit.)
    """

    #: ``get`` hands out the stored object itself (the document cache copies its hits)
    _keeps_objects = True

    def __init__(
        self,
        maxsize: int = 10_000,
        *,
        default_ttl: float = 300.0,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        if not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"maxsize={maxsize!r} must be an integer >= 1")
        self.maxsize = maxsize
        self.default_ttl = default_ttl
        self.timer = timer
        #: key -> (value, deadline)
        self._cache: cachetools.LRUCache[str, tuple[Any, float]] = cachetools.LRUCache(maxsize)
        # (a plain lock: no method takes it while holding it, and nothing called under it,
        # the timer included, calls back into the cache)
        self._lock = threading.Lock()
        self.stats = CacheStats()

    def get(self, key: str) -> Any:
        """The value, or ``None`` (absent or expired); counts a hit or a miss."""
        with self._lock:  # (_current, inline: every cached read passes here)
            try:
                value, deadline = self._cache[key]
            except KeyError:
                self.stats.misses += 1
                return None
            if self.timer() < deadline:
                self.stats.hits += 1
                return value
            del self._cache[key]
            self.stats.misses += 1
            return None

    def hits(self) -> Callable[[str], Any] | None:
        """The hit path of :meth:`get`, for a caller that reads one key after another
        (:meth:`DocumentCache.reader`): a function of a key giving the live value kept
        under it, counted as :meth:`get` counts a hit (and made the most recently used),
        or ``None`` with nothing counted or changed when there is none or it is a
        :class:`ReadMarker` (the caller then calls :meth:`get`, which counts the miss,
        drops an expired entry, and hands out a reservation).

        The lookup reads cachetools' ``LRUCache`` under the lock as its ``__getitem__``
        does (its dict, then its order's ``move_to_end``) without the two Python calls
        that cost as much as the rest of a hit. ``None`` when the installed cachetools
        keeps them elsewhere (every read goes through :meth:`get`), or when a subclass
        overrides :meth:`get` (its reads are served its way)."""
        if type(self).get is not InMemoryCache.get:
            return None
        parts = _lru_parts(self._cache)
        if parts is None:
            return None
        data, touch = parts
        acquire, release = self._lock.acquire, self._lock.release

        def hit(key: str) -> Any:
            # (acquire/release: a ``with`` costs twice as much, about 0.1 µs a hit)
            acquire()
            try:
                entry = data.get(key)
                if entry is None or not self.timer() < entry[1]:
                    return None
                value = entry[0]
                if type(value) is ReadMarker:  # (_new_marker makes them all: no subclass)
                    return None
                touch(key)
                self.stats.hits += 1
            finally:
                release()
            return value

        return hit

    def peek(self, key: str) -> Any:
        """The value without counting a hit or a miss."""
        with self._lock:
            return self._current(key)

    def _current(self, key: str) -> Any:
        """The unexpired value of ``key`` or ``None`` (an expired entry goes); under the
        lock."""
        cache = self._cache
        try:  # one lookup (LRUCache.get would test, then subscript)
            value, deadline = cache[key]
        except KeyError:
            return None
        if self.timer() < deadline:
            return value
        del cache[key]
        return None

    def _put(self, key: str, value: Any, ttl: float | None) -> None:
        """Store ``value`` for ``ttl`` seconds (``None``: the default) as the most recently
        used entry, under the lock (the LRU cache evicts beyond ``maxsize``). A ``ttl``
        that is not positive removes the key (the value would be expired)."""
        self.stats.sets += 1
        seconds = self.default_ttl if ttl is None else ttl
        if not seconds > 0:
            self._cache.pop(key, None)
            return
        self._cache[key] = (value, self.timer() + seconds)

    def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        with self._lock:
            self._put(key, value, ttl)

    def compare_and_set(
        self, key: str, expected: Any, value: Any, ttl: float | None = None
    ) -> bool:
        """Store ``value`` only if the current value equals ``expected`` (``None``: absent)."""
        with self._lock:
            current = self._current(key)
            if current is not expected and (current is None or current != expected):
                return False
            self._put(key, value, ttl)
            return True

    def remove(self, key: str) -> None:
        with self._lock:
            if self._cache.pop(key, None) is not None:
                self.stats.removals += 1

    def remove_many(self, keys: Iterable[str]) -> None:
        with self._lock:
            cache = self._cache
            if not cache:  # nothing cached: no per-key work (a bulk write's invalidation)
                return
            pop = cache.pop
            for key in keys:
                if pop(key, None) is not None:
                    self.stats.removals += 1

    def remove_by_prefix(self, prefix: str) -> int:
        """Remove every live entry whose key starts with ``prefix``; how many there were."""
        with self._lock:
            now = self.timer()
            doomed = [
                (key, deadline > now)
                for key, (_value, deadline) in self._cache.items()
                if key.startswith(prefix)
            ]
            for key, _live in doomed:
                del self._cache[key]
            removed = sum(live for _key, live in doomed)
            self.stats.removals += removed
            return removed

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()

    def __len__(self) -> int:
        """How many unexpired entries are kept."""
        with self._lock:
            now = self.timer()
            return sum(1 for _value, deadline in self._cache.values() if now < deadline)


def _lru_parts(
    cache: cachetools.LRUCache[str, tuple[Any, float]],
) -> tuple[dict[str, tuple[Any, float]], Callable[[str], None]] | None:
    """The dict an ``LRUCache`` keeps its items in and the ``move_to_end`` of its
    recency order (what its ``__getitem__`` reads and updates), or ``None`` if this
    version of cachetools keeps them elsewhere (its private names: ``Cache.__data``,
    ``LRUCache.__order``, the same from cachetools 5 to 8)."""
    data = getattr(cache, "_Cache__data", None)
    order = getattr(cache, "_LRUCache__order", None)
    if type(cache) is not cachetools.LRUCache or type(data) is not dict:
        return None
    if not isinstance(order, collections.OrderedDict):
        return None
    return data, order.move_to_end


@attrs.frozen(slots=True)
class ReadMarker:
    """Reserves a missing key for the read that is fetching it (see the module docstring).

    ``token`` is unique across processes (random prefix + counter), so markers of readers
    in different mappers or processes sharing one cache client never compare equal.
    """

    token: str


_PROCESS_TOKEN = os.urandom(6).hex()
_serials = itertools.count(1)


def _new_marker() -> ReadMarker:
    return ReadMarker(f"{_PROCESS_TOKEN}-{os.getpid()}-{next(_serials)}")


#: What :meth:`DocumentCache.reader`'s function gives for an id whose hit the client does
#: not keep in process (``None`` is a document the read's rules do not show).
NOT_KEPT: Any = object()

#: Key prefix of the recently soft-deleted lists (not under ``<alias>:``, so dropping a
#: model's documents by prefix keeps them).
_DELETED_PREFIX = "esmapper-deleted:"


class DocumentCache:
    """Raw hits cached by ``<alias>:<id>``, with the rules of the module docstring.

    ``marker_ttl`` bounds how long a reservation lives: longer than any read request may
    take (an expired marker only means that read does not fill the cache).
    ``deleted_ttl`` is how long a soft-deleted id stays hidden from searches
    (it covers the refresh window).
    """

    def __init__(
        self,
        client: CacheClient,
        *,
        marker_ttl: float = 60.0,
        deleted_ttl: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.marker_ttl = marker_ttl
        self.deleted_ttl = deleted_ttl
        self.clock = clock
        #: documents of cached hits, copied on later hits (see :class:`HydratedCopies`),
        #: for a client that hands out the objects it keeps in process (``None``: every
        #: hit of another client is a new object, so it is hydrated)
        self.copies = HydratedCopies() if getattr(client, "_keeps_objects", False) else None

    @staticmethod
    def key(alias: str, id: str) -> str:
        return f"{alias}:{id}"

    def lookup(
        self, alias: str, id: str, *, reserve: bool = True
    ) -> tuple[dict[str, Any] | None, ReadMarker | None]:
        """``(cached hit, None)``, or ``(None, marker)`` after reserving the missing key for
        this read (``marker`` is ``None`` when another read holds the reservation: read
        through without filling; always with ``reserve=False``, a read that stores
        nothing). Pass the marker to :meth:`fill` after the fetch."""
        key = f"{alias}:{id}"  # self.key(), inline: every cached read passes here
        entry = self.client.get(key)
        if entry is None or isinstance(entry, ReadMarker):
            return None, self._reserve(key, entry) if reserve else None
        return entry, None

    def _reserve(self, key: str, entry: ReadMarker | None) -> ReadMarker | None:
        """A miss of ``key`` (``entry``: what was found, nothing or another read's
        reservation): this read's new reservation, or ``None`` (another read holds it)."""
        if entry is not None:
            return None
        marker = _new_marker()
        if self.client.compare_and_set(key, None, marker, self.marker_ttl):
            return marker
        return None

    def read(
        self,
        alias: str,
        id: str,
        info: Any,
        hydrate: Callable[[dict[str, Any]], Any],
        *,
        reserve: bool = True,
    ) -> tuple[Any, ReadMarker | None]:
        """:meth:`lookup` of a by-id read of ``info``'s model, as a document: ``(document,
        None)`` on a hit (a copy of the document kept for that very entry, see
        :class:`HydratedCopies`, else ``hydrate(hit)``), else ``(None, marker)`` as
        :meth:`lookup` answers a miss (``reserve=False``: a read that stores nothing,
        ``(None, None)``)."""
        key = f"{alias}:{id}"
        entry = self.client.get(key)
        if entry is None or isinstance(entry, ReadMarker):
            return None, self._reserve(key, entry) if reserve else None
        copies = self.copies
        if copies is None:
            return hydrate(entry), None
        return copies.document(info, entry, hydrate), None

    def reserve_over(self, alias: str, id: str) -> ReadMarker | None:
        """Reserve the key of ``id`` for a read that does not serve what is cached
        (``read_cache=False``) but replaces it: :meth:`reserve_key`."""
        key = f"{alias}:{id}"
        return self.reserve_key(key, self.client.get(key))

    def reserve_key(self, key: str, entry: Any) -> ReadMarker | None:
        """Reserve ``key`` for a read that will replace what it holds: a marker put over
        ``entry``, what the read found there (compare-and-set on it, or on "absent"), so
        a write that removes the key meanwhile still refuses the read's fill
        (compare-and-set from the marker); ``None`` when another read holds the
        reservation or the entry changed under it (read through without filling)."""
        if isinstance(entry, ReadMarker):
            return None
        marker = _new_marker()
        if self.client.compare_and_set(key, entry, marker, self.marker_ttl):
            return marker
        return None

    def release(self, key: str, token: ReadMarker) -> None:
        """Drop this read's reservation of ``key`` if it is still there (the read stores
        nothing: a partial page, no index): compare-and-set of the marker onto itself
        with a ``ttl`` of 0, which a client stores as nothing (``InMemoryCache``: the key
        removed; Redis: expired at once)."""
        self.client.compare_and_set(key, token, token, 0)

    def seconds(self, ttl: _dt.timedelta | _dt.datetime | float | None) -> float | None:
        """``ttl`` as the seconds a cache client stores an entry for: a ``timedelta``'s,
        the seconds left until a ``datetime`` (``expires_at=``: by :attr:`clock`; not
        positive when it is past, which stores nothing), a number as it is."""
        if isinstance(ttl, _dt.timedelta):
            return ttl.total_seconds()
        if isinstance(ttl, _dt.datetime):
            return ttl.timestamp() - self.clock()
        return ttl

    def reader(
        self,
        alias: str,
        info: Any,
        hydrate: Callable[[dict[str, Any]], Any],
        shown: Callable[[Any], bool] | None = None,
    ) -> Callable[[str], Any] | None:
        """The hit path of :meth:`read` for ``alias`` and ``info``'s model, worked out once
        (what every cached ``get`` under the same options reads through): a function of an
        id (a ``str``) giving the document of the hit the client keeps in process under
        it, made as :meth:`read` makes it (a copy of the document kept for that entry, or
        a hydration kept for the next read), the hit counted by the client, or ``None``
        when ``shown`` (the read's visibility rules) refuses that document; or
        :data:`NOT_KEPT`, nothing counted or reserved, when the client keeps no such hit
        (the caller then calls :meth:`read`: the miss is counted there, and the key
        reserved). ``None`` when the client offers no in-process hit path (``hits()``, as
        :meth:`InMemoryCache.hits`) or hands out no kept objects."""
        copies = self.copies
        hits = getattr(self.client, "hits", None)
        if copies is None or hits is None:
            return None
        hit = hits()
        if hit is None:
            return None
        prefix = f"{alias}:"  # (the key of self.key)
        kept, cls, document = copies.kept, info.cls, copies.document

        # HydratedCopies.document, its lookup inline (the one rule: a kept copy is used
        # only for the very object it was made from, of the same model)
        if shown is None:

            def read(doc_id: str) -> Any:
                entry = hit(prefix + doc_id)
                if entry is None:
                    return NOT_KEPT
                copy = kept.get(id(entry))
                if copy is not None and copy[0] is entry and copy[3] is cls:
                    return copy[2](copy[1])
                return document(info, entry, hydrate)

            return read

        def read_shown(doc_id: str) -> Any:
            entry = hit(prefix + doc_id)
            if entry is None:
                return NOT_KEPT
            copy = kept.get(id(entry))
            if copy is not None and copy[0] is entry and copy[3] is cls:
                found = copy[2](copy[1])
            else:
                found = document(info, entry, hydrate)
            return found if shown(found) else None

        return read_shown

    def fill(
        self,
        alias: str,
        id: str,
        hit: dict[str, Any],
        token: ReadMarker | None,
        ttl: _dt.timedelta | _dt.datetime | float | None,
    ) -> bool:
        """Store a fetched hit if this read's reservation ``token`` is still in place
        (``ttl``: see :meth:`seconds`; an ``expires_at`` already past stores nothing and
        releases the reservation: the next read fills the key)."""
        if token is None:
            return False
        seconds = self.seconds(ttl)
        if seconds is not None and not seconds > 0:
            self.release(self.key(alias, id), token)
            return False
        return self.client.compare_and_set(self.key(alias, id), token, hit, seconds)

    def invalidate(self, alias: str, ids: Iterable[str]) -> None:
        """Remove the entries (and reservations) of ``ids``."""
        # a generator: a client with nothing cached returns without building the keys
        key = self.key
        self.client.remove_many(key(alias, id) for id in ids)

    def invalidate_all(self, alias: str) -> int:
        """Remove every entry of ``alias`` (a by-query write that cannot list its ids)."""
        if self.copies is not None:  # (entries only match their own hits: frees memory)
            self.copies.clear()
        return self.client.remove_by_prefix(f"{alias}:")

    def drop_model(self, alias: str) -> None:
        """Remove every entry of ``alias`` and its soft-deleted list (its indexes were
        deleted)."""
        self.invalidate_all(alias)
        self.client.remove_many([_DELETED_PREFIX + alias])

    # -- recently soft-deleted ids ------------------------------------------------------

    def _update_deleted(self, alias: str, add: Iterable[str], drop: Iterable[str]) -> None:
        key = _DELETED_PREFIX + alias
        added, dropped = list(add), set(drop)
        for _attempt in range(50):  # compare-and-set loop: writers in other processes
            current = self.client.get(key)
            now = self.clock()
            live = {
                i: deadline
                for i, deadline in (current or {}).items()
                if deadline > now and i not in dropped
            }
            deadline = now + self.deleted_ttl
            for id in added:
                live[id] = deadline
            if current is None and not live:
                return
            if self.client.compare_and_set(key, current, live, self.deleted_ttl):
                return
            if not getattr(self.client, "usable", lambda: True)():
                return  # a shared cache out of reach (it warned): the list is best effort
        raise RuntimeError(f"could not update the soft-deleted list of {alias!r}: contention")

    def remember_deleted(self, alias: str, ids: Iterable[str]) -> None:
        """Hide soft-deleted ``ids`` from searches for ``deleted_ttl`` seconds."""
        self._update_deleted(alias, ids, ())

    def forget_deleted(self, alias: str, ids: Iterable[str]) -> None:
        """Drop ids from the soft-deleted list (they were restored or removed)."""
        self._update_deleted(alias, (), ids)

    def recently_deleted(self, alias: str) -> list[str]:
        """Ids soft-deleted in the last ``deleted_ttl`` seconds, by any mapper or process
        sharing the cache client (still visible to unrefreshed searches)."""
        current = self.client.get(_DELETED_PREFIX + alias)
        if not current:
            return []
        now = self.clock()
        return sorted(i for i, deadline in current.items() if deadline > now)
