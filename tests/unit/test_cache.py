"""InMemoryCache and the DocumentCache read reservations, without a server."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import esmapper as em
from esmapper.cache import NOT_KEPT, DocumentCache, InMemoryCache, ReadMarker


class FakeTimer:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_per_entry() -> None:
    timer = FakeTimer()
    cache = InMemoryCache(timer=timer)
    cache.set("short", 1, ttl=1)
    cache.set("long", 2, ttl=10)
    timer.now = 5
    assert cache.get("short") is None and cache.get("long") == 2
    assert (cache.stats.hits, cache.stats.misses) == (1, 1)


def test_size_is_bounded() -> None:
    cache = InMemoryCache(maxsize=3)
    for i in range(10):
        cache.set(str(i), i)
    assert len(cache) == 3


def test_compare_and_set_and_prefix_removal() -> None:
    cache = InMemoryCache()
    assert cache.compare_and_set("k", None, "v1")
    assert not cache.compare_and_set("k", None, "v2")
    assert cache.peek("k") == "v1"
    cache.set("a:1", 1)
    cache.set("a:2", 2)
    assert cache.remove_by_prefix("a:") == 2 and cache.peek("k") == "v1"


def test_a_fill_after_an_invalidation_is_refused() -> None:
    docs = DocumentCache(InMemoryCache())
    hit, token = docs.lookup("emp", "1")
    assert hit is None and isinstance(token, ReadMarker)
    docs.invalidate("emp", ["1"])  # a write happened after the read began
    assert not docs.fill("emp", "1", {"_id": "1", "v": "old"}, token, 60)
    assert docs.lookup("emp", "1")[0] is None
    _, token2 = docs.lookup("emp", "1")  # the previous lookup reserved the key again
    assert token2 is None  # another read holds the reservation: read through, no fill


def test_a_read_that_began_after_the_write_fills() -> None:
    docs = DocumentCache(InMemoryCache())
    docs.invalidate("emp", ["1"])
    _, token = docs.lookup("emp", "1")
    assert docs.fill("emp", "1", {"_id": "1"}, token, 60)
    assert docs.lookup("emp", "1")[0] == {"_id": "1"}


def test_an_evicted_reservation_cannot_let_an_old_read_fill() -> None:
    """Cache pressure evicts the reservation while the read is in flight and a write
    happens: the key is empty again, but the old read must still not fill it."""
    cache = InMemoryCache(maxsize=2)
    docs = DocumentCache(cache)
    _, token = docs.lookup("emp", "1")
    cache.set("other:1", 1)
    cache.set("other:2", 2)  # evicts the reservation
    assert cache.peek("emp:1") is None
    docs.invalidate("emp", ["1"])  # the write
    assert not docs.fill("emp", "1", {"_id": "1", "v": "old"}, token, 60)
    assert cache.peek("emp:1") is None


def test_two_document_caches_on_one_client_see_each_others_writes() -> None:
    """Two mappers sharing one cache client: a write through B drops what A cached, and
    A's in-flight read cannot refill it."""
    shared = InMemoryCache()
    a, b = DocumentCache(shared), DocumentCache(shared)
    _, token = a.lookup("emp", "1")
    assert a.fill("emp", "1", {"_id": "1", "v": 1}, token, 60)
    _, token = a.lookup("emp", "2")
    b.invalidate("emp", ["1", "2"])
    assert a.lookup("emp", "1")[0] is None
    assert not a.fill("emp", "2", {"_id": "2", "v": "old"}, token, 60)


def test_markers_of_different_caches_never_compare_equal() -> None:
    markers = {DocumentCache(InMemoryCache()).lookup("emp", "1")[1] for _ in range(100)}
    assert len(markers) == 100


def test_recently_deleted_ids_expire_and_are_shared() -> None:
    clock = FakeTimer()
    shared = InMemoryCache()
    docs = DocumentCache(shared, deleted_ttl=30, clock=clock)
    other = DocumentCache(shared, deleted_ttl=30, clock=clock)
    docs.remember_deleted("emp", ["a", "b"])
    clock.now = 20
    other.remember_deleted("emp", ["c"])
    docs.forget_deleted("emp", ["b"])
    assert other.recently_deleted("emp") == ["a", "c"]
    clock.now = 40  # a expired; c (remembered at 20) still hidden
    assert docs.recently_deleted("emp") == ["c"]
    other.remember_deleted("emp", ["d"])  # writing drops expired ids without a search
    assert set(shared.peek("esmapper-deleted:emp")) == {"c", "d"}


def test_dropping_a_model_keeps_its_deleted_list() -> None:
    shared = InMemoryCache()
    docs = DocumentCache(shared)
    docs.remember_deleted("emp", ["a"])
    _, token = docs.lookup("emp", "1")
    docs.fill("emp", "1", {"_id": "1"}, token, 60)
    assert docs.invalidate_all("emp") == 1
    assert docs.recently_deleted("emp") == ["a"]


def test_thread_safety_under_contention() -> None:
    cache = InMemoryCache(maxsize=100)

    def hammer(n: int) -> None:
        for i in range(2000):
            cache.set(f"{n}:{i % 150}", i)
            cache.get(f"{(n + 1) % 4}:{i % 150}")
            if i % 100 == 0:
                cache.remove_by_prefix(f"{n}:1")

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) <= 100
    assert cache.stats.sets == 8000


# -- the hit path of a cached get (InMemoryCache.hits, DocumentCache.reader) ----------------


def test_the_hit_path_is_there_with_the_installed_cachetools() -> None:
    """The hit path reads cachetools' LRUCache internals: a cachetools that moved them
    fails here (every read would take ``get``, slower), not silently."""
    assert InMemoryCache().hits() is not None


def test_a_hit_counts_and_refreshes_as_get_does() -> None:
    cache = InMemoryCache(maxsize=3)
    hit = cache.hits()
    assert hit is not None
    for key in "abc":
        cache.set(key, key.upper())
    assert hit("a") == "A" and cache.stats.hits == 1
    cache.set("d", "D")  # evicts the least recently used: b, not a (just read)
    assert cache.peek("a") == "A" and cache.peek("b") is None
    assert (cache.stats.hits, cache.stats.misses) == (1, 0)


def test_what_is_not_a_hit_is_left_to_get() -> None:
    """Absent, expired or a reservation: ``None``, nothing counted or changed; ``get``
    then counts the miss and drops the expired entry."""
    timer = FakeTimer()
    cache = InMemoryCache(timer=timer)
    hit = cache.hits()
    assert hit is not None
    cache.set("gone", 1, ttl=1)
    cache.set("reserved", ReadMarker("t"))
    timer.now = 2
    assert hit("absent") is None and hit("gone") is None and hit("reserved") is None
    assert (cache.stats.hits, cache.stats.misses) == (0, 0)
    assert cache.get("gone") is None and cache.stats.misses == 1
    assert len(cache) == 1  # the reservation only


def test_a_subclass_that_serves_reads_its_way_gets_no_hit_path() -> None:
    class Counting(InMemoryCache):
        def get(self, key: str) -> object:
            return super().get(key)

    assert Counting().hits() is None


class Note(em.Document):
    title: str = ""
    tags: list[str] = em.field(factory=list)


def test_the_reader_copies_kept_hits_and_leaves_the_rest_to_read() -> None:
    docs = DocumentCache(InMemoryCache())
    info = Note.__esmapper__  # type: ignore[attr-defined]
    hydrated: list[dict[str, Any]] = []

    def hydrate(hit: dict[str, Any]) -> Note:
        hydrated.append(hit)
        return Note.from_hit(hit)

    read = docs.reader("emp", info, hydrate)
    assert read is not None and read("1") is NOT_KEPT
    assert docs.client.stats.misses == 0  # nothing counted: read() counts the miss
    _, token = docs.lookup("emp", "1")
    assert read("1") is NOT_KEPT  # a reservation is no hit
    hit = {"_id": "1", "_source": {"title": "t", "tags": ["a"]}, "_seq_no": 1, "_primary_term": 1}
    docs.fill("emp", "1", hit, token, 60)
    first, second = read("1"), read("1")
    assert len(hydrated) == 1  # then copies of the document kept for that hit
    assert first is not second and first.tags is not second.tags
    assert (first.id, first.title, first.tags) == (second.id, second.title, second.tags)
    first.tags.append("mutated")
    assert read("1").tags == ["a"]
    shown = docs.reader("emp", info, hydrate, lambda doc: False)
    assert shown is not None and shown("1") is None  # the rules refuse it
    assert docs.client.stats.hits == 4


def test_no_reader_for_a_client_without_a_hit_path() -> None:
    class Plain:
        _keeps_objects = True
        stats = None

    assert DocumentCache(Plain()).reader("emp", object, dict) is None  # type: ignore[arg-type]


def test_an_expiry_instant_is_stored_as_the_seconds_left() -> None:
    timer = FakeTimer()
    documents = DocumentCache(InMemoryCache(timer=timer), clock=lambda: 1000.0)
    at = dt.datetime.fromtimestamp(1060.0, dt.timezone.utc)
    assert documents.seconds(at) == 60.0
    assert documents.seconds(dt.timedelta(minutes=1)) == 60.0 and documents.seconds(None) is None
    _hit, token = documents.lookup("a", "1")
    assert documents.fill("a", "1", {"_id": "1"}, token, at)
    timer.now = 59
    assert documents.lookup("a", "1")[0] == {"_id": "1"}
    timer.now = 61
    assert documents.lookup("a", "1", reserve=False) == (None, None)
    _hit, token = documents.lookup("a", "2")
    past = dt.datetime.fromtimestamp(999.0, dt.timezone.utc)
    assert not documents.fill("a", "2", {"_id": "2"}, token, past)


def test_a_read_that_skips_the_entry_reserves_over_it() -> None:
    documents = DocumentCache(InMemoryCache())
    _hit, token = documents.lookup("a", "1")
    documents.fill("a", "1", {"_id": "1", "v": 1}, token, 60)
    over = documents.reserve_over("a", "1")
    assert over is not None and documents.reserve_over("a", "1") is None  # held
    assert documents.fill("a", "1", {"_id": "1", "v": 2}, over, 60)
    again = documents.reserve_over("a", "1")
    documents.invalidate("a", ["1"])  # a write meanwhile: the fill is refused
    assert not documents.fill("a", "1", {"_id": "1", "v": 3}, again, 60)
    assert documents.lookup("a", "1", reserve=False) == (None, None)
