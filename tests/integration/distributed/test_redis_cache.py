"""RedisCache and HybridCache against a real Redis, in one process: two links stand for two
processes (their own connections, subscriptions and tokens)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest

from esmapper.cache import DocumentCache, ReadMarker
from esmapper.distributed import HybridCache, RedisCache, RedisLink
from esmapper.testing import RedisServer

from .conftest import wait_leased, wait_ready


@pytest.fixture
def namespace() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def links(redis_url: str, namespace: str) -> Iterator[list[RedisLink]]:
    made = [RedisLink(redis_url, namespace=namespace) for _ in range(2)]
    assert all(wait_ready(link) for link in made)  # synchronised (a first use flushes)
    yield made
    for link in made:
        link.close()


def ready(cache: HybridCache) -> HybridCache:
    """Wait until the cache's subscription holds its lease (L1 in use)."""
    assert wait_leased(cache.link)
    return cache


def test_values_ttl_and_markers_round_trip(links: list[RedisLink]) -> None:
    cache = RedisCache(links[0])
    cache.set("doc", {"_id": "1", "_source": {"name": "x", "n": [1, 2.5, None]}}, ttl=60)
    assert cache.get("doc") == {"_id": "1", "_source": {"name": "x", "n": [1, 2.5, None]}}
    _value, left = cache.get_with_ttl("doc")
    assert left is not None and 0 < left <= 60
    marker = ReadMarker("abc-1")
    assert cache.compare_and_set("m", None, marker, ttl=10)
    assert cache.get("m") == marker  # a marker compares by value, across processes
    other = RedisCache(links[1])
    assert not other.compare_and_set("m", ReadMarker("abc-2"), "stolen")
    assert other.compare_and_set("m", ReadMarker("abc-1"), "filled")
    assert cache.get("m") == "filled"
    assert cache.get("absent") is None


def test_compare_and_set_is_atomic_across_clients(links: list[RedisLink]) -> None:
    one, two = RedisCache(links[0]), RedisCache(links[1])
    assert one.compare_and_set("k", None, {"v": 1})
    assert not two.compare_and_set("k", None, {"v": 2})  # present: refused
    assert two.compare_and_set("k", {"v": 1}, {"v": 2})  # equal encodings
    assert not one.compare_and_set("k", {"v": 1}, {"v": 3})  # changed since
    assert one.get("k") == {"v": 2}


def test_remove_by_prefix_scans_and_stays_in_its_namespace(
    redis_url: str, links: list[RedisLink]
) -> None:
    cache = RedisCache(links[0])
    elsewhere = RedisLink(redis_url, namespace=links[0].namespace + "-other")
    assert wait_ready(elsewhere)
    try:
        other = RedisCache(elsewhere)
        for i in range(1200):  # more than one SCAN batch
            cache.set(f"alias:{i}", i)
        cache.set("alias*[x]:1", "glob characters are literal")
        cache.set("aliasx:1", "kept")
        other.set("alias:1", "another namespace")
        assert cache.remove_by_prefix("alias:") == 1200
        assert cache.get("alias:5") is None and cache.get("aliasx:1") == "kept"
        assert cache.remove_by_prefix("alias*[") == 1
        assert cache.get("aliasx:1") == "kept"
        assert other.get("alias:1") == "another namespace"
    finally:
        elsewhere.close()


def test_a_change_drops_the_l1_copy_of_the_other_process(links: list[RedisLink]) -> None:
    one, two = ready(HybridCache(links[0])), ready(HybridCache(links[1]))
    docs_one, docs_two = DocumentCache(one), DocumentCache(two)
    _, marker = docs_one.lookup("a", "1")
    assert docs_one.fill("a", "1", {"_id": "1", "v": 1}, marker, 60)
    assert docs_two.lookup("a", "1") == ({"_id": "1", "v": 1}, None)  # from Redis, kept in L1
    hits = two.l1_stats.hits
    assert docs_two.lookup("a", "1") == ({"_id": "1", "v": 1}, None)
    assert two.l1_stats.hits == hits + 1  # served by L1
    docs_one.invalidate("a", ["1"])  # returns after process two dropped its copy
    assert len(two) == 0
    cached, _ = docs_two.lookup("a", "1")
    assert cached is None
    two.set("custom", [1])
    assert one.get("custom") == [1]
    one.set("custom", [2])
    assert two.get("custom") == [2]
    one.remove_by_prefix("cust")
    assert two.get("custom") is None


def test_the_soft_deleted_list_is_shared(links: list[RedisLink]) -> None:
    one, two = DocumentCache(HybridCache(links[0])), DocumentCache(HybridCache(links[1]))
    one.remember_deleted("alias", ["x"])
    two.remember_deleted("alias", ["y"])
    assert one.recently_deleted("alias") == ["x", "y"] == two.recently_deleted("alias")
    two.forget_deleted("alias", ["x"])
    assert one.recently_deleted("alias") == ["y"]


def test_l1_is_not_used_without_the_subscription(links: list[RedisLink]) -> None:
    cache = ready(HybridCache(links[0]))
    cache.set("k", 1)
    assert cache.get("k") == 1 and cache.get("k") == 1
    assert cache.l1_stats.hits == 1
    links[0]._subscribed = False  # as when the subscription breaks
    assert cache.get("k") == 1
    assert cache.l1_stats.hits == 1  # read from Redis, not from L1


def test_redis_down_reads_miss_writes_go_on_one_warning_then_flush(
    caplog: pytest.LogCaptureFixture, namespace: str
) -> None:
    with RedisServer() as server:
        link = RedisLink(server.url, namespace=namespace, retry_max=0.2)
        other_link = RedisLink(server.url, namespace=namespace)
        try:
            cache, other = ready(HybridCache(link)), RedisCache(other_link)
            assert wait_ready(link) and wait_ready(other_link)
            cache.set("k", "old")
            assert other.get("k") == "old"
            server.kill()
            with caplog.at_level(logging.WARNING, logger="esmapper.redis"):
                for _ in range(20):
                    assert cache.get("k") is None  # bypassed: a miss, no error
                    cache.remove("k")  # never raises
                    cache.set("k2", "v")
            warnings = [r for r in caplog.records if "unreachable" in r.getMessage()]
            assert len(warnings) == 1
            assert not link.lease_valid()
            server.restart()
            other.set("k", "stale, as if restored")  # an entry this process failed to remove
            assert wait_ready(link)
            assert cache.get("k") is None  # flushed before anything was served
        finally:
            link.close()
            other_link.close()


def test_the_l1_hit_path_serves_only_what_l1_serves(links: list[RedisLink]) -> None:
    """``HybridCache.hits`` (a cached get's hit path): the L1 copy while the lease holds,
    counted as ``get`` counts an L1 hit; nothing (and nothing counted) once another
    process's change dropped it, or without the subscription: ``get`` reads Redis."""
    one, two = ready(HybridCache(links[0])), ready(HybridCache(links[1]))
    hit = two.hits()
    assert hit is not None and hit("k") is None
    assert (two.stats.hits, two.stats.misses, two.l1_stats.misses) == (0, 0, 0)
    one.set("k", {"v": 1})
    assert two.get("k") == {"v": 1}  # from Redis, kept in L1
    assert hit("k") == {"v": 1} and (two.stats.hits, two.l1_stats.hits) == (2, 1)
    one.set("k", {"v": 2})  # returns after process two dropped its copy
    assert hit("k") is None
    assert two.get("k") == {"v": 2} and hit("k") == {"v": 2}
    links[1]._subscribed = False  # as when the subscription breaks
    assert hit("k") is None and two.l1_stats.hits == 2
