"""Mapper(redis=...) and ESMAPPER_REDIS_URL, two mappers standing for two processes (for the
cache; signals are per process, so notifications are tested with real processes in
test_processes.py), and the document-cache rules of tests/integration/session/test_cache.py
run again on Redis."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

import esmapper as em
from esmapper.cache import InMemoryCache
from esmapper.distributed import HybridCache, RedisMessageBus
from esmapper.testing import RedisServer
from tests.integration.session.test_cache import *  # noqa: F403  (the same rules, on Redis)
from tests.integration.session.test_cache import Cached

from .conftest import wait_leased, wait_ready
from .worker import Item


@pytest.fixture  # type: ignore[no-redef]
def cache(redis_url: str) -> Iterator[HybridCache]:  # replaces the in-process cache
    hybrid = HybridCache(redis_url, namespace=f"t-{uuid.uuid4().hex[:8]}")
    assert wait_ready(hybrid.link)
    yield hybrid
    hybrid.close()


def test_redis_wires_the_hybrid_cache_and_the_bus(
    es_url: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with em.Mapper(es_url, models=[Item], redis=redis_url, index_prefix="p-") as m:
        assert isinstance(m.cache, HybridCache) and isinstance(m.bus, RedisMessageBus)
        assert m.cache.link is m.bus.link and m.cache.link.namespace == "esmapper:p-"
    monkeypatch.setenv("ESMAPPER_REDIS_URL", redis_url)
    with em.Mapper(es_url, models=[Item]) as m:
        assert isinstance(m.cache, HybridCache) and isinstance(m.bus, RedisMessageBus)
    with em.Mapper(es_url, models=[Item], redis="") as m:
        assert isinstance(m.cache, InMemoryCache) and not isinstance(m.bus, RedisMessageBus)
    explicit = InMemoryCache()
    with em.Mapper(es_url, models=[Item], cache=explicit) as m:
        assert m.cache is explicit and isinstance(m.bus, RedisMessageBus)


@pytest.fixture
def two(es_url: str, redis_url: str, index_prefix: str) -> Iterator[list[em.Mapper]]:
    mappers = [
        em.Mapper(es_url, models=[Cached], index_prefix=index_prefix, redis=redis_url)
        for _ in range(2)
    ]
    mappers[0].configure_indexes()
    for m in mappers:
        assert isinstance(m.cache, HybridCache)
        assert wait_leased(m.cache.link)
    yield mappers
    for m in mappers:
        m.close()


def test_a_save_through_one_mapper_is_read_through_the_other(two: list[em.Mapper]) -> None:
    a, b = (m.repository(Cached) for m in two)
    doc = a.add(Cached(id="x", name="v0"))
    for i in range(1, 20):
        assert b.get("x").name == f"v{i - 1}"
        assert b.get("x").name == f"v{i - 1}"  # cached in b
        doc.name = f"v{i}"
        a.save(doc)
    assert b.get("x").name == "v19"
    b.remove("x")
    assert a.get("x") is None


def test_a_hung_redis_does_not_hang_writes(es_url: str, index_prefix: str) -> None:
    """Redis stopped (SIGSTOP: connections accepted, nothing answered): writes and reads go
    on, each request waiting at most the socket timeout; after SIGCONT nothing is stale."""
    import os
    import signal

    with RedisServer() as server:
        options = {"socket_timeout": 0.1, "retry_max": 0.2}
        with em.Mapper(
            es_url, models=[Cached], index_prefix=index_prefix, redis=server.url,
            redis_options=options,
        ) as m:  # fmt: skip
            m.configure_indexes()
            repo = m.repository(Cached)
            doc = repo.add(Cached(id="h", name="v0"))
            assert repo.get("h").name == "v0" and repo.get("h").name == "v0"  # cached
            assert server.pid is not None
            os.kill(server.pid, signal.SIGSTOP)
            try:
                started = time.monotonic()
                for i in range(1, 6):
                    doc.name = f"v{i}"
                    repo.save(doc)  # returns: bounded by the timeouts, not by Redis
                    assert repo.get("h").name == f"v{i}"
                print(f"\n5 saves and reads with Redis stopped: {time.monotonic() - started:.2f} s")
                assert isinstance(m.cache, HybridCache)
                assert not m.cache.link.available()
            finally:
                os.kill(server.pid, signal.SIGCONT)
            doc.name = "after"
            repo.save(doc)
            for _ in range(3):
                assert repo.get("h").name == "after"
