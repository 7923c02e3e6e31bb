"""With the default settings a write batch (``repo.add``, a session flush, through bulk
threads too) runs with the collector's full passes deferred and puts the threshold back
after; ``Mapper(pause_gc=True)`` switches the collector off for the batch instead (see
esmapper._gcpause)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

import esmapper as em
from esmapper import _gcpause, signals
from esmapper._gcpause import DEFERRED
from tests.integration.conftest import MakeMapper


class Crate(em.Document):
    class Index:
        name = "gc_crates"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012

    label: str = em.field(em.Keyword(), default="")


@pytest.fixture
def seen() -> Iterator[list[tuple[bool, int]]]:
    """``(collector on, generation-2 threshold)`` as the adding and added receivers saw
    them (both run inside the write batch)."""
    states: list[tuple[bool, int]] = []

    def spy(sender: Any, **kwargs: Any) -> None:
        states.append((gc.isenabled(), gc.get_threshold()[2]))

    with (
        signals.documents_adding.connected_to(spy, sender=Crate),
        signals.documents_added.connected_to(spy, sender=Crate),
    ):
        yield states


@pytest.fixture
def collector() -> Iterator[tuple[int, int, int]]:
    was = gc.get_threshold()
    assert gc.isenabled()
    yield was
    _gcpause.enable(False)  # pause_gc is process-wide: not for the next test
    assert gc.isenabled()
    assert gc.get_threshold() == was


def test_repo_add_defers_full_passes_for_the_batch(
    make_mapper: MakeMapper, seen: list[tuple[bool, int]], collector: tuple[int, int, int]
) -> None:
    repo = make_mapper(Crate, configure=True).repository(Crate)
    repo.add([Crate(id=str(i), label="a") for i in range(3)])
    assert seen == [(True, DEFERRED), (True, DEFERRED)]
    assert gc.get_threshold() == collector


def test_a_flush_through_bulk_threads_defers_full_passes(
    make_mapper: MakeMapper, seen: list[tuple[bool, int]], collector: tuple[int, int, int]
) -> None:
    mapper = make_mapper(Crate, configure=True, bulk_concurrency=3, bulk_chunk_size=2)
    with mapper.session() as session:
        session.add_all([Crate(id=str(i)) for i in range(7)])  # 4 chunks, 3 threads
        session.flush()
        assert seen == [(True, DEFERRED), (True, DEFERRED)]
    assert gc.get_threshold() == collector
    assert len(mapper.repository(Crate).get_many([str(i) for i in range(7)])) == 7


def test_a_failed_write_puts_the_threshold_back(
    make_mapper: MakeMapper, collector: tuple[int, int, int]
) -> None:
    repo = make_mapper(Crate, configure=True).repository(Crate)
    repo.add(Crate(id="dup"))
    with pytest.raises(em.DuplicateDocumentError):
        repo.add(Crate(id="dup"))
    assert gc.get_threshold() == collector


def test_pause_gc_switches_the_collector_off_for_the_batch(
    make_mapper: MakeMapper, seen: list[tuple[bool, int]], collector: tuple[int, int, int]
) -> None:
    repo = make_mapper(Crate, configure=True, pause_gc=True).repository(Crate)
    repo.add([Crate(id="a"), Crate(id="b")])
    assert seen == [(False, collector[2]), (False, collector[2])]
    assert gc.isenabled()
