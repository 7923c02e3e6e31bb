"""Change notifications of join children (:mod:`esmapper._join`) carry their routing:
``EntityChanged.id`` (and a batch's ``ids``) is an ``em.Id`` with the parent id, here and,
through the Redis bus, in another process, whose listener reloads the child by that id in
real time (a plain id would be a near-real-time search on every shard: a child written a
moment ago is not found)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

import esmapper as em
from esmapper.distributed import HybridCache
from tests.integration.test_join import Company, Worker

from .conftest import wait_leased


@pytest.fixture
def two(es_url: str, redis_url: str, index_prefix: str) -> Iterator[list[em.Mapper]]:
    mappers = [
        em.Mapper(es_url, models=[Company, Worker], index_prefix=index_prefix, redis=redis_url)
        for _ in range(2)
    ]
    mappers[0].configure_indexes()
    for m in mappers:
        assert isinstance(m.cache, HybridCache)
        assert wait_leased(m.cache.link)
    yield mappers
    for m in mappers:
        m.close()


def test_a_childs_change_reaches_another_process_with_its_routing(
    two: list[em.Mapper],
) -> None:
    here, there = two
    local: list[em.EntityChanged] = []
    remote: list[em.EntityChanged] = []
    reloaded: list[str | None] = []
    arrived = threading.Event()

    def on_remote(message: em.EntityChanged) -> None:
        if message.origin != "remote":
            return
        remote.append(message)
        if message.id is not None:  # what a user's handler does: reload it, at once
            found = there.repository(Worker).get(message.id)
            reloaded.append(None if found is None else found.email)
        if len(remote) == 3:
            arrived.set()

    # (both mappers live in this process: a listener also sees the other's deliveries)
    here.bus.subscribe(Worker, lambda m: local.append(m) if m.origin == "local" else None)
    there.bus.subscribe(Worker, on_remote)
    acme = here.repository(Company).add(Company(name="acme"))
    workers = here.repository(Worker)
    ann = workers.add(Worker(company_id=acme.id, email="ann@acme"))  # not refreshed
    workers.patch(em.Id(ann.id, routing=acme.id), em.PartialPatch({"email": "ann2@acme"}))
    ann.email = "ann3@acme"
    ann.age = 3
    workers.save(workers.require(em.Id(ann.id, routing=acme.id)))
    assert arrived.wait(10)
    assert [m.id for m in local] == [ann.id] * 3
    assert all(isinstance(m.id, em.Id) and m.id.routing == acme.id for m in local)
    assert all(isinstance(m.id, em.Id) and m.id.routing == acme.id for m in remote)
    assert reloaded[0] is not None and None not in reloaded  # found in real time


def test_a_batch_of_children_carries_each_routing(two: list[em.Mapper]) -> None:
    here, _ = two
    got: list[em.EntityChanged] = []
    here.bus.subscribe(Worker, got.append)
    acme, globex = here.repository(Company).add([Company(name="a"), Company(name="g")])
    workers = here.repository(Worker)
    staff = workers.add([Worker(company_id=acme.id), Worker(company_id=globex.id)])
    workers.remove(staff)
    routings = [getattr(m.id, "routing", None) for m in got if m.origin == "local"]
    assert routings == [acme.id, globex.id, acme.id, globex.id]
    assert here.repository(Company).get(acme.id) is not None
