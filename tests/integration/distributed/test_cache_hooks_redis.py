"""Keys of one's own on a shared Redis (issue 30, item 3): two mappers standing for two
processes, each with the repository subclass that caches people by email; a change made
through one drops the keys the other reads (the hook's removals go through the
``HybridCache``: Redis, and every process's L1 by the invalidation channel)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper import signals
from esmapper.distributed import HybridCache
from tests.integration.repository.cache_hooks import Person, PersonRepository, email_key

from .conftest import wait_leased, wait_ready


@pytest.fixture
def two(es_url: str, redis_url: str, index_prefix: str) -> Iterator[list[PersonRepository]]:
    mappers = [
        em.Mapper(es_url, models=[Person], index_prefix=index_prefix, redis=redis_url)
        for _ in range(2)
    ]
    mappers[0].configure_indexes()
    repos = []
    for m in mappers:
        m.register(Person, repository=PersonRepository)
        assert isinstance(m.cache, HybridCache)
        # synchronised first: a link's first use of the namespace flushes it
        assert wait_ready(m.cache.link) and wait_leased(m.cache.link)
        repo = m.repository(Person)
        assert isinstance(repo, PersonRepository)
        repos.append(repo)
    yield repos
    for m in mappers:
        m.close()


@pytest.fixture
def searches() -> Iterator[list[Any]]:
    sent: list[Any] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        sent.append(kwargs)

    signals.before_query.connect(receiver, sender=Person)
    yield sent
    signals.before_query.disconnect(receiver, sender=Person)


def _calm(repos: list[PersonRepository]) -> bool:
    """Whether no link had an outage or a change it could not deliver (under load a
    Redis call may time out: then reads bypass the cache and the namespace is flushed,
    so what was cached may be gone; what is stale never stays)."""
    links = [r.mapper.cache.link for r in repos if isinstance(r.mapper.cache, HybridCache)]
    return all(link._dirty == 0 and link.outage_started() is None for link in links)


def test_a_key_cached_by_one_is_read_by_the_other(
    two: list[PersonRepository], searches: list[Any]
) -> None:
    a, b = two
    ann = a.add(Person(id="ann", name="Ann", email="ann@example.com"), consistency="immediate")
    # (what a's add_to_cache hook stores after a cached get, stored directly: a get's
    # fill may be refused, e.g. when the add's removal is announced again)
    a.add_to_cache_with_keys({email_key(ann.email): ann})  # in Redis
    found = b.get_by_email("ann@example.com")
    assert found is not None and found.name == "Ann"
    if _calm(two):
        assert searches == []  # read from the key


def test_a_change_through_one_drops_the_keys_the_other_read(
    two: list[PersonRepository], searches: list[Any]
) -> None:
    a, b = two
    a.add(Person(id="ann", name="Ann", email="ann@example.com"), consistency="immediate")
    assert b.get_by_email("ann@example.com") is not None  # b caches the page (a search)
    assert b.get_by_email("ann@example.com") is not None  # served: in b's L1
    if _calm(two):
        assert len(searches) == 1
    loaded = a.get("ann")
    assert loaded is not None
    loaded.email = "ann@new.example.com"
    a.save(loaded, consistency="immediate")  # a's hook drops both emails' keys
    assert b.get_by_email("ann@example.com") is None  # never the page b kept
    moved = b.get_by_email("ann@new.example.com")
    assert moved is not None and moved.id == "ann"


def test_remove_all_through_one_runs_the_query_hook_for_both(
    two: list[PersonRepository], searches: list[Any]
) -> None:
    a, b = two
    ann = a.add(Person(id="ann", name="Ann", email="ann@example.com", dept="eng"))
    a.add_to_cache_with_keys({"list:dept:eng": [ann]})
    found = b.find("dept:eng", cache_key="list:dept:eng", consistency="immediate")
    assert [p.id for p in found] == ["ann"]
    if _calm(two):
        assert searches == []
    a.remove_all("dept:eng", consistency="immediate")
    assert len(b.find("dept:eng", cache_key="list:dept:eng")) == 0  # never the kept page
