"""InMemoryCache and the DocumentCache read reservations, without a server."""

from __future__ import annotations

import threading

from esmapper.cache import DocumentCache, InMemoryCache, ReadMarker


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
