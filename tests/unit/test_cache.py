"""InMemoryCache and the DocumentCache tombstones, without a server."""

from __future__ import annotations

import threading

from esmapper.cache import DocumentCache, InMemoryCache, Tombstone


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
    assert hit is None and token is None
    docs.invalidate("emp", ["1"])  # a write happened after the read began
    assert not docs.fill("emp", "1", {"_id": "1"}, token, 60)
    _, token2 = docs.lookup("emp", "1")
    assert isinstance(token2, Tombstone)
    assert docs.fill("emp", "1", {"_id": "1"}, token2, 60)  # a read that began after it
    assert docs.lookup("emp", "1")[0] == {"_id": "1"}


def test_recently_deleted_ids_expire() -> None:
    docs = DocumentCache(InMemoryCache())
    docs.remember_deleted("emp", ["a", "b"], ttl=60)
    docs.remember_deleted("emp", ["c"], ttl=-1)
    docs.forget_deleted("emp", ["b"])
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
