"""Review of ``bulk_concurrency``: an interrupt while the threads send, and a session flush
of adds, saves and removals through threads while some chunks lose their answer (applied
or not): every item settled once, versions and cache right, nothing lost or resurrected."""

from __future__ import annotations

import datetime as dt
import signal
import threading
from collections import Counter
from types import FrameType
from typing import Any

import pytest
from elasticsearch import Elasticsearch

import esmapper as em
from esmapper import signals
from esmapper.bulk import BulkAction, BulkWriter
from esmapper.testing.faults import FaultProxy
from tests.integration.conftest import MakeMapper


class Box(em.Document, em.Versioned):
    class Index:
        name = "review_boxes"
        settings = {"number_of_shards": 1, "number_of_replicas": 0}  # noqa: RUF012
        cache = dt.timedelta(minutes=5)

    name: str = em.field(em.Keyword(), default="")
    qty: int = em.field(em.Integer(), default=0)


def _bulk_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("esmapper-bulk-")]


def _stored(client: Elasticsearch, index: str) -> dict[str, dict[str, Any]]:
    client.indices.refresh(index=index)
    hits = client.search(index=index, size=10_000, seq_no_primary_term=True)["hits"]["hits"]
    return {h["_id"]: h for h in hits}


def test_an_interrupt_while_threads_send_starts_no_further_chunk(
    es_client: Elasticsearch, proxy: FaultProxy, index_prefix: str
) -> None:
    """Ctrl-C while the chunks are in flight: write() raises KeyboardInterrupt, and no
    chunk is sent after that (the ones in flight are waited for, not abandoned)."""
    index = f"{index_prefix}review_interrupt"
    es_client.indices.create(index=index)
    first = proxy.hold(path=r"/_bulk$")
    second = proxy.hold(path=r"/_bulk$")
    interrupted = threading.Event()

    def on_sigint(_signum: int, _frame: FrameType | None) -> None:
        interrupted.set()
        raise KeyboardInterrupt

    def interrupt_then_release() -> None:
        if first.wait_arrived(60) and second.wait_arrived(60):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            interrupted.wait(60)
        first.forward()
        second.forward()

    previous = signal.signal(signal.SIGINT, on_sigint)
    helper = threading.Thread(target=interrupt_then_release)
    try:
        with Elasticsearch(proxy.url, request_timeout=60) as client:
            writer = BulkWriter(client, chunk_size=10, concurrency=2, sleep=lambda _s: None)
            actions = [BulkAction("index", index, f"d{i}", {"n": i}) for i in range(100)]
            helper.start()
            with pytest.raises(KeyboardInterrupt):
                writer.write(actions)
            sent_before_return = proxy.count(r"/_bulk$")
            for t in _bulk_threads():  # whatever is left of them: let it finish
                t.join(60)
    finally:
        signal.signal(signal.SIGINT, previous)
        helper.join(60)
    assert sent_before_return == 2
    stored = _stored(es_client, index)
    assert len(stored) == 20  # the two chunks in flight, and not one chunk more
    assert proxy.count(r"/_bulk$") == 2


@pytest.fixture
def mapper(make_mapper: MakeMapper, proxy: FaultProxy) -> em.Mapper:
    return make_mapper(
        Box,
        url=proxy.url,
        configure=True,
        cache=em.InMemoryCache(),
        bulk_chunk_size=5,
        bulk_concurrency=3,
        sleep=lambda _s: None,
    )


def test_a_session_flush_through_threads_with_lost_answers_settles_each_item_once(
    mapper: em.Mapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    repo = mapper.repository(Box)
    boxes = [Box(name=f"b{i}", qty=i) for i in range(30)]
    repo.add(boxes, consistency="immediate")
    for b in boxes:  # cached: a stale cache would show after the flush
        assert repo.get(b.id, cache=True) is not None
    fired: Counter[tuple[str, str]] = Counter()

    def recorder(kind: str) -> Any:
        def receive(_sender: Any, documents: Any = None, **_: Any) -> None:
            for d in documents:
                fired[kind, d.value.id] += 1

        return receive

    receivers = {
        "added": recorder("added"),
        "saved": recorder("saved"),
        "removed": recorder("removed"),
    }
    with (
        signals.documents_added.connected_to(receivers["added"], sender=Box),
        signals.documents_saved.connected_to(receivers["saved"], sender=Box),
        signals.documents_removed.connected_to(receivers["removed"], sender=Box),
        mapper.session(consistency="immediate") as session,
    ):
        loaded = session.get_many(Box, [b.id for b in boxes])
        assert len(loaded) == 30
        for doc in loaded[:20]:
            doc.qty += 1000
        for doc in loaded[20:26]:
            session.remove(doc)
        fresh = [Box(name=f"n{i}", qty=-i) for i in range(9)]
        session.add_all(fresh)
        # 35 writes, 7 chunks from 3 threads: one answer lost after the server applied
        # it, one request lost before it reached the server
        proxy.drop_connection(path=r"/_bulk$", after_forwarding=True, skip=1)
        proxy.drop_connection(path=r"/_bulk$", skip=2)
        session.flush()
        assert not session.new and not session.deleted and not session.dirty
    assert proxy.pending_faults == 0
    stored = _stored(es_client, mapper.spec(Box).read_target)
    expected = {d.id: d.qty for d in loaded[:20]} | {d.id: d.qty for d in loaded[26:]}
    expected |= {d.id: d.qty for d in fresh}
    got = {i: h["_source"]["qty"] for i, h in stored.items()}
    lost = set(expected) - set(got)
    resurrected = set(got) - set(expected)
    stale = {i for i in expected if i in got and got[i] != expected[i]}
    assert (lost, resurrected, stale) == (set(), set(), set())
    # versions in the session are what the server holds
    for doc in [*loaded[:20], *fresh]:
        hit = stored[doc.id]
        assert doc.version == f"{hit['_primary_term']}:{hit['_seq_no']}", doc.id
    # one signal per item, never two
    assert {k for k, n in fired.items() if n != 1} == set()
    assert sorted(i for (kind, i) in fired if kind == "saved") == sorted(d.id for d in loaded[:20])
    assert sorted(i for (kind, i) in fired if kind == "removed") == sorted(
        d.id for d in loaded[20:26]
    )
    assert sorted(i for (kind, i) in fired if kind == "added") == sorted(d.id for d in fresh)
    # the cache shows what is stored
    for doc in loaded:
        cached = repo.get(doc.id, cache=True)
        if doc.id in expected:
            assert cached is not None and cached.qty == expected[doc.id]
            assert cached.version == doc.version
        else:
            assert cached is None


def test_remove_then_add_of_one_id_in_a_flush_with_the_delete_answer_lost(
    mapper: em.Mapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    """Two writes to one id in one flush (the removal first, then the add replacing it) go
    one chunk after the other even with threads; the delete's answer is lost after the
    server applied it, and the add that followed succeeded: both are confirmed (the
    create could only succeed on a removed document), nothing is resent, nothing lost."""
    repo = mapper.repository(Box)
    others = repo.add([Box(name=f"o{i}", qty=i) for i in range(12)], consistency="immediate")
    old = repo.add(Box(name="old", qty=1), consistency="immediate")
    with mapper.session(consistency="immediate") as session:
        loaded = session.get(Box, old.id)
        assert loaded is not None
        session.remove(loaded)
        for doc in session.get_many(Box, [o.id for o in others]):
            doc.qty += 100
        replacement = Box(id=old.id, name="new", qty=2)
        session.add(replacement)
        # the delete is the first item of the first chunk
        proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
        session.flush()
        assert not session.new and not session.deleted and not session.dirty
    assert proxy.pending_faults == 0
    stored = _stored(es_client, mapper.spec(Box).read_target)
    assert stored[old.id]["_source"]["name"] == "new"
    hit = stored[old.id]
    assert replacement.version == f"{hit['_primary_term']}:{hit['_seq_no']}"
    assert {i: h["_source"]["qty"] for i, h in stored.items() if i != old.id} == {
        o.id: o.qty + 100 for o in others
    }
    cached = repo.get(old.id, cache=True)
    assert cached is not None and cached.name == "new"


def test_remove_by_a_handmade_object_then_add_of_its_id_never_deletes_the_replacement(
    mapper: em.Mapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    """The removal names a document this process never read (no version known): its answer
    is lost after the server applied it, the add of the same id that followed succeeded.
    Resending the delete on what is stored now would delete the replacement."""
    repo = mapper.repository(Box)
    old = repo.add(Box(name="old", qty=1), consistency="immediate")
    with mapper.session(consistency="immediate") as session:
        session.remove(Box(id=old.id))
        replacement = Box(id=old.id, name="new", qty=2)
        session.add(replacement)
        proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
        session.flush()
    assert proxy.pending_faults == 0
    stored = _stored(es_client, mapper.spec(Box).read_target)
    assert old.id in stored, "the replacement was deleted"
    assert stored[old.id]["_source"]["name"] == "new"
    hit = stored[old.id]
    assert replacement.version == f"{hit['_primary_term']}:{hit['_seq_no']}"


def test_a_rejected_chunk_beside_a_chunk_whose_answer_was_lost_confirms_exactly_what_is_stored(
    mapper: em.Mapper, proxy: FaultProxy, es_client: Elasticsearch
) -> None:
    """Threads send 8 chunks; one loses its answer after the server applied it, a later
    one is rejected (400). The error is raised after the known outcomes were applied: the
    documents confirmed (a version, one signal) are exactly the stored ones."""
    repo = mapper.repository(Box)
    repo.add(Box(name="first"), consistency="immediate")  # the index exists, ensured
    added: Counter[str] = Counter()

    def on_added(_sender: Any, documents: Any = None, **_: Any) -> None:
        for d in documents:
            added[d.value.id] += 1

    boxes = [Box(name=f"b{i}", qty=i) for i in range(40)]
    proxy.drop_connection(path=r"/_bulk$", after_forwarding=True)
    proxy.reply_status(400, path=r"/_bulk$", skip=2)
    with (
        signals.documents_added.connected_to(on_added, sender=Box),
        pytest.raises(em.errors.BulkRequestError) as info,
    ):
        repo.add(boxes, consistency="immediate")
    assert info.value.status == 400
    stored = _stored(es_client, mapper.spec(Box).read_target)
    confirmed = {b.id for b in boxes if b.version is not None}
    written = set(stored) - {h for h, v in stored.items() if v["_source"]["name"] == "first"}
    assert written == confirmed  # nothing stored unconfirmed, nothing confirmed unstored
    assert 0 < len(confirmed) < 40
    assert set(added) == confirmed and set(added.values()) == {1}
    for b in boxes:
        if b.id in stored:
            hit = stored[b.id]
            assert b.version == f"{hit['_primary_term']}:{hit['_seq_no']}"
