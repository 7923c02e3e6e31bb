"""Fixtures shared by the integration tests: mappers on the test's own index prefix (so tests
stay independent), a fault proxy in front of the test server and a client through it, and a
settable clock. An area's conftest (or a test module) keeps only what is its own."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper.testing.cluster import ClusterProxy
from esmapper.testing.faults import FaultProxy

__all__ = ["FakeClock", "MakeMapper", "ManualScheduler"]

MakeMapper = Callable[..., em.Mapper]


class FakeClock:
    """A settable clock for ``Mapper(clock=...)``."""

    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


class ManualScheduler:
    """A :data:`esmapper.bus.Scheduler` the test runs by hand: what is due, when it says."""

    def __init__(self) -> None:
        self.waiting: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, seconds: float, deliver: Callable[[], None]) -> None:
        self.waiting.append((seconds, deliver))

    def run_all(self) -> None:
        waiting, self.waiting = self.waiting, []
        for _seconds, deliver in waiting:
            deliver()


@pytest.fixture
def make_mapper(es_url: str, index_prefix: str) -> Iterator[MakeMapper]:
    """``make_mapper(*models, url=None, configure=False, **mapper_options)``: a Mapper on
    this test's index prefix (on ``url``, e.g. a FaultProxy's, instead of the test
    server's), its indexes configured first when ``configure``; all closed after the test."""
    made: list[em.Mapper] = []

    def make(
        *models: type, url: str | None = None, configure: bool = False, **options: Any
    ) -> em.Mapper:
        mapper = em.Mapper(url or es_url, models=models, index_prefix=index_prefix, **options)
        made.append(mapper)
        if configure:
            mapper.configure_indexes()
        return mapper

    yield make
    for mapper in made:
        mapper.close()


@pytest.fixture
def proxy(es_url: str) -> Iterator[FaultProxy]:
    """A FaultProxy in front of the test server (stopped after the test, or after 300 s)."""
    with FaultProxy(es_url, lifetime=300) as running:
        yield running


@pytest.fixture
def cluster(es_url: str) -> Iterator[ClusterProxy]:
    """A ClusterProxy in front of the test server: it answers as a real Elasticsearch
    cluster where the local server differs (stopped after the test, or after 300 s)."""
    with ClusterProxy(es_url, lifetime=300) as running:
        yield running


@pytest.fixture
def proxy_client(proxy: FaultProxy) -> Iterator[Elasticsearch]:
    """An Elasticsearch client that talks through :func:`proxy`."""
    client = Elasticsearch(proxy.url, request_timeout=30)
    try:
        yield client
    finally:
        client.close()
