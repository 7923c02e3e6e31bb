"""Bulk writes sent from several threads (``Mapper(bulk_concurrency=N)`` /
``BulkWriter(concurrency=N)``): the same per-item outcomes as one chunk at a time, against
the test server, with FaultProxy for item 429s, rejected requests and dropped connections."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import signals
from esmapper.bulk import BulkAction, BulkRequestError, BulkWriter
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper


class Crate(em.Document, em.Versioned):
    class Index:
        name = "crates"

    name: str = em.field(em.Keyword(), default="")
    qty: int = em.field(em.Integer(), default=0)


@pytest.fixture
def index(index_prefix: str) -> str:
    return f"{index_prefix}bulkthreads"


def _writer(client: Elasticsearch, **kwargs: Any) -> BulkWriter:
    return BulkWriter(client, sleep=lambda _s: None, **kwargs)


def _docs(index: str, n: int, start: int = 0) -> list[BulkAction]:
    return [BulkAction("index", index, f"d{i}", {"n": i}, ref=i) for i in range(start, start + n)]


def _stored_ids(client: Elasticsearch, index: str) -> set[str]:
    client.indices.refresh(index=index)
    resp = client.search(index=index, size=10_000, source=False)
    return {hit["_id"] for hit in resp["hits"]["hits"]}


class _Threads:
    """Records which threads called the wrapped ``perform_request``."""

    def __init__(self, writer: BulkWriter) -> None:
        self.names: set[str] = set()
        inner = writer._client.perform_request

        def perform_request(*args: Any, **kwargs: Any) -> Any:
            self.names.add(threading.current_thread().name)
            return inner(*args, **kwargs)

        writer._client.perform_request = perform_request  # type: ignore[method-assign]


def test_many_chunks_from_several_threads_give_one_outcome_per_action_in_order(
    es_client: Elasticsearch, index: str
) -> None:
    es_client.index(index=index, id="d7", document={"n": -1}, refresh=True)
    writer = _writer(es_client, chunk_size=10, concurrency=3)
    seen = _Threads(writer)
    actions = [
        BulkAction("create", index, f"d{i}", {"n": i}, ref=i) for i in range(95)
    ]  # 10 chunks, one 409 in the first
    outcomes = writer.write(actions)
    assert [o.action for o in outcomes] == actions
    assert [o.action.ref for o in outcomes] == list(range(95))
    assert len({n for n in seen.names if n.startswith("esmapper-bulk-")}) >= 2
    conflict = outcomes[7]
    assert (conflict.ok, conflict.status, conflict.error_type) == (
        False,
        409,
        "version_conflict_engine_exception",
    )
    assert all(
        o.ok and o.status == 201 and o.seq_no is not None for i, o in enumerate(outcomes) if i != 7
    )
    assert writer.last_stats is not None
    assert (writer.last_stats.chunks, writer.last_stats.requests) == (10, 10)
    assert _stored_ids(es_client, index) == {f"d{i}" for i in range(95)}
    assert es_client.get(index=index, id="d7")["_source"] == {"n": -1}


def test_an_item_429_in_one_chunk_is_retried_while_the_others_are_sent(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    writer = _writer(proxy_client, chunk_size=10, concurrency=4)
    proxy.fail_bulk_items(3, status=429, times=2, skip=1)
    outcomes = writer.write(_docs(index, 80))
    assert len(outcomes) == 80 and all(o.ok for o in outcomes)
    assert [o.id for o in outcomes] == [f"d{i}" for i in range(80)]
    stats = writer.last_stats
    assert stats is not None and stats.retries >= 1 and stats.retried_items >= 3
    assert proxy.count(r"/_bulk$") == stats.requests
    assert _stored_ids(es_client, index) == {f"d{i}" for i in range(80)}


def test_items_still_429_after_the_retries_are_failures_and_the_rest_succeed(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    writer = _writer(proxy_client, chunk_size=10, concurrency=2, max_retries=1)
    proxy.fail_bulk_items(lambda _pos, meta: meta["index"]["_id"] == "d13", times=50)
    outcomes = writer.write(_docs(index, 40))
    failed = [o for o in outcomes if not o.ok]
    assert [(o.id, o.status) for o in failed] == [("d13", 429)]
    assert _stored_ids(es_client, index) == {f"d{i}" for i in range(40)} - {"d13"}
    proxy.clear_faults()


def test_a_rejected_chunk_keeps_the_outcomes_of_the_chunks_sent_with_it(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    es_client.indices.create(index=index)
    writer = _writer(proxy_client, chunk_size=10, concurrency=3)
    proxy.reply_status(400, path=r"/_bulk$", skip=2)
    with pytest.raises(BulkRequestError) as info:
        writer.write(_docs(index, 100))
    err = info.value
    assert err.status == 400 and len(err.ids) == 10
    stored = _stored_ids(es_client, index)
    # every document that was written has its outcome in the error, none is lost
    assert {o.id for o in err.outcomes if o.ok} == stored
    assert all(o.ok for o in err.outcomes)
    assert 20 <= len(stored) < 100 and not stored & set(err.ids)
    assert [o.action.ref for o in err.outcomes] == sorted(o.action.ref for o in err.outcomes)


def test_a_dropped_connection_fails_only_its_chunk(
    es_client: Elasticsearch, proxy: FaultProxy, proxy_client: Elasticsearch, index: str
) -> None:
    writer = _writer(proxy_client, chunk_size=10, concurrency=3)
    proxy.drop_connection(path=r"/_bulk$", skip=1)
    outcomes = writer.write(_docs(index, 60))
    assert len(outcomes) == 60
    lost = [o for o in outcomes if not o.ok]
    assert len(lost) == 10 and {o.status for o in lost} == {0}
    assert {o.error_type for o in lost} == {"connection_error"}
    assert _stored_ids(es_client, index) == {o.id for o in outcomes if o.ok}


def test_two_actions_on_one_document_are_sent_in_order(
    es_client: Elasticsearch, index: str
) -> None:
    writer = _writer(es_client, chunk_size=5, concurrency=4)
    seen = _Threads(writer)
    actions = [*_docs(index, 40), BulkAction("delete", index, "d3"), *_docs(index, 9, start=40)]
    outcomes = writer.write(actions)
    assert all(o.ok for o in outcomes)
    assert outcomes[40].result == "deleted"
    assert not any(n.startswith("esmapper-bulk-") for n in seen.names)
    assert _stored_ids(es_client, index) == {f"d{i}" for i in range(49)} - {"d3"}


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "4", None])
def test_a_bad_concurrency_is_refused_before_anything_is_sent(
    es_url: str, bad: Any, index_prefix: str
) -> None:
    with pytest.raises(ValueError, match=r"bulk_concurrency=.* must be an integer >= 1"):
        em.Mapper(es_url, models=[Crate], index_prefix=index_prefix, bulk_concurrency=bad)
    with Elasticsearch(es_url) as client, pytest.raises(ValueError, match="bulk_concurrency"):
        BulkWriter(client, concurrency=bad)


@pytest.fixture
def mapper(make_mapper: MakeMapper) -> em.Mapper:
    return make_mapper(
        Crate, configure=True, bulk_chunk_size=15, bulk_concurrency=3, sleep=lambda _s: None
    )


def test_repository_add_and_save_through_threads_keep_versions_signals_and_conflicts(
    mapper: em.Mapper,
) -> None:
    repo = mapper.repository(Crate)
    added: list[str] = []

    def on_added(sender: Any, documents: Any = None, **_: Any) -> None:
        added.extend(d.value.id for d in documents)

    crates = [Crate(name=f"c{i}", qty=i) for i in range(100)]
    with signals.documents_added.connected_to(on_added, sender=Crate):
        repo.add(crates, consistency="immediate")
    assert sorted(added) == sorted(c.id for c in crates) and len(set(added)) == 100
    assert all(c.version for c in crates)
    assert repo.count() == 100

    loaded = repo.get_many([c.id for c in crates])
    stale = repo.get(crates[42].id)
    assert stale is not None
    stale.qty = -1
    repo.save(stale)  # someone else saved crate 42 meanwhile
    for c in loaded:
        c.qty += 1000
    with pytest.raises(em.VersionConflictError) as info:
        repo.save(loaded, consistency="immediate")
    assert [f.id for f in info.value.failures] == [crates[42].id]
    assert len(info.value.succeeded) == 99
    after = {c.id: c.qty for c in repo.get_many([c.id for c in crates])}
    assert after[crates[42].id] == -1
    assert sorted(q for i, q in after.items() if i != crates[42].id) == sorted(
        c.qty + 1000 for c in crates if c.id != crates[42].id
    )


def test_a_session_flush_through_threads_writes_every_document(mapper: em.Mapper) -> None:
    repo = mapper.repository(Crate)
    crates = [Crate(name=f"s{i}", qty=i) for i in range(70)]
    with mapper.session(consistency="immediate") as session:
        session.add_all(crates)
        session.flush()
        assert not session.new and not session.dirty
    assert all(c.version for c in crates)
    assert repo.count() == 70
